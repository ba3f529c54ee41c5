"""GPU MODE problem directories: task.yml, reference.py and submission.py.

``reference.py`` has ``generate_input(**test)`` (the test dict includes ``seed``), ``ref_kernel(data)``
and ``check_implementation(data, output)``; the candidate ``submission.py`` has ``custom_kernel(data)``.
task.yml's ``tests`` and ``benchmarks`` lists become cases. Helper modules the problem imports
(``task.py``, ``utils.py``) are read from the directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerneltui.core.task import Task, TaskError, Timeouts, cases_from_dicts
from kerneltui.core.task_loaders.kernelbench import detect_backend
from kerneltui.core.task_loaders.pysource import parse_python, require_function, top_level_functions


def _parse_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise TaskError(f"malformed YAML: {problem}", path, mark.line + 1 if mark else None) from exc
    if not isinstance(data, dict):
        raise TaskError("task.yml must be a mapping", path)
    return data


def load(root: Path, kernel: str | Path | None = None) -> Task:
    yml = root / "task.yml"
    if not yml.exists():
        yml = root / "task.yaml"
    data = _parse_yaml(yml)
    ref = root / "reference.py"
    funcs = top_level_functions(parse_python(ref))
    require_function(funcs, "generate_input", ref, "generate_input(**test) -> data")
    require_function(funcs, "ref_kernel", ref, "ref_kernel(data) -> output")

    if kernel is not None:
        cand = Path(kernel).expanduser().resolve()
    else:
        cand = root / "submission.py"
    if not cand.is_file():
        raise TaskError("no submission: pass --kernel FILE or create submission.py with custom_kernel(data)", cand)
    try:
        kernel_rel = cand.relative_to(root).as_posix()
    except ValueError as exc:
        raise TaskError("the submission must sit in the problem's directory", cand) from exc

    tests = cases_from_dicts(list(data.get("tests") or []), "tests", yml)
    if not tests:
        raise TaskError("task.yml has no tests", yml)
    benchmarks = cases_from_dicts(list(data.get("benchmarks") or []), "benchmarks", yml)
    timeouts = Timeouts()
    if isinstance(data.get("test_timeout"), (int, float)):
        t = float(data["test_timeout"])
        timeouts = Timeouts(compile=t, run=t, correctness=t, benchmark=float(data.get("benchmark_timeout", t)))

    return Task(
        name=str(data.get("name") or root.name),
        description=str(data.get("description") or "").strip(),
        backend=detect_backend(cand.read_text(encoding="utf-8")),  # type: ignore[arg-type]
        format="gpumode",
        root=root,
        kernel_file=kernel_rel,
        reference_file="reference.py",
        entry_file=kernel_rel,
        tests=tests,
        benchmarks=benchmarks,
        timeouts=timeouts,
        extra={"has_check_implementation": "check_implementation" in funcs},
    )
