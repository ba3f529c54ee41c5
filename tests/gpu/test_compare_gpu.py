"""``kerneltui compare`` on a real GPU, end to end.

Run on the GPU machine: ``python -m pytest -m gpu tests/gpu/test_compare_gpu.py``.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.gpu

# The example's launch, made twice: the same answer in about twice the time.
TWICE = ("    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)\n",
         "    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)\n"
         "    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)\n")


def _compare(task, a: str, b: str, *extra: str) -> tuple[int, dict]:
    done = run_cli("compare", str(task), a, b, "--json", "--max-seconds", "5", *extra, cwd=task, timeout=600)
    return done.returncode, json.loads(done.stdout)


def test_a_kernel_made_twice_as_slow_is_found_slower(example_task):
    task = example_task("vector_add")
    source = (task / "kernel.py").read_text()
    assert TWICE[0] in source
    (task / "twice.py").write_text(source.replace(*TWICE))
    code, out = _compare(task, "kernel.py", "twice.py")
    assert code == 0, out
    case = out["cases"][0]
    assert case["direction"] == "slower" and 0.7 < case["change"] < 1.3, case
    assert case["text"].startswith("B is ") and "slower than A (95 % CI" in case["text"]
    assert out["device"]["gpu"] is True and case["calls_each"] >= 20


def test_two_copies_of_one_kernel_differ_by_little(example_task):
    task = example_task("vector_add")
    (task / "copy.py").write_text((task / "kernel.py").read_text())
    code, out = _compare(task, "kernel.py", "copy.py")
    assert code == 0, out
    case = out["cases"][0]
    # "no difference" 95 % of the time by construction; whatever it says, the estimate is near zero.
    assert abs(case["change"]) < 0.01 and case["high"] - case["low"] < 0.02, case


def test_a_wrong_kernel_is_not_compared(example_task):
    task = example_task("vector_add")
    (task / "wrong.py").write_text((task / "kernel.py").read_text().replace("x + y", "x - y"))
    code, out = _compare(task, "kernel.py", "wrong.py")
    assert code == 1 and out["error"]["kind"] == "wrong", out
    assert "B (wrong.py) fails correctness" in out["error"]["message"]
