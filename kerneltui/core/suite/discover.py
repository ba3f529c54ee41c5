"""Finding the problems of a suite folder and their candidates, by each format's own conventions.

* A **KernelBench level folder** (``KernelBench/level1``): problem files named ``<id>_<Name>.py``
  with ``Model``, ``get_inputs`` and ``get_init_inputs``. A problem's candidates: ``<stem>_new.py``
  or ``<stem>_kernel.py`` beside it; with a candidates folder, KernelBench's own run layout
  ``level_<L>_problem_<id>_sample_<s>_kernel.py`` (every sample), ``<stem>_new.py`` or ``<stem>.py``.
* A **GPU MODE problems folder** (``problems/pmpp_v2``): sub-folders with a ``task.yml``; the
  candidate is the submission (``submission.py``, or the name task.yml's ``files:`` gives
  ``@SUBMISSION@``); with a candidates folder, every file in ``<folder>/<problem>/`` or ``<problem>.py``.
* A **folder of native tasks**: sub-folders with a ``task.toml``; the candidate is the task's
  kernel; with a candidates folder, the same two places as GPU MODE.

Discovery parses nothing but file names and syntax trees: problems that turn out to be broken
are reported per problem when they are loaded, and the suite goes on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kerneltui.core import backends
from kerneltui.core.task_loaders.kernelbench import is_problem_file

SuiteFormat = Literal["kernelbench", "gpumode", "native"]

KB_PROBLEM = re.compile(r"^(\d+)_\w+\.py$")
KB_SAMPLE = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")
KB_CANDIDATE_SUFFIXES = ("_new", "_kernel")
KERNEL_SUFFIXES = (".py", ".cu")


class SuiteError(Exception):
    """A folder that is not a suite, or a candidates folder that does not fit it."""


@dataclass(frozen=True)
class SuiteItem:
    """One verification of a suite: a problem and one candidate for it (or none found)."""

    problem: str  # KernelBench file stem, GPU MODE or native folder name
    path: Path  # what load_task takes: the problem file or folder
    candidate: Path | None
    label: str  # how the candidate is named in the table ("submission.py", "sample 2")

    @property
    def key(self) -> str:
        return f"{self.problem}::{self.label}"


@dataclass(frozen=True)
class Suite:
    root: Path
    format: SuiteFormat
    items: tuple[SuiteItem, ...]
    candidates: Path | None = None  # the --candidates folder, when the candidates come from one

    @property
    def problems(self) -> list[str]:
        return list(dict.fromkeys(item.problem for item in self.items))


def kernelbench_problems(root: Path) -> list[Path]:
    found = []
    for path in root.iterdir():
        if path.is_file() and KB_PROBLEM.match(path.name) and is_problem_file(path):
            found.append(path)
    return sorted(found, key=lambda p: (_problem_number(p), p.name))


def _problem_number(path: Path) -> int:
    """The number a KernelBench problem file's name starts with (``19_ReLU.py``: 19)."""
    m = KB_PROBLEM.match(path.name)
    if m is None:
        raise ValueError(f"{path.name} is not named as a KernelBench problem (NN_Name.py)")
    return int(m.group(1))


def _sub_tasks(root: Path, marker: tuple[str, ...]) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                  and any((p / m).is_file() for m in marker))


def detect(root: Path) -> SuiteFormat | None:
    if _sub_tasks(root, ("task.yml", "task.yaml")):
        return "gpumode"
    if _sub_tasks(root, ("task.toml",)):
        return "native"
    if any(KB_PROBLEM.match(p.name) for p in root.iterdir() if p.is_file()) and kernelbench_problems(root):
        return "kernelbench"
    return None


def describe_folder(path: Path) -> str | None:
    """"a KernelBench level folder (100 problems)" and the like, for messages; None otherwise."""
    try:
        kind = detect(path)
    except OSError:
        return None
    if kind == "kernelbench":
        return f"a KernelBench level folder ({len(kernelbench_problems(path))} problems)"
    if kind == "gpumode":
        return f"a GPU MODE problems folder ({len(_sub_tasks(path, ('task.yml', 'task.yaml')))} problems)"
    if kind == "native":
        return f"a folder of kerneltui tasks ({len(_sub_tasks(path, ('task.toml',)))} tasks)"
    return None


def kernelbench_level(root: Path) -> int | None:
    m = re.search(r"level_?(\d+)$", root.name)
    return int(m.group(1)) if m else None


