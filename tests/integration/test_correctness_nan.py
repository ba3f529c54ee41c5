"""NaN where the reference is finite: the correctness rung says whether the kernel computed it or left
the memory unwritten, from the determinism call that fills fresh memory with finite garbage."""

from __future__ import annotations

import json

from tests.conftest import EXAMPLES, copy_tree, run_cli


def test_a_nan_the_kernel_computes_is_not_blamed_on_memory_it_left_unwritten(tmp_path):
    # Layer norm without its epsilon: the example's constant row has variance 0, so 1/sqrt(0 + 0) is
    # inf and (x - mean) * inf is NaN. The smaller cases have no constant row and pass, which once
    # sent the reader after "a hard-coded size, block or grid".
    task = tmp_path / "layernorm"
    copy_tree(EXAMPLES / "layernorm", task)
    kernel = task / "kernel.py"
    text = kernel.read_text()
    assert "x.stride(0), 1e-5," in text
    kernel.write_text(text.replace("x.stride(0), 1e-5,", "x.stride(0), 0.0,"))
    proc = run_cli("check", str(task), "--rungs", "correctness", "--json", "--no-history", "--no-engine")
    assert proc.returncode == 1, proc.stderr[-3000:]
    correctness = {r["name"]: r for r in json.loads(proc.stdout)["rungs"]}["correctness"]
    error = correctness["error"]
    assert correctness["status"] == "fail", correctness
    assert "rows=17" in error and "NaN where the reference is finite: computed as NaN" in error, error
    assert "an epsilon left out?" in error, error
    assert "left unwritten" not in error and "hard-coded size" not in error, error
