"""The benchmark and roofline rungs on a real GPU, end to end through ``kerneltui check``.

Each reward hack the benchmark must catch is a kernel here that passes the correctness rung
(it computes the right answer when checked) and must then fail the benchmark or the roofline.
Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_benchmark_gpu.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kerneltui.core.bench.stats import STOP_WALL_BOUND
from tests.cheats.gallery import ADD_KERNEL, RACE_LOST_EARLY
from tests.conftest import run_cli

# Each check goes through the test process's engine, as a person's checks go through theirs (each
# check's [benchmark] settings travel with its run): every check still gets fresh workers, only their
# start is taken out of the wait.
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("commands_share_an_engine")]

# Honest for the checks (fewer than 40 calls), then returns the output it computed for the same
# input pointers before: the classic cache that a benchmark reusing its inputs would reward.
CACHING = ADD_KERNEL + '''
_calls = 0
_cache = {}


def custom_kernel(x, y):
    global _calls
    _calls += 1
    key = (x.data_ptr(), y.data_ptr(), x.numel())
    if _calls > 40 and key in _cache:
        return _cache[key]
    out = torch.empty_like(x)
    launch(x, y, out)
    _cache[key] = out
    return out
'''

# Runs the kernel on a side stream that waits for the caller's stream but is never joined back:
# the caller's end event does not cover it.
SIDE_STREAM = ADD_KERNEL + '''
_side = None


def custom_kernel(x, y):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    out = torch.empty_like(x)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        launch(x, y, out)
    return out
'''

# Worse: the side stream does not even wait, so it can start while the flush still runs, before
# the start event.
RACY_SIDE_STREAM = ADD_KERNEL + '''
_side = None


def custom_kernel(x, y):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    out = torch.empty_like(x)
    with torch.cuda.stream(_side):
        launch(x, y, out)
    return out
'''

# Correct, but tampers with the benchmark's stopping rule when imported (one run is "enough").
PATCHES_THE_HARNESS = ADD_KERNEL + """
# A built module name: a plain `import kerneltui...` is a strict precheck finding, this reaches the runtime guard.
_timing = __import__("kerneltui.core.worker.child." + "timing", fromlist=["stop_reason"])

_timing.stop_reason = lambda *args, **kwargs: "converged"


def custom_kernel(x, y):
    out = torch.empty_like(x)
    launch(x, y, out)
    return out