def _kb_candidates(problem: Path, candidates: Path | None, level: int | None) -> list[tuple[Path, str]]:
    stem = problem.stem
    if candidates is None:
        for suffix in KB_CANDIDATE_SUFFIXES:
            path = problem.with_name(f"{stem}{suffix}.py")
            if path.is_file() and not is_problem_file(path):
                return [(path, path.name)]
        return []
    number = _problem_number(problem)
    samples = []
    for path in candidates.iterdir():
        m = KB_SAMPLE.match(path.name)
        if m and int(m.group(2)) == number and (level is None or int(m.group(1)) == level):
            samples.append((int(m.group(3)), path))
    if samples:
        return [(path, f"sample {s}") for s, path in sorted(samples)]
    for name in (f"{stem}_new.py", f"{stem}_kernel.py", f"{stem}.py"):
        if (candidates / name).is_file():
            return [(candidates / name, name)]
    return []


def _folder_candidates(name: str, default: Path | None, candidates: Path | None,
                       suffixes: tuple[str, ...]) -> list[tuple[Path, str]]:
    if candidates is None:
        return [(default, default.name)] if default is not None and default.is_file() else []
    folder = candidates / name
    if folder.is_dir():
        files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in suffixes
                       and not p.name.startswith((".", "_")))
        return [(p, p.name) for p in files]
    for suffix in suffixes:
        if (candidates / f"{name}{suffix}").is_file():
            return [(candidates / f"{name}{suffix}", f"{name}{suffix}")]
    return []


def _gpumode_submission(problem: Path) -> Path:
    """The submission's name from task.yml's ``files:`` (``@SUBMISSION@``), else submission.py."""
    import yaml

    from kerneltui.core.task_loaders.gpumode import DEFAULT_SUBMISSION, SUBMISSION, task_yml

    try:
        data = yaml.safe_load(task_yml(problem).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return problem / DEFAULT_SUBMISSION
    entries = data.get("files") if isinstance(data, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("source") == SUBMISSION and isinstance(entry.get("name"), str):
            return problem / entry["name"]
    return problem / DEFAULT_SUBMISSION


def _native_kernel(problem: Path) -> Path:
    import tomllib

    try:
        data = tomllib.loads((problem / "task.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return problem / "kernel.py"
    kernel = data.get("kernel")
    if isinstance(kernel, str):
        return problem / kernel
    declared = data.get("backend")
    backend = declared if isinstance(declared, str) and declared in backends.NAMES else backends.DEFAULT
    return problem / backends.spec_of(backend).kernel_file


def discover(root: Path, candidates: Path | None = None) -> Suite:
    root = root.expanduser().resolve()
    if not root.is_dir():
        raise SuiteError(f"{root}: not a folder (give a KernelBench level folder, a GPU MODE problems folder or a "
                         "folder of task folders)")
    if candidates is not None:
        candidates = candidates.expanduser().resolve()
        if not candidates.is_dir():
            raise SuiteError(f"{candidates}: the candidates folder does not exist")
    kind = detect(root)
    items: list[SuiteItem] = []
    if kind == "kernelbench":
        level = kernelbench_level(root)
        for problem in kernelbench_problems(root):
            found = _kb_candidates(problem, candidates, level)
            items.extend(SuiteItem(problem.stem, problem, path, label) for path, label in found)
            if not found:
                items.append(SuiteItem(problem.stem, problem, None, "none"))
    elif kind in ("gpumode", "native"):
        marker = ("task.yml", "task.yaml") if kind == "gpumode" else ("task.toml",)
        for problem in _sub_tasks(root, marker):
            default = _gpumode_submission(problem) if kind == "gpumode" else _native_kernel(problem)
            suffixes = (default.suffix,) if default.suffix else KERNEL_SUFFIXES
            found = _folder_candidates(problem.name, default, candidates, suffixes)
            items.extend(SuiteItem(problem.name, problem, path, label) for path, label in found)
            if not found:
                items.append(SuiteItem(problem.name, problem, None, "none"))
    else:
        raise SuiteError(
            f"{root}: no problems found: a suite is a KernelBench level folder (files <id>_<Name>.py with class "
            "Model), a GPU MODE problems folder (sub-folders with task.yml) or a folder of task folders (task.toml)")
    if candidates is not None and all(item.candidate is None for item in items):
        raise SuiteError(f"{candidates}: no candidate in it matches a problem of {root} (see `kerneltui suite --help` "
                         "for the names each format uses)")
    return Suite(root=root, format=kind, items=tuple(items), candidates=candidates)
