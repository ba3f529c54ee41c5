"""KernelBench problem files: ``Model``, ``get_inputs()``, ``get_init_inputs()``; candidate ``ModelNew``.

The candidate lives in another file: ``--kernel FILE``, or next to the problem as ``<stem>_new.py``,
``<stem>_kernel.py`` or ``model_new.py``. Both models are built from ``get_init_inputs()`` under the
same seed, and the candidate's parameters are copied from the reference where names and shapes
match, as KernelBench does, so that weights agree.
"""

from __future__ import annotations

import re
from pathlib import Path

from kerneltui.core.task import Case, Task, TaskError, Tolerance
from kerneltui.core.task_loaders.pysource import parse_python, top_level_classes, top_level_functions

CANDIDATE_NAMES = ("{stem}_new.py", "{stem}_kernel.py", "model_new.py")


def detect_backend(source: str) -> str:
    if re.search(r"@\s*triton\.(jit|autotune)", source) or "import triton" in source:
        return "triton"
    if re.search(r"@\s*cute\.(kernel|jit)", source) or "cutlass.cute" in source:
        return "cute"
    if "load_inline" in source or "cpp_extension" in source or "__global__" in source:
        return "cuda"
    return "torch"


def load(problem: Path, kernel: str | Path | None = None) -> Task:
    tree = parse_python(problem)
    classes = top_level_classes(tree)
    funcs = top_level_functions(tree)
    if "Model" not in classes:
        raise TaskError("not a KernelBench problem: no class Model(nn.Module)", problem)
    for name in ("get_inputs", "get_init_inputs"):
        if name not in funcs:
            raise TaskError(f"KernelBench problem without {name}()", problem)

    root = problem.parent
    if kernel is not None:
        cand = Path(kernel).expanduser().resolve()
    else:
        options = [root / pat.format(stem=problem.stem) for pat in CANDIDATE_NAMES]
        found = [p for p in options if p.is_file()]
        if not found:
            raise TaskError(
                "no candidate found: pass --kernel FILE (a file defining class ModelNew), or put one at "
                + " or ".join(p.name for p in options),
                problem,
            )
        cand = found[0]
    if not cand.is_file():
        raise TaskError("candidate file not found", cand)
    try:
        kernel_rel = cand.relative_to(root).as_posix()
    except ValueError as exc:
        raise TaskError("the candidate must sit in the problem's directory", cand) from exc
    cand_tree = parse_python(cand)
    if "ModelNew" not in top_level_classes(cand_tree):
        raise TaskError("candidate has no class ModelNew", cand)
    backend = detect_backend(cand.read_text(encoding="utf-8"))

    return Task(
        name=problem.stem,
        description=(tree.body[0].value.value.strip()  # type: ignore[attr-defined]
                     if tree.body and hasattr(tree.body[0], "value") and isinstance(getattr(tree.body[0].value, "value", None), str)
                     else f"KernelBench problem {problem.name}"),
        backend=backend,  # type: ignore[arg-type]
        format="kernelbench",
        root=root,
        kernel_file=kernel_rel,
        reference_file=problem.name,
        entry_file=kernel_rel,
        tests=(Case(params={}, seed=None),),
        benchmarks=(Case(params={}, seed=None),),
        # KernelBench's own gate is allclose(atol=rtol=1e-2); kerneltui adds its scale-aware checks.
        tolerance=Tolerance(atol=1e-2, rtol=1e-2),
        extra={},
    )
