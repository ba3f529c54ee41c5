"""A verification run as the model reads it: short, located, every failure once.

The rungs' own text is written for the person (the rung rows, the details pane). The model gets a
condensed form built from the same results: one line per rung, rungs skipped because an earlier one
failed folded into one line, then the failed rung's error at the candidate's own file and line with
a few lines of that file around it, the task's frames of the traceback, and for correctness each
failing case once (the hidden seed is never named: only whether it fails too). Paths are relative
to the task; kerneltui's and libraries' install paths are cut down to their package.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.rungs.rung_metrics import correctness_metrics
from kerneltui.core.worker.contract.replies import DeviceInfo

DETAIL_LINES = 24
EXCERPT_CONTEXT = 2  # lines shown on each side of the failing line
MAX_FAILING_CASES = 6
# "n=1000 seed=1017: out: …" and "n=1000 (hidden seed): out: …", as the correctness rung lists them.
_CASE_LINE = re.compile(r"^(?P<case>.*?)(?P<seed> seed=-?\d+| \(hidden seed\)): (?P<reason>.*)$")
_PACKAGES = re.compile(r"/(?:site|dist)-packages/")
_PATH_STOP = frozenset(" \t\n\r\"':")


def _strip_install_paths(text: str) -> str:
    """``/usr/lib/python3/site-packages/torch/x.py`` becomes ``torch/x.py``. Linear in the text: it
    finds the packages folder first and walks back to the path's start (a regular expression with
    repeated path segments backtracks exponentially on long slash-rich text, such as an environment
    a kernel printed)."""
    out: list[str] = []
    last = 0
    for m in _PACKAGES.finditer(text):
        start = m.start()
        while start > last and text[start - 1] not in _PATH_STOP:
            start -= 1
        out.append(text[last:start])
        last = m.end()
    out.append(text[last:])
    return "".join(out)

SourceReader = Callable[[str], str | None]


@dataclass(frozen=True)
class PathScrub:
    """Absolute folders shown relative in what the model reads: the task's as bare relative paths,
    context/ as ``context/``, and installed packages from their package folder on."""

    task_root: str
    context_root: str = ""

    def __call__(self, text: str) -> str:
        pairs = [(self.task_root, ""), (self.context_root, "context/")]
        for root, shown in sorted(pairs, key=lambda p: len(p[0]), reverse=True):
            if root:
                text = text.replace(root.rstrip("/") + "/", shown)
                text = text.replace(root.rstrip("/"), shown.rstrip("/") or ".")
        return _strip_install_paths(text)


def device_line(device: DeviceInfo) -> str:
    if not device:
        return "unknown device"
    if device.get("gpu"):
        return f"{device.get('name')} ({device.get('arch')})"
    return "no GPU (CPU" + (", Triton interpreter)" if device.get("interpreter") else ")")


def run_feedback(report: RunReport, label: str, read_source: SourceReader, note_no_gpu: bool = True) -> str:
    """The run for the model. ``read_source(file)`` gives the text of a task file as the run saw it
    (the candidate's text for the kernel file); ``note_no_gpu`` adds the line saying CPU times are
    not performance (once per conversation is enough)."""
    lines = [f"{label}: {'PASS' if report.ok else 'FAIL'} on {device_line(report.device)} (source {report.source_hash})"]
    failed = next((r for r in report.results if r.status == "fail"), None)
    skipped_after: list[str] = []
    for r in report.results:
        if r.status == "skip" and failed is not None and r.summary.endswith(("failed", "was skipped")):
            skipped_after.append(r.name)
            continue
        lines.append(_rung_line(r))
    if skipped_after:
        lines.append(f"[{', '.join(skipped_after)}] skipped: {failed.name if failed else 'an earlier rung'} failed")
    if failed is not None:
        lines += _failure_lines(failed, read_source)
    if note_no_gpu and not report.device.get("gpu"):
        lines.append("note: no GPU here, so no benchmark numbers exist (CPU times are not performance)")
    return "\n".join(lines)


def _rung_line(r: RungResult) -> str:
    if r.status == "fail" and r.name == "correctness" and isinstance(checks := correctness_metrics(r).get("checks"), int):
        return f"[correctness] FAILED  {correctness_metrics(r).get('passed', 0)}/{checks} checks passed"
    return r.line()


def _failure_lines(failed: RungResult, read_source: SourceReader) -> list[str]:
    out: list[str] = []
    if failed.location is not None:
        excerpt = source_excerpt(read_source(failed.location.file), failed.location.line)
        if excerpt:
            out.append(f"{failed.location.file}:{failed.location.line} (the failing line):")
            out += excerpt
    details = failed.details.strip()
    if failed.name == "correctness" and isinstance(correctness_metrics(failed).get("checks"), int):
        out += failing_cases(details)
    elif details:
        body = details.splitlines()
        more = [f"… ({len(body) - DETAIL_LINES} more lines)"] if len(body) > DETAIL_LINES else []
        out += [f"details of {failed.name}:", *body[:DETAIL_LINES], *more]
    return out


def source_excerpt(text: str | None, line: int, context: int = EXCERPT_CONTEXT) -> list[str]:
    """Numbered lines around ``line`` (1-based), the line itself marked with ``>``."""
    if not text:
        return []
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return []
    first, last = max(1, line - context), min(len(lines), line + context)
    return [f"{'>' if n == line else ' '} {n:>4}  {lines[n - 1]}" for n in range(first, last + 1)]


def failing_cases(details: str) -> list[str]:
    """Each failing test case once, from the correctness rung's list of problems.

    The rung lists the problems, a blank line, then every check with its seed (the hidden one by
    number, for the person). Only the problems are read; a case failing on a published seed and on
    the hidden one is one line that says so.
    """
    problems = details.split("\n\n", 1)[0].splitlines()
    by_case: dict[str, str] = {}
    hidden_too: set[str] = set()
    other: list[str] = []
    for text in problems:
        match = _CASE_LINE.match(text.strip())
        if match is None:
            other.append(text.strip())
            continue
        case, hidden = match["case"], match["seed"] == " (hidden seed)"
        if case in by_case:
            if hidden:
                hidden_too.add(case)
            continue
        by_case[case] = f"{case}{' (hidden seed only)' if hidden else ''}: {match['reason']}"
    cases = [line + (" (the hidden seed fails too)" if case in hidden_too else "") for case, line in by_case.items()]
    shown = cases[:MAX_FAILING_CASES]
    more = [f"… and {len(cases) - len(shown)} more failing case(s)"] if len(cases) > len(shown) else []
    return ["failing cases:", *(f"  {c}" for c in shown), *more, *(f"  {o}" for o in other if o)]
