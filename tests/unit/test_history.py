"""The per-task history (a real SQLite file), the roofline rung's verdicts, and ``kerneltui history``."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from kerneltui.core.bench import report as benchreport
from kerneltui.core.bench.device_peaks import DevicePeaks
from kerneltui.core.history import SCHEMA as history_schema
from kerneltui.core.history import HistoryError, HistoryStore, bench_rows, observer_for
from kerneltui.core.loop import RunReport
from kerneltui.core.rungs import roofline as roofline_rung
from kerneltui.core.rungs.context import RunContext, RunOptions
from kerneltui.core.rungs.result import RungResult, SourceLocation, fail, ok, skip
from kerneltui.core.task import source_hash
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.parent.pool import WorkerPool
from kerneltui.settings.bench import BenchSettings
from tests.conftest import fill_disk, run_cli, small_tmpfs

N = 1 << 26
GPU = {"gpu": True, "name": "NVIDIA H200", "driver": "570.1", "sm_clock_max_mhz": "1980", "mem_clock_max_mhz": "3201",
       "sm_count": 132, "memory_bytes": 150_000_000_000, "torch": "2.11.0+cu130", "triton": "3.6.0",
       "cuda_runtime": "13.0", "l2_bytes": 62914560, "arch": "sm_90a"}
CPU = {"gpu": False, "name": "CPU (no GPU)", "torch": "2.13.0+cpu", "triton": "3.6.0", "interpreter": True}
PEAKS = DevicePeaks(name="NVIDIA H200", key="nvidia-h200-x", measured_at=0.0, copy_gbps=4200.0,
                    matmul_tflops={"tf32": 400.0, "bf16": 760.0}, l2_bytes=62914560)


def _raw_series(ms: float, runs: int, seed: int) -> dict:
    rng = random.Random(seed)
    return {"times_ms": [ms * (1 + rng.gauss(0, 0.002)) for _ in range(runs)], "host_us": [10.0] * runs,
            "straggle_us": [5.0] * runs, "idle_straggle_us": [5.0] * 30, "warmup_ms": [ms] * 3,
            "stopped": "converged", "wall_s": 0.4, "warmup_s": 0.02, "failure": None, "threads_left": 0}


def _bench_result(ms: float, failure: dict | None = None) -> RungResult:
    runs = int(150 / ms) + 1
    cand = {"index": 0, "label": f"n={N}", "params": {"n": N}, "target": "candidate", "dtype": "float32",
            "dtypes": ["float32", "float32"], "recheck": {"checked": runs + 3, "quick": runs + 3, "full": 0},
            **_raw_series(ms, runs, 1), "failure": failure}
    setup = {"cases": [{"index": 0, "label": f"n={N}", "params": {"n": N}, "flops": float(N), "bytes": 12.0 * N}]}
    ref = {"cases": [{"index": 0, "label": f"n={N}", **_raw_series(0.21, 800, 2)}]}
    comp = {"cases": [{"index": 0, "label": f"n={N}", **_raw_series(0.20, 800, 3)}]}
    verdict = benchreport.build(setup, ref, comp, {"cases": [cand]}, PEAKS, BenchSettings())
    if verdict.status == "fail":
        return fail("benchmark", verdict.error or "", metrics=verdict.metrics, details=verdict.details)
    return ok("benchmark", verdict.summary, metrics=verdict.metrics, details=verdict.details)


async def _roofline_result(task, bench: RungResult) -> RungResult:
    ctx = RunContext(task=task, source="", files={}, options=RunOptions(), pool=WorkerPool("torch"), run_id="r",
                     emit=lambda event: None, source_hash="h", version_dir=task.version_dir("h"))
    ctx.data.benchmark = bench.metrics
    ctx.data.device_peaks = PEAKS
    return await roofline_rung.run(ctx)


def _report(results: list[RungResult], device: dict, source: str, ok_: bool = True) -> RunReport:
    return RunReport(run_id="run" + source_hash(source)[:4], task="vector_add", ok=ok_, results=results,
                     device=device, source_hash=source_hash(source), duration_s=3.5)


CHECKS = [ok("prechecks", "clean"), ok("compile", "add_kernel"), ok("run", "out"), ok("correctness", "12 checks")]


@pytest.fixture
def task(example_task):
    return load_task(example_task("vector_add"))


async def test_roofline_rung_reports_percent_and_fails_impossible_times(task):
    good = await _roofline_result(task, _bench_result(0.2))
    assert good.status == "ok", good.error
    assert "of roofline" in good.summary and "memory-bound" in good.summary
    assert 90 < good.metrics["pct_roofline"] <= 100
    case = good.metrics["cases"][0]
    assert case["bound"] == "memory" and case["achieved_gbps"] == pytest.approx(12.0 * N / 0.2e-3 / 1e9, rel=0.01)
    cheat = await _roofline_result(task, _bench_result(0.02))  # ten times faster than the copy bandwidth allows
    assert cheat.status == "fail"
    assert cheat.summary.startswith("impossible:")
    assert "physical floor" in cheat.error and f"n={N}" in cheat.error


async def test_roofline_rung_explains_a_task_without_declared_work(task):
    bench = _bench_result(0.2)
    for case in bench.metrics["cases"]:
        case["flops"] = case["bytes"] = None
    result = await _roofline_result(task, bench)
    assert result.status == "skip" and "flops(**params)" in result.summary
    bench.metrics["cases"][0]["flops_error"] = "reference.py: flops(n=1) raised ZeroDivisionError: division by zero"
    result = await _roofline_result(task, bench)
    assert result.status == "fail" and "ZeroDivisionError" in result.error


async def test_history_records_versions_and_answers_the_chart(task):
    store = HistoryStore.for_task(task)
    assert store.entries() == [] and store.series().points == []
    sources = [f"# version {i}\n" for i in range(5)]
    reports = []
    # 1: on a CPU, benchmark skipped
    reports.append(_report([*CHECKS, skip("benchmark", "no GPU: benchmarks need one"), skip("roofline", "benchmark was skipped")],
                           CPU, sources[0]))
    # 2, 3: on the GPU, 0.25 ms then 0.2 ms
    for i, ms in ((1, 0.25), (2, 0.2)):
        bench = _bench_result(ms)
        reports.append(_report([*CHECKS, bench, await _roofline_result(task, bench)], GPU, sources[i]))
    # 4: the recheck caught a cache: no numbers may reach the chart
    caught = _bench_result(0.01, failure={"phase": "timed", "call": 40, "seed": 99, "reason": "out: wrong"})
    reports.append(_report([*CHECKS, caught, skip("roofline", "benchmark failed")], GPU, sources[3], ok_=False))
    # 5: the roofline found the time impossible: recorded, but not a valid point
    fast = _bench_result(0.02)
    reports.append(_report([*CHECKS, fast, await _roofline_result(task, fast)], GPU, sources[4], ok_=False))
    numbers = [store.record(task, src, rep, RunOptions(origin="check")) for src, rep in zip(sources, reports, strict=True)]
    assert numbers == [1, 2, 3, 4, 5]

    entries = store.entries()
    assert [e.number for e in entries] == numbers
    e1, e2, e3, e4, e5 = entries
    assert not e1.gpu and e1.median_ms is None and e1.note.startswith("benchmark skipped: no GPU")
    assert e2.gpu and e2.device_name == "NVIDIA H200" and e2.versions["torch"] == "2.11.0+cu130"
    assert e2.median_ms == pytest.approx(0.25, rel=0.01) and e3.median_ms == pytest.approx(0.2, rel=0.01)
    assert e3.speedup_vs_reference == pytest.approx(0.21 / 0.2, rel=0.02)
    assert e3.speedup_vs_compile == pytest.approx(1.0, rel=0.02)
    assert 90 < e3.pct_roofline <= 100 and e3.q1_ms < e3.median_ms < e3.q3_ms and e3.rel_stderr < 0.005
    assert e3.statuses["roofline"] == "ok" and e3.origin == "check" and e3.ok
    assert e4.median_ms is None and e4.note.startswith("benchmark: ") and "seed 99" in e4.note
    assert not e5.ok and e5.note.startswith("roofline: ")
    assert store.entries(limit=2)[0].number == 4

    series = store.series()
    assert series.case_label == f"n={N}" and series.cases == [f"n={N}"] and series.device_name == "NVIDIA H200"
    assert [p.number for p in series.points] == [2, 3, 5]
    assert [p.valid for p in series.points] == [True, True, False]
    assert series.points[1].q1_ms < series.points[1].median_ms < series.points[1].q3_ms
    assert series.reference_ms == pytest.approx(0.21, rel=0.01)
    assert series.compile_ms == pytest.approx(0.20, rel=0.01)
    assert series.floor_ms == pytest.approx(12.0 * N / 4200e9 * 1e3)
    assert json.dumps(series.to_dict())
    assert store.series(device="cpu").points == []

    assert store.source(3) == sources[2] and store.source(99) is None
    rungs = store.rung_results(3)
    assert [r.name for r in rungs] == ["prechecks", "compile", "run", "correctness", "benchmark", "roofline"]
    assert rungs[4].metrics["cases"][0]["candidate"]["runs"] > 10


def test_rung_results_round_trip_with_locations(task):
    store = HistoryStore.for_task(task)
    failed = fail("compile", "kernel.py:7: bad", location=SourceLocation("kernel.py", 7), details="x" * 50_000)
    n = store.record(task, "src", _report([failed], CPU, "src", ok_=False))
    (back,) = store.rung_results(n)
    assert back.location == SourceLocation("kernel.py", 7) and back.error == "kernel.py:7: bad"
    assert len(back.details) == 20_000  # long worker output is trimmed to its end
    assert store.entry(n).note == "compile: kernel.py:7: bad"


def test_bench_rows_never_carry_a_rejected_number():
    caught = _bench_result(0.01, failure={"phase": "timed", "call": 1, "seed": 1, "reason": "wrong"})
    assert bench_rows([caught]) == []
    rows = bench_rows([_bench_result(0.2)])
    assert {(r["target"], r["mode"]) for r in rows} == {("candidate", "eager"), ("reference", "eager"), ("torch_compile", "eager")}


def test_baselines_are_cached_by_key(task):
    store = HistoryStore.for_task(task)
    assert store.get_baseline("k") is None
    store.put_baseline("k", "torch_compile", {"cases": [{"index": 0, "times_ms": [1.0]}]})
    data, when = store.get_baseline("k")
    assert data["cases"][0]["times_ms"] == [1.0] and when > 0


def test_observer_records_and_names_the_version(task):
    observe = observer_for(task)
    report = _report(CHECKS, CPU, "text")
    assert observe(task, "text", report, RunOptions(record=False)) is None
    assert report.version_id is None and HistoryStore.for_task(task).entries() == []
    assert observe(task, "text", report, RunOptions()) == 1
    assert report.version_id == "1"


def test_one_run_is_one_row_whoever_records_it(task):
    """Two stores on one file (two front ends, the engine and a command) recording the same run id."""
    report = _report(CHECKS, CPU, "text")
    first = HistoryStore.for_task(task).record(task, "text", report)
    again = HistoryStore(HistoryStore.for_task(task).path).record(task, "text", report)
    assert again == first
    assert [e.number for e in HistoryStore.for_task(task).entries()] == [first]
    other = RunReport(**{**report.__dict__, "run_id": "another"})
    assert HistoryStore.for_task(task).record(task, "text", other) == first + 1  # a second run of one text


def test_one_row_per_run_id_whoever_writes_it(task):
    """A run recorded by the loop that verified it and written again by a front end stays one version."""
    store = HistoryStore.for_task(task)
    report = _report(CHECKS, CPU, "text")
    first = store.record(task, "text", report, RunOptions(origin="auto"))
    assert store.record(task, "text", report, RunOptions(origin="auto")) == first
    other = store.record(task, "text", _report(CHECKS, CPU, "other"))
    assert [e.number for e in store.entries()] == [first, other]


def test_a_history_from_a_newer_kerneltui_is_refused_with_a_reason(task):
    store = HistoryStore.for_task(task)
    store.record(task, "s", _report(CHECKS, CPU, "s"))
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    with pytest.raises(HistoryError, match="newer kerneltui"):
        store.entries()
    Path(store.path).write_bytes(b"this is not a database" * 100)
    with pytest.raises(HistoryError, match="damaged: move it away"):
        store.entries()


# ----------------------------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------------------------


async def test_history_command_lists_versions(task):
    store = HistoryStore.for_task(task)
    proc = run_cli("history", str(task.root))
    assert proc.returncode == 0 and "no versions recorded for vector_add yet" in proc.stdout
    bench = _bench_result(0.2)
    store.record(task, "first\n", _report([*CHECKS, skip("benchmark", "no GPU: benchmarks need one")], CPU, "first\n"))
    store.record(task, "second\n", _report([*CHECKS, bench, await _roofline_result(task, bench)], GPU, "second\n"))
    proc = run_cli("history", str(task.root))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("history of vector_add: 2 checked versions")
    assert "median" in lines[1] and "vs ref" in lines[1] and "roofline" in lines[1]
    assert "no GPU · benchmark skipped" in lines[2]
    row = lines[3]
    assert row.split()[0] == "2" and "PASS" in row and "µs" in row and "1.05×" in row and "NVIDIA H200" in row
    assert "%" in row
    assert lines[-1].startswith(f"case n={N} on NVIDIA H200: best #2") and "reference" in lines[-1] and "roofline floor" in lines[-1]

    proc = run_cli("history", str(task.root), "--json")
    data = json.loads(proc.stdout)
    assert [e["number"] for e in data["entries"]] == [1, 2]
    assert data["entries"][1]["median_ms"] == pytest.approx(0.2, rel=0.01)
    assert data["series"]["points"][0]["number"] == 2

    proc = run_cli("history", str(task.root), "--source", "1")
    assert proc.returncode == 0 and proc.stdout == "first\n"
    proc = run_cli("history", str(task.root), "--source", "7")
    assert proc.returncode == 1 and "no version 7" in proc.stderr
    proc = run_cli("history", str(task.root), "--limit", "1")
    assert "1 checked version " in proc.stdout


def test_a_full_disk_is_not_called_a_damaged_history(task, tmp_path):
    """SQLite's "database or disk is full" on a full disk: the file is intact, and the message must not
    advise moving it away (that would lose every version)."""
    with small_tmpfs(tmp_path / "disk", "1m") as disk:
        store = HistoryStore(disk / "history.sqlite")
        store.record(task, "s", _report(CHECKS, CPU, "s"))
        fill_disk(disk)
        with pytest.raises(HistoryError) as caught:
            for n in range(200):  # until the WAL or the database needs a page the disk does not have
                text = "x" * 4000 + str(n)
                store.record(task, text, _report(CHECKS, CPU, text))
        message = str(caught.value)
        assert "move it away" not in message and "move the file away" not in message
        assert "not damaged" in message and "free space" in message
        (disk / "filler").unlink()  # space again: the history is there, as the message said
        assert [e.number for e in HistoryStore(disk / "history.sqlite").entries()][:1] == [1]


def test_a_file_that_is_no_database_is_called_damaged(task, tmp_path):
    path = tmp_path / "history.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(HistoryError, match="damaged: move it away"):
        HistoryStore(path).entries()


# ----------------------------------------------------------------------------------------------
# who made the text (schema 2)
# ----------------------------------------------------------------------------------------------

# A file kerneltui wrote before schema 2: today's tables without runs.author, and one run.
SCHEMA_1 = history_schema.replace("author TEXT NOT NULL DEFAULT 'unknown', ", "") + """
INSERT INTO meta VALUES ('schema', '1');
INSERT INTO sources VALUES ('oldhash', 'old\n', 'kernel.py', 1.0);
INSERT INTO runs(source_hash, run_id, task, created_at, origin, ok, duration_s, gpu, device_name, device_key,
                 device_json) VALUES ('oldhash', 'oldrun', 'vector_add', 1.0, 'check', 1, 2.0, 0, 'CPU', 'cpu', '{}');
