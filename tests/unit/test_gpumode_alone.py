"""A GPU MODE problem folder copied without the shared ``../eval.py`` (GPU MODE's evaluator, which
kerneltui never runs) still loads; a missing file the problem does use is still an error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kerneltui.core.task import TaskError
from kerneltui.core.task_loaders.load import load_task
from tests.conftest import copy_tree

DATA = Path(__file__).resolve().parent.parent / "data" / "gpumode"


def test_a_problem_without_the_shared_evaluator_loads(tmp_path: Path) -> None:
    problem = copy_tree(DATA / "vectorscale", tmp_path / "vectorscale")
    shutil.copy(DATA / "utils.py", tmp_path / "utils.py")  # what the reference imports; no eval.py
    task = load_task(str(problem))
    assert task.format == "gpumode" and "eval.py" not in task.linked_files


def test_a_missing_file_the_problem_uses_is_still_an_error(tmp_path: Path) -> None:
    problem = copy_tree(DATA / "vectorscale", tmp_path / "vectorscale")
    with pytest.raises(TaskError, match=r"\.\./utils\.py not found"):
        load_task(str(problem))
