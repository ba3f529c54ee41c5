"""Error metrics and the dtype-aware, scale-aware gate (computed with real torch on the CPU)."""

from __future__ import annotations

import math

import torch

from kerneltui.core import metrics


def compare(out, ref, dtype="float32", golden=None, **task_tolerance):
    tol = metrics.tolerances_for(dtype, task_tolerance)
    m = metrics.compare(out, ref, tol, golden)
    return m, metrics.gate(m, tol)


def test_exact_match():
    x = torch.randn(100)
    m, v = compare(x.clone(), x)
    assert v.ok and m["exact"] and m["max_abs"] == 0 and m["psnr_db"] is None
    assert metrics.headline(m).endswith("cos=1.000000") and "exact" in metrics.headline(m)


def test_zeros_fail_on_wide_softmax_although_within_atol():
    # Each output is ~1/16384 = 6e-5 < atol: allclose alone would accept zeros.
    # A fixed draw: an unseeded one put an element above atol about once in a few dozen runs.
    ref = torch.softmax(0.1 * torch.randn(4, 16384, generator=torch.Generator().manual_seed(0)), dim=-1)
    m, v = compare(torch.zeros_like(ref), ref)
    assert m["mismatches"] == 0
    assert not v.ok
    assert "relative L2 error" in v.reason


def test_mismatch_report_has_first_indices():
    ref = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    out = ref.clone()
    out[2, 1] += 1.0
    m, v = compare(out, ref)
    assert not v.ok
    assert m["mismatches"] == 1
    assert m["first_mismatches"][0]["index"] == [2, 1]
    assert "first at [2, 1]" in v.reason


def test_a_wrong_output_against_all_zeros_says_why_there_is_no_relative_error():
    # A ReLU after a large subtraction: the expected output is all zeros. The report said "rel L2 nan".
    ref = torch.zeros(64)
    m, v = compare(torch.full_like(ref, 0.05), ref)
    assert not v.ok
    assert "nan" not in v.reason and "no rel L2: the expected output is all zeros" in v.reason


def test_max_rel_leaves_out_the_elements_where_the_reference_is_zero():
    # A relative error at a zero of the reference divided by the smallest double: "max rel 9.02e+307".
    ref = torch.tensor([0.0, 1.0, 2.0, 0.0])
    m, v = compare(torch.tensor([2.0, 1.5, 2.0, 0.0]), ref)
    assert not v.ok and m["max_rel"] == 0.5
    assert "e+30" not in v.reason and "max rel 0.5 where the reference is not 0" in v.reason
    m, v = compare(torch.full((8,), 0.05), torch.zeros(8))
    assert m["max_rel"] is None and "e+30" not in v.reason


def test_nan_placement_both_ways():
    ref = torch.tensor([1.0, float("nan"), 3.0])
    out = torch.tensor([1.0, 2.0, 3.0])
    m, v = compare(out, ref)
    assert m["nan_mismatch"] == 1 and not v.ok
    m2, v2 = compare(ref.clone(), ref)
    assert v2.ok


def test_unwritten_output_is_named():
    ref = torch.randn(10)
    out = ref.clone()
    out[5:] = float("nan")
    _, v = compare(out, ref)
    assert "5 of 10 elements are NaN" in v.reason


def test_dtype_and_shape_must_match():
    ref = torch.randn(4, 4)
    _, v = compare(ref.to(torch.float64), ref)
    assert not v.ok and "dtype" in v.reason
    _, v = compare(ref.reshape(16), ref)
    assert not v.ok and "shape" in v.reason


def test_fp64_golden_rule_accepts_an_accurate_kernel_on_an_ill_conditioned_problem():
    torch.manual_seed(0)
    a = torch.randn(256, 4096)
    golden = a.double().sum(dim=1)
    ref = a.sum(dim=1)  # float32 reference with its own rounding
    # a candidate that sums in a different order: differs from ref by more than 1e-4 abs at places
    out = a.flip(1).sum(dim=1)
    m, v = compare(out, ref, golden=golden, atol=1e-6, rtol=1e-6)
    assert m["mismatches"] > 0
    assert v.ok and "fp64-golden rule" in v.reason


def test_fp64_golden_rule_rejects_lowered_precision():
    torch.manual_seed(0)
    a = torch.randn(64, 512)
    b = torch.randn(512, 64)
    golden = a.double() @ b.double()
    ref = a @ b
    out = (a.half().float() @ b.half().float())  # fp16-rounded operands
    m, v = compare(out, ref, golden=golden)
    assert not v.ok


def test_psnr_and_cosine_minimums():
    ref = torch.randn(1000)
    out = ref + 1e-3 * torch.randn(1000)
    m, v = compare(out, ref, atol=1, rtol=1, rel_l2=1, min_psnr_db=200.0)
    assert not v.ok and "PSNR" in v.reason
    assert 40 < m["psnr_db"] < 100
    assert math.isclose(m["cosine"], 1.0, abs_tol=1e-5)


def test_default_tolerances_by_dtype():
    assert metrics.tolerances_for("torch.float16").atol == 1e-2
    assert metrics.tolerances_for("float32").atol == 1e-4
    assert metrics.tolerances_for("bfloat16").rtol == 1e-2
    assert metrics.tolerances_for("int32").atol == 0
    t = metrics.tolerances_for("float32", {"rtol": 0.05})
    assert t.rel_l2 == 0.05
