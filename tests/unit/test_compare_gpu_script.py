"""The CPU side of bench/compare_gpu.py: its slower variants, calibration arithmetic and summary."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "compare_gpu.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("compare_gpu_script", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_the_slower_variant_wraps_custom_kernel(script, example_task) -> None:
    source = (example_task("vector_add") / "kernel.py").read_text()
    text = script.slower_variant(source, 123)
    tree = ast.parse(text)
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert names.count("custom_kernel") == 2 and "_kerneltui_spin" in names
    assert "_KERNELTUI_SPIN_ITERS = 123" in text and text.startswith(source)
    with pytest.raises(ValueError, match="no custom_kernel"):
        script.slower_variant("x = 1\n", 3)


def test_calibration_arithmetic(script) -> None:
    cal = script.Calibration(base_us=250.0, gap=0.004, steps=5000, at_steps=0.054)  # 1e-5 per step
    assert cal.iters_for(0.02) == 1600 and cal.expected(1600) == pytest.approx(0.02)
    assert cal.iters_for(0.003) == 0  # the second launch alone is already slower than that
    assert script.Calibration(250.0, 0.004, 5000, 0.004).iters_for(0.02) == 0  # a loop that costs nothing


def _experiment(script, name, nominal, wanted, verdicts, change):
    e = script.Experiment(name, nominal, nominal, wanted)
    e.verdicts, e.changes = list(verdicts), [change] * len(verdicts)
    e.calls_each, e.seconds = [400] * len(verdicts), [1.0] * len(verdicts)
    return e


def test_smallest_detected_and_the_table(script) -> None:
    ladder = [_experiment(script, f"{x}", x, "slower", ["slower"] * k + ["same"] * (20 - k), x)
              for x, k in ((0.005, 12), (0.01, 19), (0.02, 20), (0.04, 20))]
    assert script.smallest_detected(ladder) == 0.01
    assert script.smallest_detected(ladder[:1]) is None
    result = {
        "calibration": {"base_us": 251.4},
        "same": _experiment(script, "same", None, "same", ["same"] * 39 + ["faster"], 0.0).to_dict(),
        "slower": _experiment(script, "2 %", 0.02, "slower", ["slower"] * 40, 0.021).to_dict(),
        "ladder": [e.to_dict() for e in ladder], "smallest_detected": script.smallest_detected(ladder),
        "load": [_experiment(script, "same, loaded", None, "same", ["same", "unknown"], 0.0).to_dict()],
    }
    lines = script.table(json.loads(json.dumps({"vector_add": result, "matmul": {"error": "calibration failed"}})))
    assert lines[2].startswith("| vector_add | 251.4 µs | 39/40 | 40/40 (measured +2.10 %) | +1.00 % (0.5 %: 12/20")
    assert "same, loaded: same, unknown" in lines[2]
    assert lines[3] == "| matmul | — | calibration failed | | | |"


@pytest.mark.slow
def test_the_slower_variant_passes_kerneltuis_checks(script, example_task) -> None:
    task = example_task("vector_add")
    (task / "kernel.py").write_text(script.slower_variant((task / "kernel.py").read_text(), 3))
    done = run_cli("check", str(task), "--rungs", "correctness", "--json", timeout=600)
    out = json.loads(done.stdout)
    assert done.returncode == 0 and out["ok"], [(r["name"], r["status"], r["summary"]) for r in out["rungs"]]
