"""Sessions on a GPU: a session recorded by ``kerneltui check`` holds the benchmark's numbers, and
``kerneltui replay SESSION --verify`` reruns the version there and compares then with now.

Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_session_gpu.py -v -s`` (about 40 s).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kerneltui.core.session import Timeline, load_session
from kerneltui.core.session.export import text_chart
from tests.conftest import run_cli

pytestmark = pytest.mark.gpu


@pytest.mark.runs_long(65)
def test_recorded_benchmark_reverifies_then_vs_now(example_task, tmp_path: Path) -> None:
    task = example_task("vector_add")
    fast = {"KERNELTUI_BENCHMARK_TORCH_COMPILE": "false"}  # the reference baseline is enough here
    out = run_cli("check", str(task), "--seeds", "1", timeout=300, env=fast)
    assert out.returncode == 0, out.stdout + out.stderr
    (folder,) = list(Path(os.environ["KERNELTUI_SESSIONS_DIR"]).iterdir())
    timeline = Timeline(load_session(folder))
    (version,) = timeline.versions
    assert version.accepted and version.correct is True
    assert version.median_ms is not None and version.median_ms > 0, [r.line() for r in version.results]
    assert version.speedup is not None
    print("\n" + text_chart(timeline.versions))

    verified = run_cli("replay", str(folder), "--verify", "--json", timeout=300, env=fast)
    assert verified.returncode in (0, 1), verified.stderr  # 1: a speed change beyond the noise, reported
    report = json.loads(verified.stdout)
    (row,) = report["rows"]
    print(json.dumps(row, indent=1))
    assert row["then_correct"] is True and row["now_correct"] is True and row["now_ok"] is True
    assert row["then_median_ms"] == pytest.approx(version.median_ms)
    assert row["now_median_ms"] is not None and row["change_pct"] is not None
    # The same kernel on the same GPU minutes apart: far inside a factor of two.
    assert abs(row["change_pct"]) < 50, row
    assert "no longer passes" not in row["flags"]
