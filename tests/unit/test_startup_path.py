"""What the app does before its first frame: draw the rung rows without importing a rung (the
rung modules pull in the dump's and the profiler's parsers), and lower its workers' priority."""

from __future__ import annotations

import os
import subprocess
import sys

from kerneltui.core import rungs
from tests.conftest import ROOT


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, **(env or {})})


def test_the_rung_rows_come_without_importing_a_rung():
    proc = _python(
        "import sys\n"
        "from kerneltui.ui.widgets.rungs import registry_rows\n"
        "rows = registry_rows()\n"
        "print(len(rows), sorted(m for m in sys.modules if m.startswith('kerneltui.core.rungs.')))\n")
    assert proc.returncode == 0, proc.stderr
    count, loaded = proc.stdout.split(" ", 1)
    assert int(count) == len(rungs.rung_names())
    for name in rungs.rung_names():
        assert f"kerneltui.core.rungs.{name}'" not in loaded, name


def test_the_rung_rows_say_what_the_rung_specs_say():
    specs = [(s.name, s.title, s.needs_gpu, s.on_demand) for s in rungs.rung_specs()]
    assert rungs.rung_rows() == specs


def test_a_worker_lowers_its_own_priority_when_asked():
    code = ("import os\nfrom kerneltui.core.worker.child import _lower_priority\n"
            "before = os.nice(0)\n_lower_priority(os.environ.get('KERNELTUI_WORKER_NICE'))\nprint(before, os.nice(0))\n")
    proc = _python(code, {"KERNELTUI_WORKER_NICE": "5"})
    assert proc.returncode == 0, proc.stderr
    before, after = map(int, proc.stdout.split())
    assert after == min(19, before + 5)
    bad = _python(code, {"KERNELTUI_WORKER_NICE": "high"})
    before, after = map(int, bad.stdout.split())
    assert after == before
    assert "KERNELTUI_WORKER_NICE='high' not applied" in bad.stderr and "normal priority" in bad.stderr