"""


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kerneltui-cache")  # peaks measured once for the module


def _env(cache_dir: Path, **settings: str) -> dict[str, str]:
    env = {"KERNELTUI_CACHE_DIR": str(cache_dir), "KERNELTUI_BENCHMARK_TORCH_COMPILE": "false",
           "KERNELTUI_BENCHMARK_MAX_SECONDS": "2"}
    env.update({f"KERNELTUI_BENCHMARK_{k.upper()}": v for k, v in settings.items()})
    return env


def _check(task: Path, env: dict[str, str]) -> dict[str, dict]:
    proc = run_cli("check", str(task), "--rungs", "roofline", "--seeds", "1", "--json", env=env, timeout=600)
    report = json.loads(proc.stdout)
    return {r["name"]: r for r in report["rungs"]}


def test_vector_add_end_to_end(example_task, cache_dir):
    task = example_task("vector_add")
    rungs = _check(task, _env(cache_dir, torch_compile="true", max_seconds="10"))
    assert rungs["correctness"]["status"] == "ok", rungs["correctness"]
    bench = rungs["benchmark"]
    assert bench["status"] in ("ok", "warn"), bench["error"] or bench["summary"]
    m = bench["metrics"]
    (case,) = m["cases"]
    cand = case["candidate"]
    assert cand["runs"] >= 10
    assert cand["total_ms"] >= 100 or cand["stopped"] in ("time cap", STOP_WALL_BOUND)
    assert 0.1 < cand["median_ms"] < 1.0  # 768 MB moved at a few TB/s
    assert cand["q1_ms"] <= cand["median_ms"] <= cand["q3_ms"] and cand["min_ms"] <= cand["q1_ms"]
    assert case["recheck"]["checked"] >= cand["runs"] + cand["warmup_runs"]
    assert case["recheck"]["one_pass"] == case["recheck"]["checked"]  # one float32 output each, one pass
    spent = cand["spent_s"]  # where the series' wall time went, each side's parts inside its round trips
    assert 0 < spent["judge: verify"] <= spent["judge"] and 0 < spent["kernel worker: calls"] <= spent["kernel worker"]
    assert not case["straggle"]["flagged"], case["straggle"]
    assert case["straggle"]["busy_p90_us"] > 0  # the spin-kernel calibration ran
    assert 0.5 < case["speedup_vs_reference"] < 2.0  # torch's x + y is also memory-bound
    assert case["torch_compile"].get("median_ms") or case["torch_compile"].get("error")
    assert m["persisting_l2"] == "reset before every call"
    assert m["flush_bytes"] >= 2 * m["l2_bytes"] > 0
    assert m["candidate_s"] < 60
    roof = rungs["roofline"]
    assert roof["status"] == "ok", roof["error"]
    assert 50 < roof["metrics"]["pct_roofline"] <= 110
    assert roof["metrics"]["cases"][0]["bound"] == "memory"
    history = json.loads(run_cli("history", str(task), "--json").stdout)
    last = history["entries"][-1]
    assert last["median_ms"] == pytest.approx(cand["median_ms"])
    assert last["pct_roofline"] == pytest.approx(roof["metrics"]["pct_roofline"])
    assert history["series"]["points"][-1]["median_ms"] == pytest.approx(cand["median_ms"])


def test_the_second_check_reuses_the_baselines(example_task, cache_dir):
    task = example_task("vector_add")
    env = _env(cache_dir, torch_compile="true")
    first = _check(task, env)["benchmark"]
    second = _check(task, env)["benchmark"]
    assert first["status"] in ("ok", "warn") and second["status"] in ("ok", "warn"), second["error"]
    assert first["metrics"]["reference_s"] > 0
    assert second["metrics"]["reference_s"] == 0 and second["metrics"]["torch_compile_s"] == 0
    for target in ("reference", "torch_compile"):
        origin = second["metrics"]["baselines"][target]
        assert origin["kept"] and origin["kept_at"] and origin["note"].startswith("kept from"), origin
        assert not first["metrics"]["baselines"][target]["kept"], first["metrics"]["baselines"]
    assert "(kept from " in second["summary"], second["summary"]
    (case,) = second["metrics"]["cases"]
    assert 0.5 < case["speedup_vs_reference"] < 2.0


def test_the_checks_give_a_pass_so_far_and_the_final_verdict_comes_before_the_dump(example_task, cache_dir):
    """On a GPU the checks announce a PASS so far before the benchmark's result; the final verdict
    follows the roofline, before the dump, which only describes the version."""
    task = example_task("vector_add")
    proc = run_cli("check", str(task), "--rungs", "roofline,dump", "--seeds", "1", env=_env(cache_dir), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()

    def first(prefix: str) -> int:
        return next(i for i, line in enumerate(lines) if line.startswith(prefix))

    so_far = first("verdict: PASS so far (the checks; benchmark, roofline may still fail it)")
    final = first("verdict: PASS · ")
    assert first("[correctness] ok") < so_far < first("[benchmark]") < first("[roofline]") < final < first("[dump]")
    assert "(dump still to come)" in lines[final]


def test_a_reference_that_makes_its_inputs_on_the_host_is_timed_within_the_bound(example_task, cache_dir):
    """The issue's case: 2^26 floats per input drawn by a CPU generator, then moved to the GPU (about
    1 s per set); only the two base sets per case come from it, the rest is made on the GPU."""
    task = example_task("vector_add")
    ref = task / "reference.py"
    ref.write_text(ref.read_text().replace("torch.Generator(device=device)", "torch.Generator()").replace(
        ", device=device, dtype=torch.float32)", ", dtype=torch.float32).to(device)"))
    assert ref.read_text().count(".to(device)") == 2
    bench = _check(task, _env(cache_dir, max_wall_s="15"))["benchmark"]
    assert bench["status"] in ("ok", "warn"), bench["error"] or bench["summary"]
    (case,) = bench["metrics"]["cases"]
    for target in ("candidate", "reference"):
        pool = case[target]["pool"]
        assert pool["fresh_inputs"] == "derive" and pool["task_generated"] == 2, (target, pool)
    assert case["candidate"]["runs"] >= 10
    assert bench["metrics"]["reference_s"] + bench["metrics"]["candidate_s"] < 15 + 20  # the bound, plus loading


def test_a_kernel_that_caches_its_output_is_caught(example_task, cache_dir):
    task = example_task("vector_add", kernel_text=CACHING)
    rungs = _check(task, _env(cache_dir))
    assert rungs["correctness"]["status"] == "ok", rungs["correctness"]
    bench = rungs["benchmark"]
    assert bench["status"] == "fail"
    assert "returned a wrong result" in bench["error"] and "cache keyed on pointers" in bench["error"]
    assert rungs["roofline"]["status"] == "skip"


def test_work_left_on_a_side_stream_is_caught(example_task, cache_dir):
    task = example_task("vector_add", kernel_text=SIDE_STREAM)
    rungs = _check(task, _env(cache_dir))
    assert rungs["correctness"]["status"] == "ok", rungs["correctness"]
    bench = rungs["benchmark"]
    assert bench["status"] == "fail"
    assert "still busy after the timed stream finished" in bench["error"]


def test_a_side_stream_racing_the_flush_is_caught(example_task, cache_dir):
    task = example_task("vector_add", kernel_text=RACY_SIDE_STREAM)
    rungs = _check(task, _env(cache_dir))
    if rungs["correctness"]["status"] == "fail":
        # The race can be lost before any timing: the output was read before the side stream wrote it
        # (seen on the H200: "a second run with different garbage in fresh memory gave a wrong result"),
        # or the operator record saw the kernel read a tensor no recorded operator wrote (seen on an H100).
        assert any(phrase in rungs["correctness"]["error"] for phrase in RACE_LOST_EARLY), rungs["correctness"]
        assert rungs["benchmark"]["status"] == "skip"
        return
    bench = rungs["benchmark"]
    assert bench["status"] == "fail"
    # it either read the NaN trap laid during the flush, or finished after the timed stream
    assert "returned a wrong result" in bench["error"] or "still busy after the timed stream finished" in bench["error"]


def test_a_kernel_that_patches_the_harness_is_caught(example_task, cache_dir):
    task = example_task("vector_add", kernel_text=PATCHES_THE_HARNESS)
    rungs = _check(task, _env(cache_dir))
    assert rungs["correctness"]["status"] == "ok", rungs["correctness"]
    bench = rungs["benchmark"]
    assert bench["status"] == "fail"
    assert "benchmark machinery replaced before the benchmark" in bench["error"]
    assert "kerneltui.core.worker.child.timing.stop_reason" in bench["error"]


def test_a_time_under_the_roofline_floor_fails_as_impossible(example_task, cache_dir):
    task = example_task("vector_add")
    ref = task / "reference.py"
    # The task claims 50× the traffic a vector add moves: the honest kernel now looks impossibly fast.
    ref.write_text(ref.read_text().replace("return 3.0 * 4 * n", "return 50 * 3.0 * 4 * n"))
    rungs = _check(task, _env(cache_dir))
    assert rungs["benchmark"]["status"] in ("ok", "warn")
    roof = rungs["roofline"]
    assert roof["status"] == "fail"
    assert roof["summary"].startswith("impossible:")
    assert "physical floor" in roof["error"] and "bytes_moved()" in roof["error"]
    assert roof["metrics"]["cases"][0]["impossible"] is True


def test_graph_mode_for_a_launch_bound_kernel(example_task, cache_dir):
    task = example_task("vector_add")
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("n = 67108864", "n = 65536"))
    rungs = _check(task, _env(cache_dir, graph="on", max_seconds="2"))
    bench = rungs["benchmark"]
    assert bench["status"] in ("ok", "warn"), bench["error"]
    graph = bench["metrics"]["cases"][0]["graph"]
    assert "error" not in graph, graph
    assert graph["runs"] >= 20
    assert graph["replay_median_ms"] > graph["flush_median_ms"] > 0
    assert 0 < graph["median_ms"] < bench["metrics"]["cases"][0]["candidate"]["median_ms"] + 0.01


def test_device_peaks_are_measured_once_and_cached(cache_dir):
    env = {"KERNELTUI_CACHE_DIR": str(cache_dir)}
    first = json.loads(run_cli("device", "--json", env=env, timeout=600).stdout)
    assert first["gpu"] is True
    peaks = first["peaks"]
    assert peaks["copy_gbps"] > 500 and peaks["l2_bytes"] > 0 and peaks["sm_count"] > 0
    assert peaks["matmul_tflops"]["bf16"] > 50 and peaks["matmul_tflops"]["fp32"] > 5
    # The second run reads the cache, and prints as text (each `kerneltui device` starts a worker: ~8 s).
    text = run_cli("device", env=env).stdout
    assert "(cached in " in text and "measured now" not in text
    assert f"{peaks['copy_gbps']:>9.0f} GB/s" in text
    assert "memory copy" in text and "bf16 tensor-core matmul" in text and "TFLOP/s" in text
