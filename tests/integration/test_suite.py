"""``kerneltui suite DIR`` on folders laid out as the published sets are, on the CPU (correctness only).

A KernelBench level folder with its honest candidates beside the problems (at the suite's sizes,
then with one problem's own), then with broken and torch-only ones from run folders in KernelBench's
own layout; a GPU MODE problems folder with its
submissions and with a folder of wrong ones; a folder of native tasks; a problem that cannot run
here; and a resumed suite that verifies only what changed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import DATA, EXAMPLES, copy_tree, run_cli

# The suites' runs are answered by the test process's shared engine, as a person's shell does by default;
# the same suite without it (--no-engine) is compared with it in tests/integration/test_engine.py.
pytestmark = pytest.mark.usefixtures("commands_share_an_engine")

KB = DATA / "kernelbench"
GM = DATA / "gpumode"


def suite(*args: str) -> tuple[int, dict, str]:
    proc = run_cli("suite", *args, "--json", "--seeds", "1", timeout=900)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def statuses(report: dict) -> dict[str, str]:
    return {f"{r['problem']}::{r['candidate']}": r["status"] for r in report["results"]}


def test_kernelbench_level_folder_honest_then_resumed(tmp_path):
    root = copy_tree(KB, tmp_path / "kb")
    code, report, _ = suite(str(root / "level1"), "--scale", "0.004")
    assert code == 0, report
    assert report["format"] == "kernelbench" and report["gpu"] is False
    assert statuses(report) == {"7_ScaledReLU::7_ScaledReLU_new.py": "correct",
                                "23_RowSoftmax::23_RowSoftmax_new.py": "correct",
                                "30_SoftsignWide::30_SoftsignWide_new.py": "correct",
                                "40_TallMatmul::40_TallMatmul_new.py": "correct"}
    summary = report["summary"]
    assert (summary["items"], summary["correct"], summary["timed"], summary["fast_p"]) == (4, 4, False, {})
    results_file = root / "level1" / ".kerneltui" / "suite-results.jsonl"
    assert Path(report["results_file"]) == results_file and len(results_file.read_text().splitlines()) == 4

    # Again: every verdict comes from the file. Then one candidate changes: only it runs again.
    code, again, _ = suite(str(root / "level1"), "--scale", "0.004")
    assert code == 0 and again["reused"] == 4
    candidate = root / "level1" / "23_RowSoftmax_new.py"
    candidate.write_text(candidate.read_text().replace("e / tl.sum(e, axis=0)", "e / tl.sum(e, axis=0) * 1.5"))
    code, changed, _ = suite(str(root / "level1"), "--scale", "0.004")
    assert code == 1 and changed["reused"] == 3
    assert statuses(changed)["23_RowSoftmax::23_RowSoftmax_new.py"] == "failed"
    # Other sizes are another suite: nothing is reused.
    code, rescaled, _ = suite(str(root / "level1"), "--scale", "0.003", "--restart")
    assert rescaled["reused"] == 0


def test_a_results_file_from_another_machine_or_versions_is_verified_again(tmp_path):
    """Verdicts and times belong to the GPU, driver and versions that made them: a results file carried
    elsewhere is not reused, and the suite says which items run again and why."""
    root = copy_tree(KB, tmp_path / "kb")
    args = (str(root / "level1"), "--scale", "0.004", "--rungs", "prechecks")
    code, first, _ = suite(*args)
    assert code == 0 and first["reused"] == 0
    environment = first["results"][0]["environment"]
    assert environment["kerneltui"] and "torch" in environment and "gpu" in environment and "driver" in environment
    code, again, _ = suite(*args)
    assert again["reused"] == 4 and again["reverified"] == []

    results_file = root / "level1" / ".kerneltui" / "suite-results.jsonl"
    lines = [json.loads(line) for line in results_file.read_text().splitlines()]
    for line in lines:  # as if the file had been made on an H100 with an older torch
        line["result"]["environment"].update(gpu="NVIDIA H100 80GB HBM3", driver="550.54", torch="2.9.0")
    results_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, moved, _ = suite(*args)
    assert code == 0 and moved["reused"] == 0
    assert {r["key"] for r in moved["reverified"]} == {r["key"] for r in first["results"]}
    why = moved["reverified"][0]["why"]
    assert "GPU NVIDIA H100 80GB HBM3 → " in why and "driver 550.54 → " in why and "torch 2.9.0 → " in why
    proc = run_cli("suite", *args, "--seeds", "1", timeout=900)  # the text says it too (the file matches now)
    assert "resuming: 4 verdicts" in proc.stdout, proc.stdout
    results_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = run_cli("suite", *args, "--seeds", "1", timeout=900)
    assert "verifying 4 again: made on another machine or versions (GPU NVIDIA H100 80GB HBM3 → " in proc.stdout


def test_an_interrupted_suite_prints_the_table_so_far(tmp_path):
    """Ctrl-C to a running suite: the verdicts that landed, as a table and a summary, and how to resume."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = copy_tree(KB, tmp_path / "kb")
    # A fifth problem, last in order, whose candidate takes minutes to import: the signal always reaches a
    # suite still at work (a warm engine verifies the other four in about 4 s, which could end the suite
    # before the signal arrived, with exit 0).
    level = root / "level1"
    (level / "99_SlowToLoad.py").write_text((level / "7_ScaledReLU.py").read_text())
    (level / "99_SlowToLoad_new.py").write_text("import time\ntime.sleep(600)\n" + (level / "7_ScaledReLU_new.py").read_text())
    proc = subprocess.Popen([sys.executable, "-m", "kerneltui", "suite", str(root / "level1"), "--scale", "0.004",
                             "--seeds", "1", "-j", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        seen.append(line)
        if line.startswith("  ok ") or not line:
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    text = "".join(seen) + out
    assert proc.returncode == 130, text + err
    assert "interrupted: " in text and "of 5 items verified" in text and "run the same command again" in text
    table = text[text.index("problem "):]
    assert "correct" in table and "7_ScaledReLU" in table, text


def run_summaries(report: dict) -> dict[str, str]:
    return {r["problem"]: next(g["summary"] for g in r["rungs"] if g["name"] == "run") for r in report["results"]}


def test_kernelbench_problems_sized_one_by_one(tmp_path):
    # Before, --scale took one factor for the whole suite (and PROBLEM:F was "invalid float value"):
    # scaling the one GB-sized problem down scaled every other one too.
    root = copy_tree(KB, tmp_path / "kb")
    code, report, _ = suite(str(root / "level1"), "--scale", "30_SoftsignWide:0.004", "--set", "23_RowSoftmax:dim=500",
                            "--rungs", "run")
    assert code == 0, report
    shapes = run_summaries(report)
    assert shapes["30_SoftsignWide"].startswith("out (16, 1568) float32"), shapes
    assert shapes["23_RowSoftmax"].startswith("out (16, 500) float32"), shapes
    assert shapes["7_ScaledReLU"].startswith("out (16, 257) float32"), shapes  # the published sizes
    # A problem's own factor wins over the suite's, which the others take.
    code, report, _ = suite(str(root / "level1"), "--scale", "0.5", "--scale", "30_SoftsignWide:0.004",
                            "--rungs", "run", "--restart")
    assert code == 0, report
    shapes = run_summaries(report)
    assert shapes["30_SoftsignWide"].startswith("out (16, 1568) float32"), shapes
    assert shapes["23_RowSoftmax"].startswith("out (16, 496) float32"), shapes


def test_a_size_for_a_problem_the_suite_lacks_is_a_usage_error(tmp_path):
    root = copy_tree(KB, tmp_path / "kb")
    for flags, said in ((["--set", "30_Softsign:dim=64"], "has no problem '30_Softsign'"),
                        (["--scale", "30_Softsign:0.01"], "did you mean 30_SoftsignWide?"),
                        (["--scale", "0.5", "--scale", "0.1"], "the suite's factor is already 0.5"),
                        (["--scale", "30_SoftsignWide:tiny"], "write a factor F or PROBLEM:F")):
        proc = run_cli("suite", str(root / "level1"), "--json", *flags)
        assert proc.returncode == 2, proc.stdout
        error = json.loads(proc.stdout)["error"]
        assert error["kind"] == "usage" and said in error["message"], error


def test_kernelbench_broken_and_torch_only_candidates_all_fail(tmp_path):
    root = copy_tree(KB, tmp_path / "kb")
    code, report, _ = suite(str(root / "level1"), "--candidates", str(root / "runs" / "broken"), "--scale", "0.004")
    assert code == 1
    assert statuses(report) == {"7_ScaledReLU::sample 0": "failed", "23_RowSoftmax::sample 0": "failed",
                                "23_RowSoftmax::sample 1": "failed", "30_SoftsignWide::sample 0": "failed",
                                "40_TallMatmul::sample 0": "failed"}
    assert report["summary"]["correct"] == 0

    code, report, _ = suite(str(root / "level1"), "--candidates", str(root / "runs" / "torch_only"),
                            "--results", str(tmp_path / "torch_only.jsonl"))
    assert code == 1
    result = {r["candidate"]: r for r in report["results"] if r["problem"] == "23_RowSoftmax"}["sample 0"]
    assert result["status"] == "failed" and result["backend"] == "triton"
    assert "torch.softmax" in result["failure"]
    assert report["summary"]["no_candidate"] == 3


def test_gpumode_problems_folder(tmp_path):
    root = copy_tree(GM, tmp_path / "gm")
    code, report, _ = suite(str(root))
    assert code == 0, report
    assert report["format"] == "gpumode"
    assert statuses(report) == {"histogram_py::submission.py": "correct", "prefixsum_py::submission.py": "correct",
                                "vectorscale::submission.py": "correct"}

    # A folder of candidates per problem: ranked within each problem, GPU MODE style.
    cands = tmp_path / "cands"
    (cands / "histogram_py").mkdir(parents=True)
    shutil.copy(root / "histogram_py/submission.py", cands / "histogram_py/atomics.py")
    shutil.copy(root / "histogram_py/solutions/wrong/empty.py", cands / "histogram_py/empty.py")
    shutil.copy(root / "prefixsum_py/solutions/wrong/empty.py", cands / "prefixsum_py.py")
    code, report, _ = suite(str(root), "--candidates", str(cands), "--results", str(tmp_path / "r.jsonl"))
    assert code == 1
    assert statuses(report) == {"histogram_py::atomics.py": "correct", "histogram_py::empty.py": "failed",
                                "prefixsum_py::prefixsum_py.py": "failed", "vectorscale::none": "no candidate"}

    text = run_cli("suite", str(root), "--candidates", str(cands), "--results", str(tmp_path / "r.jsonl")).stdout
    rows = [line.split() for line in text.splitlines() if line.startswith("histogram_py")]
    assert [(row[1], row[2], row[3]) for row in rows] == [("atomics.py", "1", "correct"), ("empty.py", "2", "FAILED")]
    assert "correctness only: no GPU ran this suite" in text


def test_a_problem_that_cannot_run_here_is_a_task_error_row(tmp_path):
    root = copy_tree(DATA / "gpumode_gpu", tmp_path / "g")
    code, report, _ = suite(str(root))
    assert code == 2
    (result,) = report["results"]
    assert result["status"] == "task error" and "needs a CUDA GPU" in result["failure"]
    assert report["summary"]["task_errors"] == 1


def test_a_folder_of_native_tasks(tmp_path):
    root = tmp_path / "tasks"
    for name in ("vector_add", "softmax"):
        copy_tree(EXAMPLES / name, root / name)
    toml = root / "softmax" / "task.toml"
    toml.write_text(toml.read_text().replace('backend = "triton"', 'backend = "triton"\nseeds = true'))
    code, report, _ = suite(str(root))
    assert code == 2
    assert statuses(report) == {"softmax::kernel.py": "task error", "vector_add::kernel.py": "correct"}
    failure = next(r["failure"] for r in report["results"] if r["problem"] == "softmax")
    assert f"{toml}:" in failure and "seeds must be a positive integer, not the boolean true" in failure


def test_not_a_suite_is_a_usage_error(tmp_path):
    proc = run_cli("suite", str(tmp_path), "--json")
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert error["kind"] == "usage" and "no problems found" in error["message"]
