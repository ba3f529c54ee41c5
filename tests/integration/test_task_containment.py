"""A task's files are the files inside its folder (#47): a kernel, task.toml, reference or helper that
resolves elsewhere (a symbolic link, a ``..`` path) is refused with a task error naming the file and
the rule, by ``check`` and by the engine, and nothing of the outside file is stored.

The attack this stops: a task folder a boxed kernel can write (``/dev/shm``) whose ``kernel.py`` links
to a file under the home folder, which the box hides; kerneltui (outside the box) would read it and
store it as a version in the folder, where the kernel reads it back.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from kerneltui.core.engine.messages import RunRequest
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task import LoadOptions, TaskError
from kerneltui.core.task_loaders.load import load_task
from tests.cheats.gallery import HONEST_ADD
from tests.conftest import DATA, EXAMPLES, copy_tree, run_cli
from tests.integration.test_engine import engine  # noqa: F401  (the fixture)

RULE = "kerneltui reads a task's files only inside its folder"


def _outside_task(tmp_path: Path, how: str) -> tuple[Path, str, str]:
    """A vector_add task whose ``how`` file is outside its folder; the task, the file's name in the
    task, and the marker only the outside file holds."""
    marker = f"OUTSIDE-{uuid.uuid4().hex}"
    task = copy_tree(EXAMPLES / "vector_add", tmp_path / "task")
    (task / "kernel.py").write_text(HONEST_ADD)
    outside = tmp_path / "private"
    outside.mkdir()
    if how in ("kernel.py", "task.toml", "reference.py"):
        source = HONEST_ADD if how == "kernel.py" else (task / how).read_text()
        (outside / how).write_text(source + f"\n# {marker}\n")
        (task / how).unlink()
        (task / how).symlink_to(outside / how)
        return task, how, marker
    if how in ("kernel = ../", "reference = ../"):
        key = how.split(" ")[0]
        name = f"../private/{key}.py"
        original = HONEST_ADD if key == "kernel" else (task / "reference.py").read_text()
        (outside / f"{key}.py").write_text(original + f"\n# {marker}\n")
        toml = task / "task.toml"
        toml.write_text(f'{key} = "{name}"\n' + toml.read_text().replace('kernel = "kernel.py"\n', ""))
        return task, name, marker
    # a helper found in the folder, which every worker would receive
    (outside / "id_rsa").write_text(f"-----BEGIN KEY----- {marker}\n")
    (task / "notes.txt").symlink_to(outside / "id_rsa")
    return task, "notes.txt", marker


HOWS = ["kernel.py", "task.toml", "reference.py", "kernel = ../", "reference = ../", "a helper"]


def _nothing_stored(task: Path, marker: str) -> None:
    state = task / ".kerneltui"
    for path in state.rglob("*") if state.exists() else []:
        if path.is_file():
            assert marker.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("how", HOWS)
def test_a_task_file_outside_the_folder_is_refused_by_check(tmp_path, how):
    task, name, marker = _outside_task(tmp_path, how)
    with pytest.raises(TaskError, match="leads outside the task folder") as caught:
        load_task(task)
    assert name in str(caught.value) and RULE in str(caught.value)
    proc = run_cli("check", str(task), "--no-engine", "--rungs", "prechecks,compile,run,correctness", "--seeds", "1")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert name in proc.stderr and "leads outside the task folder" in proc.stderr and RULE in proc.stderr
    assert marker not in proc.stdout + proc.stderr
    _nothing_stored(task, marker)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["kernel.py", "reference = ../", "a helper"])
def test_the_engine_refuses_a_task_file_outside_the_folder(engine, tmp_path, how):  # noqa: F811
    """Sent to the engine as a request (a command would refuse it before): a task error, no run."""
    task, name, marker = _outside_task(tmp_path, how)
    request = RunRequest.make(task, None, LoadOptions(), RunOptions(rungs=["prechecks", "correctness"], seeds=1))

    async def send() -> dict[str, Any]:
        opened = await engine.client().open(start=True)
        assert opened is not None
        channel, _ = opened
        try:
            channel.send({"op": "run", "run": request.to_dict()})
            await channel.drain()
            return await channel.receive() or {}
        finally:
            await channel.close()

    reply = asyncio.run(send())
    assert reply.get("error", {}).get("kind") == "task", reply
    assert name in reply["error"]["message"] and RULE in reply["error"]["message"]
    assert marker not in str(reply)
    assert engine.status()["runs_served"] == 0
    _nothing_stored(task, marker)


def test_a_kernel_swapped_for_a_link_after_loading_is_not_read(tmp_path):
    """The folder may be one a kernel can write: the check on the file actually opened refuses a link
    put in place between loading and reading."""
    task, _, _ = _outside_task(tmp_path, "kernel.py")
    (task / "kernel.py").unlink()
    (task / "kernel.py").write_text(HONEST_ADD)
    loaded = load_task(task)
    (task / "kernel.py").unlink()
    (task / "kernel.py").symlink_to(tmp_path / "private" / "kernel.py")
    with pytest.raises(TaskError, match="leads outside the task folder"):
        loaded.kernel_source()
    with pytest.raises(TaskError, match="leads outside the task folder"):
        loaded.read_sources()


def test_gpumode_files_that_pull_a_shared_file_stay_a_declared_exception(tmp_path):
    root = copy_tree(DATA / "gpumode", tmp_path / "gm")
    problem = root / "vectorscale"
    task = load_task(problem)
    assert task.linked_files, "vectorscale pulls ../utils.py through files:"
    # The folder's own entry a link to the declared source: still the declared file, read where it is.
    for name, source in list(task.linked_files.items()):
        (problem / name).symlink_to(source)
    linked = load_task(problem)
    assert set(task.linked_files) <= set(linked.linked_files)
    assert linked.read_sources()
    # A submission that links out of the folder is not declared: refused.
    (problem / "submission.py").rename(tmp_path / "submission.py")
    (problem / "submission.py").symlink_to(tmp_path / "submission.py")
    with pytest.raises(TaskError, match="submission.py leads outside the task folder"):
        load_task(problem)


def test_a_link_out_made_while_watching_reruns_and_the_run_refuses_it(tmp_path):
    """The watcher does not die on a folder that gained a link out; the run it starts is refused."""
    from kerneltui.core.watcher import _is_task_source

    task, _, _ = _outside_task(tmp_path, "kernel.py")
    (task / "kernel.py").unlink()
    (task / "kernel.py").write_text(HONEST_ADD)
    loaded = load_task(task)
    (tmp_path / "private" / "id_rsa").write_text("-----BEGIN KEY-----\n")
    (task / "notes.txt").symlink_to(tmp_path / "private" / "id_rsa")
    assert _is_task_source(loaded, task / "kernel.py", set())
    with pytest.raises(TaskError, match="notes.txt leads outside the task folder"):
        loaded.read_sources()
