"""Pure parts of the batch check: finding candidates, slots, ranking, the table, the global options."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kerneltui.commands.remote_options import remote_target, split_leading
from kerneltui.core.batch import (
    BatchError,
    CandidateResult,
    find_candidates,
    format_table,
    local_slots,
    rank,
    result_from_report,
)
from kerneltui.core.remote.ssh import SSHRunner, SSHTarget
from kerneltui.core.task_loaders.load import load_task
from tests.conftest import EXAMPLES


def _result(name: str, correct: bool, median: float | None) -> CandidateResult:
    return CandidateResult(name=name, correct=correct, median_ms=median, speedup=None,
                           failure=None if correct else "correctness: wrong", where="cpu 0", duration_s=1.0)


def test_rank_puts_correct_first_then_fastest_then_unbenchmarked() -> None:
    results = [_result("slow", True, 2.0), _result("wrong-fast", False, 0.1), _result("none", True, None),
               _result("fast", True, 0.5)]
    assert [r.name for r in rank(results)] == ["fast", "slow", "none", "wrong-fast"]
    table = format_table(rank(results))
    assert table.splitlines()[1].split()[:4] == ["1", "fast", "correct", "500.0"]
    assert "FAILED" in table and "correctness: wrong" in table


def test_find_candidates_folder_glob_and_errors(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "vector_add")
    (tmp_path / "k1.py").write_text("a = 1\n")
    (tmp_path / "k2.py").write_text("a = 2\n")
    (tmp_path / "_helper.py").write_text("")
    (tmp_path / "notes.txt").write_text("")
    assert [c.path.name for c in find_candidates(str(tmp_path), task)] == ["k1.py", "k2.py"]
    assert [c.path.name for c in find_candidates(str(tmp_path / "k2*.py"), task)] == ["k2.py"]
    with pytest.raises(BatchError, match="no such folder or file"):
        find_candidates(str(tmp_path / "nothing*.py"), task)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(BatchError, match="no kernel files"):
        find_candidates(str(empty), task)
    (empty / "k.cu").write_text("")
    with pytest.raises(BatchError, match="kernel is a .py file"):
        find_candidates(str(empty / "*.cu"), task)


def test_slots_one_per_gpu_or_jobs_on_cpu() -> None:
    assert [s.gpu for s in local_slots(gpus=["0", "1", "2"])] == ["0", "1", "2"]
    assert [s.gpu for s in local_slots(jobs=2, gpus=["0", "1", "2"])] == ["0", "1"]
    cpu = local_slots(jobs=3, gpus=[])
    assert [s.label for s in cpu] == ["cpu 0", "cpu 1", "cpu 2"] and all(s.gpu is None for s in cpu)
    assert local_slots(gpus=["4"])[0].runner().env == {"CUDA_VISIBLE_DEVICES": "4"}  # type: ignore[attr-defined]


def test_result_from_report_reads_the_benchmark_median() -> None:
    report = {"ok": True, "duration_s": 3.0, "rungs": [
        {"name": "correctness", "status": "ok", "summary": "24 checks", "metrics": {}},
        {"name": "benchmark", "status": "ok", "summary": "", "metrics": {"median_ms": 0.25, "speedup_vs_reference": 1.5}},
    ]}
    r = result_from_report("k.py", report, "gpu 0")
    assert (r.correct, r.median_ms, r.speedup, r.failure) == (True, 0.25, 1.5, None)
    report["ok"] = False
    report["rungs"][0] = {"name": "correctness", "status": "fail", "summary": "x", "error": "1 of 4 elements wrong\nmore"}
    r = result_from_report("k.py", report, "gpu 0")
    assert not r.correct and r.failure == "correctness: 1 of 4 elements wrong"


def test_global_options_before_the_subcommand() -> None:
    assert split_leading(["--gpu-host", "me@box", "--remote-python=/opt/py", "check", "T"]) == (
        ["--gpu-host", "me@box", "--remote-python=/opt/py"], ["check", "T"])
    assert split_leading(["TASK"]) == ([], ["TASK"])


def test_remote_target_from_options_and_bad_input(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KERNELTUI_CONFIG", str(tmp_path / "none.toml"))
    args = argparse.Namespace(gpu_host="me@box", remote_python="/opt/py/bin/python", ssh_port=2222,
                              ssh_identity="~/.ssh/id_gpu")
    target = remote_target(args)
    assert (target.host, target.port, target.python) == ("me@box", 2222, "/opt/py/bin/python")
    cmd = SSHRunner(target).command("true")
    assert cmd[:3] == ["ssh", "-o", "BatchMode=yes"] and "-p" in cmd and "-i" in cmd and cmd[-2:] == ["me@box", "true"]
    assert any(a.startswith("ControlPath=") for a in cmd)
    with pytest.raises(ValueError, match="needs --gpu-host"):
        remote_target(argparse.Namespace(gpu_host=None, remote_python="/x", ssh_port=None, ssh_identity=None))
    with pytest.raises(ValueError, match="not a host"):
        SSHTarget(host="-oProxyCommand=x")
