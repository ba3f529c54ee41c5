"""One entry for every task format: which loader a path is for.

Only the native loader is imported with this module; the KernelBench and GPU MODE loaders (and the
suite's folder survey, for the error of a folder that is no task) are imported when a path of theirs
comes: opening the app on one task must not pay for every format before its first frame."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kerneltui.core.task import LoadOptions, Task, TaskError
from kerneltui.core.task_loaders import native


def load_task(path: str | Path, kernel: str | Path | None = None, options: LoadOptions | None = None) -> Task:
    """Load a native task directory, a KernelBench problem file or a GPU MODE problem directory.

    The task keeps ``options`` (``Task.load``) so that a process loading it again (the engine) can.
    A file of the task that resolves outside its folder is refused (``containment``)."""
    options = options or LoadOptions()
    task = replace(_load(path, kernel, options), load=options)
    task.source_files()  # every file it would read resolves inside its folder (TaskError otherwise)
    return task


def _load(path: str | Path, kernel: str | Path | None, options: LoadOptions) -> Task:
    p = Path(path).expanduser()
    if not p.exists():
        raise TaskError("no such task: give a task directory, a KernelBench .py file or a GPU MODE directory", p)
    p = p.resolve()
    if p.is_file():
        if p.name == "task.toml":
            return native.load(p.parent, kernel, options)
        if p.suffix == ".py":
            from kerneltui.core.task_loaders import kernelbench

            return kernelbench.load(p, kernel, options)
        raise TaskError("a task file must be a KernelBench problem (.py) or a task.toml", p)
    if (p / "task.toml").exists():
        return native.load(p, kernel, options)
    if (p / "task.yml").exists() or (p / "task.yaml").exists():
        from kerneltui.core.task_loaders import gpumode

        return gpumode.load(p, kernel, options)
    from kerneltui.core.suite.discover import describe_folder

    hint = "scaffold one with `kerneltui new DIR --from vector_add`"
    kind = describe_folder(p)
    if kind:
        hint = f"this is {kind}: check its problems one at a time (a file or folder inside it), or all with `kerneltui suite {p}`"
    raise TaskError(f"not a task directory: expected task.toml (native) or task.yml (GPU MODE); {hint}", p)
