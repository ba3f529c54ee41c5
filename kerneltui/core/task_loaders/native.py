"""The native task directory: task.toml + reference.py + the kernel file."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from kerneltui.core.task import BACKENDS, Task, TaskError, Timeouts, Tolerance, cases_from_dicts
from kerneltui.core.task_loaders.pysource import (
    parse_python,
    require_function,
    require_params,
    top_level_functions,
)

DEFAULT_KERNEL = {"triton": "kernel.py", "cute": "kernel.py", "torch": "kernel.py", "cuda": "kernel.cu", "tilelang": "kernel.py"}
KNOWN_KEYS = {
    "name", "description", "backend", "kernel", "reference", "launcher", "tests", "benchmarks",
    "tolerance", "timeouts", "inplace", "seeds", "allow", "arch",
}
ALLOWABLE = {"streams", "threads", "torch_ops", "downcast", "reference_import", "persisting_l2", "introspection", "descriptors"}


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise TaskError("task.toml not found", path) from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line = int(m.group(1)) if m else None
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise TaskError(f"malformed TOML: {msg}", path, line) from exc


def _float_table(data: Any, what: str, path: Path, allowed: set[str]) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TaskError(f"[{what}] must be a table", path)
    unknown = set(data) - allowed
    if unknown:
        raise TaskError(f"[{what}] has unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}", path)
    return dict(data)


def load(root: Path, kernel: str | Path | None = None) -> Task:
    toml_path = root / "task.toml"
    data = _read_toml(toml_path)
    unknown = set(data) - KNOWN_KEYS
    if unknown:
        raise TaskError(f"unknown keys {sorted(unknown)}; known: {sorted(KNOWN_KEYS)}", toml_path)
    backend = data.get("backend", "triton")
    if backend not in BACKENDS:
        raise TaskError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}", toml_path)

    kernel_file = str(data.get("kernel", DEFAULT_KERNEL[backend]))
    if kernel is not None:
        kpath = Path(kernel).expanduser().resolve()
        try:
            kernel_file = kpath.relative_to(root).as_posix()
        except ValueError as exc:
            raise TaskError("--kernel must be a file inside the task directory (copy it there first)", kpath) from exc
    if not (root / kernel_file).is_file():
        raise TaskError(f"kernel file {kernel_file} not found (set `kernel = \"…\"` in task.toml)", toml_path)

    reference_file = str(data.get("reference", "reference.py"))
    ref_path = root / reference_file
    funcs = top_level_functions(parse_python(ref_path))
    gen = require_function(funcs, "generate_input", ref_path, "generate_input(seed, **params) -> tuple of inputs")
    require_function(funcs, "ref_kernel", ref_path, "ref_kernel(*inputs) -> output")

    tests = cases_from_dicts(list(data.get("tests") or []), "[[tests]]", toml_path)
    if not tests:
        raise TaskError("no [[tests]] entries: add at least one table of shape parameters", toml_path)
    benchmarks = cases_from_dicts(list(data.get("benchmarks") or []), "[[benchmarks]]", toml_path)
    for case in (*tests, *benchmarks):
        require_params(gen, ["seed", *case.params], ref_path, f"generate_input(seed, {', '.join(case.params)})")

    launcher = data.get("launcher")
    if backend == "cuda":
        launcher = str(launcher or "launch.py")
        if not (root / launcher).is_file():
            raise TaskError(
                f"a CUDA C++ task needs a Python launcher ({launcher}) defining custom_kernel(*inputs)", toml_path
            )
    entry_file = str(launcher) if launcher else kernel_file

    tol = _float_table(data.get("tolerance"), "tolerance", toml_path, set(Tolerance.__dataclass_fields__))
    tmo = _float_table(data.get("timeouts"), "timeouts", toml_path, set(Timeouts.__dataclass_fields__))
    allow = data.get("allow") or []
    bad_allow = set(allow) - ALLOWABLE
    if bad_allow:
        raise TaskError(f"allow has unknown entries {sorted(bad_allow)}; known: {sorted(ALLOWABLE)}", toml_path)
    seeds = data.get("seeds", 5)
    if not isinstance(seeds, int) or seeds < 1:
        raise TaskError("seeds must be a positive integer", toml_path)

    return Task(
        name=str(data.get("name", root.name)),
        description=str(data.get("description", "")).strip(),
        backend=backend,
        format="native",
        root=root,
        kernel_file=kernel_file,
        reference_file=reference_file,
        entry_file=entry_file,
        tests=tests,
        benchmarks=benchmarks,
        tolerance=Tolerance(**tol),
        timeouts=Timeouts(**{k: float(v) for k, v in tmo.items()}),
        inplace=bool(data.get("inplace", False)),
        seeds=seeds,
        allow=frozenset(allow),
        arch=str(data.get("arch", "sm_90a")),
        extra={"has_check_implementation": "check_implementation" in funcs,
               "has_flops": "flops" in funcs, "has_bytes_moved": "bytes_moved" in funcs},
    )
