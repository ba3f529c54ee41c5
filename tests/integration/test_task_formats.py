"""KernelBench and GPU MODE problems through the whole loop on the CPU."""

from __future__ import annotations

import json

from tests.conftest import DATA, run_cli


def run_json(*args: str) -> dict:
    proc = run_cli("check", *args, "--json", "--seeds", "2", "--rungs", "correctness")
    return json.loads(proc.stdout)


def test_kernelbench_candidate_passes():
    report = run_json(str(DATA / "kernelbench" / "19_ScaledReLU.py"), "--no-history")
    assert report["ok"], report
    c = next(r for r in report["rungs"] if r["name"] == "correctness")
    assert c["metrics"]["launches"] > 0


def test_kernelbench_weights_must_match():
    report = run_json(str(DATA / "kernelbench" / "19_ScaledReLU.py"), "--kernel",
                      str(DATA / "kernelbench" / "19_ScaledReLU_wrongweights.py"), "--no-history")
    assert not report["ok"]
    assert "elements outside atol=0.01" in next(r for r in report["rungs"] if r["name"] == "correctness")["error"]


def test_gpumode_submission_passes_with_preallocated_output():
    # The reference writes into data's output buffer; that is not an input edit.
    report = run_json(str(DATA / "gpumode" / "vectorscale"), "--no-history")
    assert report["ok"], report


def test_gpumode_check_implementation_decides():
    report = run_json(str(DATA / "gpumode" / "vectorscale"), "--kernel",
                      str(DATA / "gpumode" / "vectorscale" / "wrong_submission.py"), "--no-history")
    c = next(r for r in report["rungs"] if r["name"] == "correctness")
    assert c["status"] == "fail"
    assert "mismatches, first at" in c["error"]
