"""The engine on a GPU: a full check through it (benchmark included) gives the verdict a check
without it gives, and a second check takes warm workers and has the GPU to itself while it times."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.integration.test_engine import engine, normalised, wait_until  # noqa: F401 - the fixture

pytestmark = pytest.mark.gpu


@pytest.mark.runs_long(95)
def test_full_check_through_the_engine_on_a_gpu(engine, example_task):  # noqa: F811
    task = example_task("vector_add")
    alone = engine.cli("check", str(task), "--json", "--no-engine", timeout=600)
    first = engine.cli("check", str(task), "--json", timeout=600)
    assert alone.returncode == first.returncode == 0, alone.stderr + first.stderr
    report_alone, report_engine = json.loads(alone.stdout), json.loads(first.stdout)
    # The same verdict rung by rung; a benchmark's "warn" (a series that did not converge while other
    # tests shared the GPU, seen on the H200) is the same verdict as its "ok".
    def verdicts(report: dict) -> dict[str, str]:
        return {r["name"]: "ok" if r["name"] == "benchmark" and r["status"] == "warn" else r["status"]
                for r in report["rungs"]}

    summaries = {which: {r["name"]: r["summary"] for r in report["rungs"]}
                 for which, report in (("alone", report_alone), ("engine", report_engine))}
    assert verdicts(report_engine) == verdicts(report_alone), summaries
    assert verdicts(report_engine)["benchmark"] == "ok" and report_engine["device"]["gpu"]
    assert normalised(report_engine["integrity"]) == normalised(report_alone["integrity"])

    from kerneltui.core.engine.messages import RunRequest
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task import LoadOptions

    assert wait_until(lambda: all(p["ready"].get(r, 0) >= n for p in engine.status()["pools"]
                                  for r, n in p["wanted"].items()), 300, 0.5)
    second = asyncio.run(engine.client().run(RunRequest.make(task, None, LoadOptions(), RunOptions(origin="check")), lambda e: None))
    assert second.ok and second.result("benchmark").status in ("ok", "warn")  # as above: warn is the same verdict
    assert second.data["engine"]["ready_at_start"]["candidate"] >= 2
    assert second.data["engine"]["waited_for_gpu"] is False
