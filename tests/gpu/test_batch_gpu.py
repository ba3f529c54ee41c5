"""``kerneltui check TASK --kernels DIR`` on a real GPU: candidates benchmarked one at a time per GPU
and ranked by median, a host crash and a GPU fault failing only their own rows.

Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_batch_gpu.py`` (about 30 s on one
GPU: the torch.compile baseline is off and each timed phase capped at 2 s through the environment).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, run_cli

pytestmark = pytest.mark.gpu

GOOD = (EXAMPLES / "vector_add" / "kernel.py").read_text()
SEGFAULT = "import ctypes\n\n\ndef custom_kernel(x, y):\n    ctypes.string_at(0)\n    return x + y\n"
# Stores far past the output buffer: an illegal memory access on the device.
ILLEGAL_ADDRESS = GOOD.replace("tl.store(out_ptr + offs, x + y, mask=mask)",
                               "tl.store(out_ptr + offs * 1000003, x + y)")


@pytest.mark.runs_long(40)
def test_batch_benchmarks_and_ranks_on_the_gpu(example_task, tmp_path: Path) -> None:
    assert "BLOCK = 1024" in GOOD and ILLEGAL_ADDRESS != GOOD
    task_dir = example_task("vector_add")
    kernels = tmp_path / "candidates"
    kernels.mkdir()
    (kernels / "block_0256.py").write_text(GOOD.replace("BLOCK = 1024", "BLOCK = 256"))
    (kernels / "block_1024.py").write_text(GOOD)
    (kernels / "segfault.py").write_text(SEGFAULT)
    (kernels / "illegal_address.py").write_text(ILLEGAL_ADDRESS)
    proc = run_cli("check", str(task_dir), "--kernels", str(kernels), "--rungs", "benchmark", "--seeds", "1",
                   "--json", "--no-history", timeout=300,
                   env={"KERNELTUI_BENCHMARK_TORCH_COMPILE": "false", "KERNELTUI_BENCHMARK_MAX_SECONDS": "2"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    print(json.dumps({k: v for k, v in out.items() if k != "results"}),
          [(Path(r["name"]).name, r["correct"], r["median_ms"], r["where"], r["failure"]) for r in out["results"]])
    assert out["slots"] and all(s.startswith("gpu ") for s in out["slots"])  # one slot per visible GPU
    results = {Path(r["name"]).name: r for r in out["results"]}
    for name in ("block_0256.py", "block_1024.py"):
        assert results[name]["correct"], results[name]["failure"]
        assert results[name]["median_ms"] and results[name]["median_ms"] > 0
        assert results[name]["placement"]["gpu"] is not None
    assert not results["segfault.py"]["correct"] and "SIGSEGV" in results["segfault.py"]["failure"]
    assert not results["illegal_address.py"]["correct"]
    ranked = [Path(r["name"]).name for r in out["results"]]
    assert set(ranked[:2]) == {"block_0256.py", "block_1024.py"}
    assert out["results"][0]["median_ms"] <= out["results"][1]["median_ms"]
