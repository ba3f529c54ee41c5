"""How the agent reads asm dumps, the profile brief and the history, through what exists in the build."""

from __future__ import annotations

import json

import pytest

from kerneltui.core.agent.versions import Unavailable, profile_brief, read_asm
from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.result import skip
from kerneltui.core.task_loaders.load import load_task
from tests.unit.test_profile_parsers import rung_result

PTX = "\n".join([".version 8.4", ".target sm_90a", ".visible .entry add_kernel(", "ld.global.v4.b32 {%r1}, [%rd1];",
                 "add.f32 %f3, %f1, %f2;", "st.global.v4.b32 [%rd2], {%r2};", "ret;"]) + "\n"


@pytest.fixture
def task(example_task):
    return load_task(example_task("vector_add"))


def report(digest: str, *results) -> RunReport:
    return RunReport(run_id="r1", task="vector_add", ok=True, results=list(results), device={}, source_hash=digest,
                     duration_s=1.0)


def test_asm_stage_from_the_version_folder(task):
    folder = task.version_dir("abc123")
    folder.mkdir(parents=True)
    (folder / "add_kernel.ptx").write_text(PTX)
    text = read_asm(task, "abc123", "ptx")
    assert text.splitlines()[0] == "ptx of version abc123: 7 lines"
    assert "     4  ld.global.v4.b32 {%r1}, [%rd1];" in text
    only = read_asm(task, "abc123", "ptx", grep="global")
    assert "2 matching 'global'" in only.splitlines()[0] and "add.f32" not in only


def test_missing_asm_says_what_would_produce_it(task):
    with pytest.raises(Unavailable, match="no dumps for this version yet"):
        read_asm(task, "nothing", "sass")
    folder = task.version_dir("abc123")
    folder.mkdir(parents=True)
    (folder / "kernel.py").write_text("x = 1\n")
    with pytest.raises(Unavailable, match=r"no sass for this version .* \(found: \.py\)"):
        read_asm(task, "abc123", "sass")
    with pytest.raises(Unavailable, match="unknown stage 'hex'"):
        read_asm(task, "abc123", "hex")


def test_profile_brief_from_a_saved_profile(task):
    folder = task.version_dir("def456")
    folder.mkdir(parents=True)
    (folder / "profile.json").write_text(json.dumps({"result": rung_result("latency_fma_chain").to_dict()}))
    brief = profile_brief(task, report("def456"))
    assert brief.startswith("Nsight Compute profile of chain_kernel") and "Bound: latency" in brief


def test_no_profile_is_stated(task):
    with pytest.raises(Unavailable, match="no profile for this version"):
        profile_brief(task, report("zzz"))
    skipped = report("zzz", skip("profile", "no ncu on PATH. Fix: install Nsight Compute"))
    with pytest.raises(Unavailable, match="the profile rung was skipped: no ncu"):
        profile_brief(task, skipped)

