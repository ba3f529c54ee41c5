"""`kerneltui check` end to end on the vector-add example, with a real worker on the CPU."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.rung_metric_keys import undeclared


def test_vector_add_passes(example_task):
    task = example_task("vector_add")
    proc = run_cli("check", str(task), "--json", "--seeds", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] is True
    names = [r["name"] for r in report["rungs"]]
    assert names[:4] == ["prechecks", "compile", "run", "correctness"]
    correctness = next(r for r in report["rungs"] if r["name"] == "correctness")
    assert correctness["status"] == "ok"
    # 4 cases × (2 seeds + the hidden one)
    assert correctness["metrics"]["checks"] == 12
    assert correctness["metrics"]["worst_max_abs"] == 0.0
    # Each rung's metrics hold only the keys its TypedDict declares (what the UI and history read).
    assert {r["name"]: undeclared(r["name"], r["metrics"]) for r in report["rungs"]} == {
        r["name"]: set() for r in report["rungs"]}


def test_text_output_uses_rung_lines(example_task):
    task = example_task("vector_add")
    proc = run_cli("check", str(task), "--seeds", "1", "--rungs", "correctness")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[correctness] ok" in proc.stdout
    assert "PASS" in proc.stdout