"""


def test_a_history_of_schema_1_reads_as_unknown_authors_then_migrates_on_write(task):
    path = task.state_dir / "history.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA_1)
        assert "author" not in {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
    store = HistoryStore(path)
    (old,) = store.entries()  # read as it is: no write, no migration
    assert old.author == "unknown" and old.origin == "check"

    store.record(task, "mine\n", _report(CHECKS, CPU, "mine\n"), RunOptions(origin="save"))
    store.record(task, "agent's\n", _report(CHECKS, CPU, "agent's\n"),
                 RunOptions(origin="proposal", author="agent p4, edited by you"))
    # The same text checked again by a command that does not know who wrote it: its earlier author.
    again = _report(CHECKS, CPU, "agent's\n")
    again.run_id = "again"
    store.record(task, "agent's\n", again, RunOptions(origin="check"))
    assert [(e.origin, e.author) for e in store.entries()] == [
        ("check", "unknown"), ("save", "you"), ("proposal", "agent p4, edited by you"),
        ("check", "agent p4, edited by you")]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == "2"


def test_history_command_says_who_made_each_version(task):
    store = HistoryStore.for_task(task)
    store.record(task, "first\n", _report(CHECKS, CPU, "first\n"), RunOptions(origin="check"))
    store.record(task, "second\n", _report(CHECKS, CPU, "second\n"),
                 RunOptions(origin="proposal", author="agent p2, edited by you"))
    proc = run_cli("history", str(task.root))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].split()[:5] == ["#", "when", "version", "result", "by"]
    assert " you " in lines[2] and "agent p2, edited by you" in lines[3]
    data = json.loads(run_cli("history", str(task.root), "--json").stdout)
    assert [e["author"] for e in data["entries"]] == ["you", "agent p2, edited by you"]
