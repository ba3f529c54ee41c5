"""The agent below the DSL: a hand-edited PTX proposed through the scripted provider, end to end.

On the cuda_elementwise example with real CPU workers: the model reads the compiler's PTX and
proposes an edit of it as a diff; kerneltui writes it as an override of the current version, the
trial builds the kernel from it (ptxas, compile only without a GPU), the proposal's diff is against
the compiler's output, and the accepted override is a version of its own in the history while the
kernel file stays as it was.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from kerneltui.core.asm.store import Dump
from kerneltui.core.history import HistoryStore
from kerneltui.core.loop_factory import check_once
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task import source_hash
from kerneltui.core.task_loaders.load import load_task
from tests.integration.agent_helpers import last_sent, make_chat

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None and shutil.which("ptxas") is None,
                                reason="needs the CUDA toolkit (nvcc + ptxas)")


@pytest.fixture
def cuda_task(example_task) -> tuple[Path, str]:
    """The example and the fma line of its PTX, as the compiler wrote it (the dump of the version)."""
    task_dir = example_task("cuda_elementwise")
    report = asyncio.run(check_once(load_task(str(task_dir)), RunOptions(rungs=["dump"], record=False)))
    assert report.ok, [r.line() for r in report.results]
    dump = Dump.load(Path(report.version_dir))
    ptx = dump.stage_text(dump.variant("axpb"), "ptx")
    fma = next(line for line in ptx.splitlines() if "fma.rn.f32" in line)
    return task_dir, fma


def _propose(fma: str, replacement: str) -> dict:
    diff = f"@@ -1,1 +1,1 @@\n-{fma}\n+{fma.replace('fma.rn.f32', replacement)}\n"
    return {"name": "propose_override", "arguments": {"stage": "ptx", "kernel": "axpb", "diff": diff,
                                                      "rationale": "flush denormals to zero in the fma"}}


async def test_hand_edited_ptx_is_proposed_tried_and_accepted_as_a_version(cuda_task, tmp_path) -> None:
    task_dir, fma = cuda_task
    kernel = task_dir / "kernel.cu"
    original = kernel.read_text()
    turns = [
        {"text": "Reading the PTX.", "tool_calls": [{"name": "read_asm", "arguments": {"stage": "ptx", "grep": "fma"}}]},
        {"text": "Proposing ftz on the fma.", "expect": "fma.rn.f32", "tool_calls": [_propose(fma, "fma.rn.ftz.f32")]},
        {"text": "The trial built it; your call.", "expect": "diffed against the compiler's output"},
    ]
    session, rec, provider = make_chat(task_dir, turns, tmp_path, trial_rungs="compile,dump")
    try:
        turn = await session.send("try flushing denormals in the PTX")
        assert turn.error is None and turn.proposals == ["p1"]
        p = session.book.get("p1")
        assert rec.states("p1") == ["pending", "trial", "trial_done"]
        assert p.kind == "override" and p.override is not None and p.override["stage"] == "PTX"
        base_version = source_hash(original)
        assert p.override["base_version"] == base_version and p.base_hash == base_version
        assert p.file.startswith(f".kerneltui/override/{base_version}-") and p.file.endswith("/kernel.ptx")
        # The diff is against the compiler's output, not against the kernel file.
        assert f"-{fma}" in p.diff and "+" + fma.replace("fma.rn.f32", "fma.rn.ftz.f32") in p.diff
        assert "fma.rn.f32" in p.base_source and p.new_source.count("fma.rn.ftz.f32") == 1
        trial = p.trial
        assert trial.ok is True, trial
        compile_ = next(r for r in trial.rungs if r.name == "compile")
        assert compile_.status == "ok"
        tried = session.trial_reports["p1"]
        assert tried.source_hash != base_version  # the edited build is a version of its own
        dump = Dump.load(Path(tried.version_dir))
        assert "fma.rn.ftz.f32" in dump.stage_text(dump.variant("axpb"), "ptx")
        assert "flush denormals" in p.rationale and kernel.read_text() == original
        assert "person decides" in last_sent(provider)

        await session.decide("p1", "accept")
        assert p.state == "accepted" and p.decision["override"] == p.override["folder"]
        assert p.decision["kernel_file_unchanged"] is True
        assert kernel.read_text() == original  # below the DSL: the kernel file does not change
        assert (task_dir / p.file).read_text() == p.new_source
        history = HistoryStore.for_task(session.task).entries()
        # read_asm checked the kernel as it was (the compiler's PTX); the accepted override follows it.
        assert [(e.source_hash, e.origin, e.ok) for e in history] == [(base_version, "verify", True),
                                                                       (tried.source_hash, "proposal", True)]
        assert session.checkpoints.peek() is None  # nothing to undo in the kernel file
    finally:
        await session.close()


async def test_a_broken_ptx_edit_fails_its_trial_at_the_ptx_line(cuda_task, tmp_path) -> None:
    task_dir, fma = cuda_task
    turns = [{"text": "Trying a bogus rounding mode.", "tool_calls": [_propose(fma, "fma.rn.bogus.f32")]},
             {"text": "That did not assemble."}]
    session, _, _ = make_chat(task_dir, turns, tmp_path, trial_rungs="compile")
    try:
        await session.send("edit the PTX")
        p = session.book.get("p1")
        assert p.trial.ok is False
        compile_ = next(r for r in p.trial.rungs if r.name == "compile")
        assert compile_.status == "fail" and "ptxas error" in compile_.error
        assert compile_.location and compile_.location.split(":")[0].endswith("kernel.ptx")
    finally:
        await session.close()


async def test_a_task_without_overrides_is_told_to_edit_its_source(example_task, tmp_path) -> None:
    task_dir = example_task("cute_elementwise")
    call = {"name": "propose_override", "arguments": {"stage": "ptx", "source": ".version 8.0", "rationale": "x"}}
    session, rec, provider = make_chat(task_dir, [{"text": "Editing PTX.", "tool_calls": [call]}, {"text": "ok"}],
                                          tmp_path)
    try:
        await session.send("edit the PTX")
        assert not session.book.proposals
        result = provider.requests[1].messages[-1].tool_results[0]
        assert result.is_error and "this is a cute task: change its source with propose_edit" in result.content
    finally:
        await session.close()
