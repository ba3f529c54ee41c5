"""kerneltui's settings inside a KernelBench problem file: comment lines starting ``# kerneltui:``.

KernelBench problems carry no metadata; kerneltui reads its own from comments, so the file stays
a valid KernelBench problem. The text after the marker, all such lines together, is TOML::

    # kerneltui: backend = "cuda"
    # kerneltui: atol = 1e-3
    # kerneltui: tests = [{batch_size = 16}, {batch_size = 33}]

Keys: ``backend``, ``atol``, ``rtol``, ``seeds``, ``inplace``, ``allow``, ``allow_ops`` (torch operators
the kernel may leave to torch, e.g. ``["conv2d"]``), ``timeouts`` (a table),
``ranking_by``, ``tests`` and ``benchmarks`` (module constants per case). Every value is
type-checked with the line of the file it is on.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from kerneltui.core.task_error import TaskError
from kerneltui.core.task_loaders.fields import KeyPath, SettingsFile
from kerneltui.settings.toml_lines import key_lines

MARKER = re.compile(r"^\s*#\s*kerneltui:\s?(.*)$")
KNOWN = ("backend", "atol", "rtol", "seeds", "inplace", "allow", "allow_ops", "timeouts", "ranking_by", "tests", "benchmarks")


def read_header(problem: Path, text: str) -> tuple[dict[str, Any], SettingsFile]:
    """The header's settings and where each is written in the problem file."""
    body: list[str] = []
    file_lines: list[int] = []
    for number, line in enumerate(text.splitlines(), 1):
        m = MARKER.match(line)
        if m:
            body.append(m.group(1))
            file_lines.append(number)
    if not body:
        return {}, SettingsFile(problem)
    joined = "\n".join(body)
    try:
        data = tomllib.loads(joined)
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        line_no = file_lines[min(int(at.group(1)), len(file_lines)) - 1] if at else file_lines[0]
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise TaskError(f"malformed `# kerneltui:` settings (TOML after the marker): {msg}", problem, line_no) from exc
    lines: dict[KeyPath, int] = {path: file_lines[n - 1] for path, n in key_lines(joined).items()}
    src = SettingsFile(problem, lines)
    unknown = sorted(set(data) - set(KNOWN))
    if unknown:
        raise src.error((unknown[0],), f"unknown `# kerneltui:` setting {unknown[0]!r}; known: {', '.join(KNOWN)}")
    return data, src
