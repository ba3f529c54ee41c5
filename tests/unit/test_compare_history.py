"""Interleaved comparisons in the task's history (core/compare_history.py, a real SQLite file): the
table added to a history written before it, and the chart drawing a comparison's interval."""

from __future__ import annotations

import math
import random
import sqlite3

import pytest

from kerneltui.core import compare_history
from kerneltui.core.agent.comparison import TrialComparison
from kerneltui.core.agent.trial_compare import record_in_history
from kerneltui.core.bench import compare
from kerneltui.core.bench.device_peaks import device_key
from kerneltui.core.history import SCHEMA_VERSION, HistoryStore
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task_loaders.load import load_task
from kerneltui.ui.adapters.history import StoreHistory
from kerneltui.ui.widgets.history_chart import render_chart
from tests.ui.test_panes import COLOURS
from tests.unit.test_history import CHECKS, GPU, N, _bench_result, _report

SOURCES = ("# version 1\n", "# version 2\n")


def _tables(path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _twenty_percent_faster(b_name: str = "B") -> compare.CaseComparison:
    rng = random.Random(5)
    return compare.compare_case(f"n={N}", [math.log(0.8) + rng.gauss(0, 0.01) for _ in range(60)],
                                a_name="the file on disk", b_name=b_name)


@pytest.fixture
def task(example_task):
    return load_task(example_task("vector_add"))


def test_a_history_written_before_comparisons_gets_the_table_and_keeps_its_runs(task):
    store = HistoryStore.for_task(task)
    for source, ms in zip(SOURCES, (0.25, 0.2), strict=True):
        store.record(task, source, _report([*CHECKS, _bench_result(ms)], GPU, source), RunOptions(origin="check"))
    assert "comparisons" not in _tables(store.path)  # as every history before it
    key = store.series().device_key
    assert compare_history.between(store.path, key, f"n={N}") == {}  # read without the table: nothing, no error

    found = _twenty_percent_faster()
    a, b = (_report([], GPU, s).source_hash for s in SOURCES)
    assert compare_history.record(store.path, a, b, GPU, [(found.label, found.verdict)]) == 1
    assert "comparisons" in _tables(store.path)
    assert [e.number for e in store.entries()] == [1, 2] and len(store.series().points) == 2
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == str(SCHEMA_VERSION)
    row = compare_history.between(store.path, key, f"n={N}")[(a, b)]
    assert row.direction == "faster" and row.change == pytest.approx(-0.2, abs=0.01) and row.calls_each == 120
    assert compare_history.between(store.path, key, "n=1") == {}  # another case: no comparison


def test_the_chart_draws_the_comparisons_interval_against_the_previous_version(task):
    store = HistoryStore.for_task(task)
    for source, ms in zip(SOURCES, (0.25, 0.2), strict=True):
        store.record(task, source, _report([*CHECKS, _bench_result(ms)], GPU, source), RunOptions(origin="check"))
    history = StoreHistory(task)
    before = history.load()
    assert [p.vs_previous for p in before.points] == ["", ""]  # each version's own spread

    found = _twenty_percent_faster()
    a, b = (_report([], GPU, s).source_hash for s in SOURCES)
    compare_history.record(store.path, a, b, GPU, [(found.label, found.verdict)])
    first, second = history.load().points
    assert first.vs_previous == "" and (first.low_us, first.high_us) == (before.points[0].low_us, before.points[0].high_us)
    assert second.vs_previous.startswith("20.") and " % faster (95 % CI " in second.vs_previous
    assert found.verdict.low is not None and found.verdict.high is not None
    assert second.low_us == pytest.approx(first.median_us * (1 + found.verdict.low))
    assert second.high_us == pytest.approx(first.median_us * (1 + found.verdict.high))
    assert second.high_us < first.median_us  # the whole interval below the previous version: faster

    text = render_chart(history.load(), "us", 120, 20, COLOURS).plain
    assert "┃" in text and "┃ 95 % CI vs previous" in text
    assert f"vs previous: {second.vs_previous}" in text.splitlines()[0]



def test_a_trials_comparison_is_kept_for_the_chart_or_says_why_not(task):
    found = _twenty_percent_faster("p2")
    proposal = SOURCES[1]
    a, b = (_report([], GPU, s).source_hash for s in SOURCES)
    comparison = TrialComparison.of_cases([found], a, ("the file on disk", "p2"))
    assert record_in_history(task, comparison, proposal, GPU) == ""
    path = HistoryStore.for_task(task).path
    row = compare_history.between(path, device_key(GPU), f"n={N}")[(a, b)]
    assert row.direction == "faster" and row.text.startswith("p2 is 20.")
    assert record_in_history(task, TrialComparison.not_compared("side work"), proposal, GPU) == ""  # nothing to keep
    path.unlink()
    path.mkdir()  # a history that cannot be written: the trial goes on, the reason is said
    problem = record_in_history(task, comparison, proposal, GPU)
    assert problem.startswith(f"the comparison could not be kept in {path} (")
    assert problem.endswith("the chart will not draw its interval")
