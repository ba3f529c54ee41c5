"""What the profiling target is told: the task, its files, the case, where to write the result."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NotRequired, TypedDict

import kerneltui
from kerneltui.core.case_params import CaseParams
from kerneltui.core.task import Task, TaskData


class CaseChoiceError(ValueError):
    pass


class ChosenCase(TypedDict):
    """The case a profile or an IKET trace runs (``choose_case``)."""

    kind: str  # "benchmark" or "test"
    index: int
    params: CaseParams
    seed: int | None
    label: str


class ProfileSpec(TypedDict):
    """What the profiling target reads (``make_spec``; written as JSON for ``core.profile.target``)."""

    workdir: str | None  # where the target puts its task copy
    backend: str
    arch: str | None
    task: TaskData
    files: dict[str, str]
    case: ChosenCase
    warmup: int
    result: str  # where the target writes what it saw
    override: NotRequired[str]  # a folder of hand-edited compiler output (core.override)


def choose_case(task: Task, index: int | None = None) -> ChosenCase:
    """The case to profile: a benchmark case (the first unless ``index``), else the first test.

    Benchmark cases are the sizes the person cares about for speed; tests are often tiny on
    purpose (n=1, odd sizes) and would profile launch overhead.
    """
    cases, kind = (task.benchmarks, "benchmark") if task.benchmarks else (task.tests, "test")
    i = 0 if index is None else index
    if not 0 <= i < len(cases):
        raise CaseChoiceError(
            f"there is no {kind} case {i} (the task has {len(cases)}: "
            + "; ".join(f"{n}: {c.label}" for n, c in enumerate(cases)) + ")"
        )
    case = cases[i]
    return {"kind": kind, "index": i, "params": dict(case.params), "seed": case.seed, "label": case.label}


def make_spec(task: Task, files: dict[str, str], case: ChosenCase, result_path: Path,
              arch: str | None = None, warmup: int = 2, workdir: Path | None = None) -> ProfileSpec:
    """``workdir``: where the target puts its task copy (kept until the caller removes it)."""
    return {
        "workdir": str(workdir) if workdir else None,
        "backend": task.backend,
        "arch": arch or task.arch,
        "task": task.to_dict(),
        "files": files,
        "case": case,
        "warmup": warmup,
        "result": str(result_path),
    }


def target_argv(spec_path: Path, python: str | None = None) -> list[str]:
    return [python or sys.executable, "-m", "kerneltui.core.profile.target", str(spec_path)]


def target_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of ncu and its target: this kerneltui importable, output unbuffered."""
    env = dict(os.environ if base is None else base)
    package_root = str(Path(kerneltui.__file__).resolve().parent.parent)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_root not in parts:
        parts.insert(0, package_root)
    env["PYTHONPATH"] = os.pathsep.join(parts)
    env["PYTHONUNBUFFERED"] = "1"
    return env
