"""Every CPU-catchable cheat of the gallery fails the right rung, with a message naming the hack.

The kernels run through the real loop in real workers (Triton interpreter here). GPU-only cheats
are in test_cheats_gpu.py.
"""

from __future__ import annotations

import re

import pytest

from kerneltui.core.integrity import summarise
from tests.cheats.conftest import rung
from tests.cheats.gallery import CPU_CHEATS, Cheat
from tests.conftest import HAS_GPU

pytestmark = pytest.mark.skipif(HAS_GPU, reason="the CPU gallery judges the Triton interpreter's runs")

RUNG_ORDER = ["prechecks", "compile", "run", "correctness"]


@pytest.mark.parametrize("cheat", CPU_CHEATS, ids=[c.name for c in CPU_CHEATS])
def test_cheat_is_caught_in_its_rung(gallery, cheat: Cheat) -> None:
    report = gallery.check(cheat.name, cheat.task, cheat.kernel, cheat.task_toml_prefix, cheat.task_toml_edits)
    lines = [r.line() for r in report.results]
    assert not report.ok, lines
    caught = rung(report, cheat.rung)
    assert caught.status == "fail", lines
    for phrase in cheat.phrases:
        assert re.search(re.escape(phrase).replace(r"\|", "|"), caught.error or ""), (phrase, caught.error)
    # Every rung before it passed: the cheat got as far as the rung built to catch it.
    for earlier in RUNG_ORDER[: RUNG_ORDER.index(cheat.rung)]:
        assert rung(report, earlier).status in ("ok", "warn"), lines
    # The integrity summary names the defence that caught it.
    summary = summarise(report.results)
    assert any(f.state == "caught" and f.rung == cheat.rung for f in summary.findings), summary.to_dict()
