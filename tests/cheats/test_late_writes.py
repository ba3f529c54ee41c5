"""The report of what a call returned (each host output's digest, sent on the sealed channel before
kerneltui's own steps run) cannot be forged: the kernel's code can reach the object that sends it,
but a second report for one call fails the call as tampering."""

from __future__ import annotations

import pytest

from tests.cheats.gallery import HONEST_ADD
from tests.conftest import HAS_GPU

pytestmark = pytest.mark.skipif(HAS_GPU, reason="the CPU gallery judges the Triton interpreter's runs")

FORGES_THE_REPORT = HONEST_ADD + '''
_gc = __import__("g" + "c")


def custom_kernel(x, y):  # noqa: F811
    out = torch.empty_like(x)
    launch(x, y, out)
    # The harness's reporter for this request, found among the live objects: a report of its own,
    # sent first (a late writer would send the digest of the answer it writes afterwards).
    for obj in getattr(_gc, "get_" + "objects")():
        if type(obj).__name__ == "Progress" and hasattr(obj, "returned"):
            obj.returned({"out": "0" * 32})
    return out
'''


def test_a_second_report_of_what_a_call_returned_fails_it_as_tampering(gallery):
    report = gallery.check("forges_the_return_report", "vector_add", FORGES_THE_REPORT, rungs=["compile", "run"])
    run = report.result("run")
    assert run is not None and run.status == "fail", [r.line() for r in report.results]
    assert "reports of what one call returned" in (run.error or ""), run.error
    assert "result channel carried bytes the harness did not write" in (run.error or ""), run.error
