"""A kernel cannot plant or alter the benchmark's kept baselines (core.rungs.baselines).

The keep lives in the task's history store, written by the parent alone. A kernel that tries, from
its real sandboxed worker (Triton interpreter), to alter the kept rows, insert one of its own, or
replace the store file is refused by the box; the keep afterwards is the honest one, byte for byte,
and the next benchmark reads that. A run whose box cannot refuse it does not read the keep
(tests/unit/test_baseline_cache.py).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

from kerneltui.core.history import HistoryStore
from kerneltui.core.task_loaders.load import load_task
from tests.cheats.conftest import rung
from tests.cheats.gallery import baseline_plant
from tests.unit.test_baseline_cache import Judge, _box, baselines

HONEST = {"target": "reference", "cases": [{"index": 0, "label": "n=67108864", "times_ms": [0.2] * 20,
                                            "stopped": "converged"}]}


def _rows(store: Path) -> list[tuple[str, float, str]]:
    with sqlite3.connect(store) as conn:
        return sorted(conn.execute("SELECT key, created_at, data FROM baselines").fetchall())


def test_a_kernel_cannot_plant_or_alter_a_kept_baseline(gallery) -> None:
    out = Path(f"/dev/shm/kerneltui-test-plant-{uuid.uuid4().hex}.json")
    path = gallery.prepare("baseline-plant", "vector_add", "")
    task = load_task(path)
    # An honest keep, as a GPU run leaves it (the stand-in judge plays the GPU's judge_benchmark).
    first = Judge(sandbox=_box(True, True))
    baselines(path, first)
    assert first.asked == ["reference", "torch_compile"]
    store = HistoryStore.for_task(task).path
    kept = _rows(store)
    assert len(kept) == 2
    (path / "kernel.py").write_text(baseline_plant(store=str(store), out=str(out)))
    try:
        report = gallery.loop.run_until_complete(gallery._run(path, ["prechecks", "correctness"], 1))
        assert out.exists(), [r.line() for r in report.results]
        found = json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)
    assert set(found) == {"alter", "plant", "replace"}, found
    assert all(v.startswith("denied") for v in found.values()), found
    assert rung(report, "correctness").status == "ok", [r.line() for r in report.results]
    assert _rows(store) == kept  # not one byte of the keep changed, nothing was added
    later = Judge(sandbox=_box(True, True))
    again = baselines(path, later)
    assert later.asked == [] and again["reference"][1].kept
    assert again["reference"][0]["cases"][0]["times_ms"] == HONEST["cases"][0]["times_ms"]
