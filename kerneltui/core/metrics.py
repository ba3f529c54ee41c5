"""Error metrics between a candidate output and the reference, and the pass/fail gate.

``compare`` runs in a worker (it takes torch tensors and computes in float64 on their device);
``gate`` is pure Python on the numbers it returns, so the parent can (re)decide a verdict from the
stored metrics alone.

The gate (HARNESS.md, Correctness):
1. dtype-aware ``allclose`` (fp32 1e-4/1e-4, fp16/bf16 1e-2/1e-2 unless the task overrides), with
   NaN/Inf placement required to match, AND a scale-aware bound on the relative L2 error
   ``||out - ref|| / ||ref||`` so that zeros or a constant cannot pass a loose absolute tolerance on
   small-valued outputs (wide softmax rows, tiny gradients);
2. where allclose fails, the fp64-golden rule: pass if
   ``RMSE(out, golden) <= m * RMSE(ref, golden) + atol / 10`` (m = 2 for fp32, 3 for 16-bit or
   small tensors) and the relative L2 bound holds against the golden output: a kernel that is as
   accurate as the reference is not wrong just because the problem is ill-conditioned.
Reduced-precision tasks may add minimum PSNR and cosine similarity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, TypedDict


class ToleranceData(TypedDict, total=False):
    """``Tolerance.to_dict()`` (core.task): the task's overrides, only those it sets (``metrics.tolerances_for``)."""

    atol: float
    rtol: float
    rel_l2: float
    min_psnr_db: float
    min_cosine: float
    golden: bool


# (atol, rtol, rel_l2) per dtype family. rel_l2 bounds ||out-ref||/||ref||: fp32 arithmetic lands
# far under 1e-3, tf32 near 3e-4, bf16 operands between 1e-3 and 1e-2.
DEFAULT_TOLERANCES: dict[str, tuple[float, float, float]] = {
    "float64": (1e-7, 1e-7, 1e-6),
    "float32": (1e-4, 1e-4, 2e-3),
    "float16": (1e-2, 1e-2, 2e-2),
    "bfloat16": (1e-2, 1e-2, 3e-2),
    "float8": (1e-1, 1e-1, 1e-1),
    "int": (0.0, 0.0, 0.0),
}
SMALL_TENSOR = 64  # elements; RMSE on so few values is noisy, so the golden rule gets m = 3


def dtype_family(dtype: str) -> str:
    d = dtype.replace("torch.", "")
    if d.startswith("float8"):
        return "float8"
    if d in ("float16", "half"):
        return "float16"
    if d == "bfloat16":
        return "bfloat16"
    if d in ("float64", "double"):
        return "float64"
    if d in ("float32", "float", "complex64"):
        return "float32"
    if d == "bool" or d.startswith(("int", "uint")):
        return "int"
    return "float32"


@dataclass(frozen=True)
class Tolerances:
    atol: float
    rtol: float
    rel_l2: float
    golden: bool = True
    min_psnr_db: float | None = None
    min_cosine: float | None = None


def tolerances_for(dtype: str, task_tolerance: ToleranceData | None = None) -> Tolerances:
    """The dtype's defaults, under what the task's ``[tolerance]`` sets."""
    atol, rtol, rel_l2 = DEFAULT_TOLERANCES[dtype_family(dtype)]
    o = task_tolerance or {}
    return Tolerances(
        atol=float(o.get("atol", atol)),
        rtol=float(o.get("rtol", rtol)),
        rel_l2=float(o["rel_l2"]) if "rel_l2" in o else max(rel_l2, float(o.get("rtol", rtol))),
        golden=bool(o.get("golden", True)),
        min_psnr_db=o.get("min_psnr_db"),
        min_cosine=o.get("min_cosine"),
    )


# Why an output holds NaN where the reference is finite, as far as one call can tell. The correctness
# rung's second call (fresh memory filled with finite garbage instead of NaN) tells the two apart.
NAN_CAUSES = "left unwritten (fresh memory is poisoned with NaN) or computed as NaN"


class MismatchAt(TypedDict):
    index: list[int]
    got: float
    expected: float


class ErrorMetrics(TypedDict, total=False):
    """What ``compare`` measures of one output against the reference (only ``shape_mismatch`` with
    dtype and shape when the output cannot be compared); also a run's worst values of these."""

    dtype: str
    shape: list[int]
    shape_mismatch: str  # why the output cannot be compared (missing, not a tensor, other shape …)
    numel: int
    nan_mismatch: int  # elements NaN on one side only
    inf_mismatch: int
    nan_in_output: int
    max_abs: float
    max_rel: float | None  # None when the reference is 0 everywhere
    mse: float
    rmse: float
    ref_rms: float
    exact: bool
    psnr_db: float | None  # None for an exact match or an all-zero reference
    cosine: float | None
    rel_l2: float | None  # None when the reference is all zeros
    mismatches: int
    first_mismatches: list[MismatchAt]
    rmse_golden: float  # against the float64 golden, when the task has one
    rmse_ref_golden: float
    rel_l2_golden: float | None


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str  # why it failed, or how it passed ("allclose", "fp64-golden rule")


def gate(m: ErrorMetrics, tol: Tolerances) -> Verdict:
    """Decide pass/fail for one output from the metrics ``compare`` produced."""
    if m.get("shape_mismatch"):
        return Verdict(False, m["shape_mismatch"])
    if m.get("nan_mismatch", 0) and m.get("nan_in_output", 0) >= m["nan_mismatch"] and not m.get("inf_mismatch", 0):
        return Verdict(
            False,
            f"{m['nan_mismatch']} of {m.get('numel', '?')} elements are NaN where the reference is finite: {NAN_CAUSES}",
        )
    if m.get("nan_mismatch", 0) or m.get("inf_mismatch", 0):
        return Verdict(
            False,
            f"NaN/Inf placement differs from the reference ({m.get('nan_mismatch', 0)} NaN, "
            f"{m.get('inf_mismatch', 0)} Inf positions)",
        )
    if m.get("numel", 0) == 0:
        return Verdict(True, "empty output")
    rel_l2 = m.get("rel_l2")
    scale_ok = rel_l2 is None or rel_l2 <= tol.rel_l2
    extra = _extra_requirements(m, tol)
    if m["mismatches"] == 0 and scale_ok:
        return Verdict(extra is None, extra or "allclose")
    if tol.golden and m.get("rmse_ref_golden") is not None and m.get("rmse_golden") is not None:
        mult = 3.0 if (dtype_family(m["dtype"]) in ("float16", "bfloat16", "float8") or m["numel"] <= SMALL_TENSOR) else 2.0
        bound = mult * m["rmse_ref_golden"] + tol.atol / 10
        rel_golden = m.get("rel_l2_golden")
        golden_scale_ok = rel_golden is None or rel_golden <= tol.rel_l2
        if m["rmse_golden"] <= bound and golden_scale_ok:
            return Verdict(extra is None, extra or (
                f"fp64-golden rule: RMSE vs float64 {m['rmse_golden']:.3g} <= {mult:g} x reference's "
                f"{m['rmse_ref_golden']:.3g} + atol/10"))
    if not scale_ok and m["mismatches"] == 0:
        return Verdict(
            False,
            f"relative L2 error {rel_l2:.3g} exceeds {tol.rel_l2:.3g} although every element is within "
            f"atol={tol.atol:g}: the output is wrong at the scale of the reference (values ~{m.get('ref_rms', 0):.3g})",
        )
    first = m.get("first_mismatches") or []
    where = f"; first at {first[0]['index']} (got {first[0]['got']:.6g}, expected {first[0]['expected']:.6g})" if first else ""
    return Verdict(
        False,
        f"{m['mismatches']} of {m['numel']} elements outside atol={tol.atol:g} rtol={tol.rtol:g} "
        f"(max abs {m['max_abs']:.3g}, {_max_rel_words(m.get('max_rel'))}, {_rel_l2_words(rel_l2)}){where}"
        + _golden_note(m, tol),
    )


def _max_rel_words(max_rel: float | None) -> str:
    return "no max rel: the reference is 0 everywhere" if max_rel is None else \
        f"max rel {max_rel:.3g} where the reference is not 0"


def _rel_l2_words(rel_l2: float | None) -> str:
    # ||ref|| = 0: a relative error has nothing to be relative to (it used to read "rel L2 nan").
    return f"rel L2 {rel_l2:.3g}" if rel_l2 is not None else "no rel L2: the expected output is all zeros"


def _golden_note(m: ErrorMetrics, tol: Tolerances) -> str:
    """Why the float64-golden rule did not rescue the output, when it was tried."""
    if not tol.golden or m.get("rmse_golden") is None or m.get("rmse_ref_golden") is None:
        return ""
    mult = 3.0 if (dtype_family(m["dtype"]) in ("float16", "bfloat16", "float8") or m["numel"] <= SMALL_TENSOR) else 2.0
    if m["rmse_golden"] <= mult * m["rmse_ref_golden"] + tol.atol / 10:
        return ""
    rel = m.get("rel_l2_golden")
    if rel is None or rel > 0.05:
        return ""  # plainly wrong, not merely imprecise: the mismatch count says enough
    ratio = m["rmse_golden"] / m["rmse_ref_golden"] if m["rmse_ref_golden"] > 0 else float("inf")
    times = f"{ratio:.3g}x" if ratio != float("inf") else "far more than"
    return (f"; float64-golden rule fails too: RMSE vs float64 {m['rmse_golden']:.3g} is {times} the reference's "
            f"{m['rmse_ref_golden']:.3g}: less accurate than the reference in its own dtype (precision lowered?)")


def _extra_requirements(m: ErrorMetrics, tol: Tolerances) -> str | None:
    if tol.min_psnr_db is not None and (psnr := m.get("psnr_db")) is not None and psnr < tol.min_psnr_db:
        return f"PSNR {psnr:.1f} dB is under the task's minimum {tol.min_psnr_db:g} dB"
    if tol.min_cosine is not None and (cosine := m.get("cosine")) is not None and cosine < tol.min_cosine:
        return f"cosine similarity {cosine:.6f} is under the task's minimum {tol.min_cosine:g}"
    return None


# ----------------------------------------------------------------------------------------------
# Worker side: needs torch (imported lazily so the parent can import this module).
# ----------------------------------------------------------------------------------------------


def compare(out: Any, ref: Any, tol: Tolerances, golden: Any | None = None, max_report: int = 5) -> ErrorMetrics:
    """Metrics for one output tensor against the reference (and the float64 golden, if given)."""
    import torch

    m: ErrorMetrics = {"dtype": str(ref.dtype).replace("torch.", ""), "shape": list(ref.shape)}
    if not isinstance(out, torch.Tensor):
        m["shape_mismatch"] = f"output is a {type(out).__name__}, expected a tensor"
        return m
    if tuple(out.shape) != tuple(ref.shape):
        m["shape_mismatch"] = f"output shape {tuple(out.shape)} differs from the reference's {tuple(ref.shape)}"
        return m
    if out.dtype != ref.dtype:
        m["shape_mismatch"] = f"output dtype {out.dtype} differs from the reference's {ref.dtype}"
        return m
    if out.device.type != ref.device.type:
        m["shape_mismatch"] = f"output is on {out.device}, the reference on {ref.device}"
        return m
    n = ref.numel()
    m["numel"] = n
    if n == 0:
        m.update({"mismatches": 0, "max_abs": 0.0, "max_rel": 0.0})
        return m
    if out.is_complex() or ref.is_complex():
        o = torch.view_as_real(out.detach()).to(torch.float64)
        r = torch.view_as_real(ref.detach()).to(torch.float64)
    else:
        o = out.detach().to(torch.float64)
        r = ref.detach().to(torch.float64)

    o_nan, r_nan = torch.isnan(o), torch.isnan(r)
    o_inf, r_inf = torch.isinf(o), torch.isinf(r)
    m["nan_mismatch"] = int((o_nan ^ r_nan).sum().item())
    m["inf_mismatch"] = int(((o_inf ^ r_inf) | (o_inf & r_inf & (torch.sign(o) != torch.sign(r)))).sum().item())
    m["nan_in_output"] = int(o_nan.sum().item())
    finite = ~(r_nan | r_inf | o_nan | o_inf)
    of, rf = torch.where(finite, o, 0.0), torch.where(finite, r, 0.0)
    diff = (of - rf).abs()
    max_abs = float(diff.max().item())
    # Relative to a zero of the reference there is no relative error (dividing by the smallest
    # double read "max rel 9.02e+307"): those elements are left out; None when the reference is all 0.
    nonzero = finite & (rf != 0)
    rel = torch.where(nonzero, diff / torch.where(nonzero, rf.abs(), 1.0), 0.0)
    close = diff <= tol.atol + tol.rtol * rf.abs()
    bad = ~close & finite
    mismatches = int(bad.sum().item())
    count = max(int(finite.sum().item()), 1)
    mse = float((diff * diff).sum().item()) / count
    ref_sq = float((rf * rf).sum().item())
    ref_rms = math.sqrt(ref_sq / count)
    peak = float(rf.abs().max().item())
    m.update({
        "max_abs": max_abs,
        "max_rel": float(rel.max().item()) if bool(nonzero.any().item()) else None,
        "mse": mse,
        "rmse": math.sqrt(mse),
        "ref_rms": ref_rms,
        # An exact match has no finite PSNR; JSON has no infinity, so it is reported as "exact".
        "exact": mse == 0,
        "psnr_db": (None if mse == 0 or peak == 0 else 20 * math.log10(peak) - 10 * math.log10(mse)),
        "cosine": _cosine(of, rf),
        "rel_l2": (math.sqrt(mse * count / ref_sq) if ref_sq > 0 else None),
        "mismatches": mismatches,
    })
    if mismatches:
        flat = torch.nonzero(bad.reshape(-1)).reshape(-1)[:max_report].tolist()
        shape = tuple(o.shape)
        m["first_mismatches"] = [
            {"index": list(_unravel(i, shape)), "got": float(o.reshape(-1)[i].item()), "expected": float(r.reshape(-1)[i].item())}
            for i in flat
        ]
    if golden is not None:
        g = (torch.view_as_real(golden) if golden.is_complex() else golden).detach().to(torch.float64).to(o.device)
        gf = torch.where(finite, g, 0.0)
        g_sq = float((gf * gf).sum().item())
        mse_g = float(((of - gf) ** 2).sum().item()) / count
        m["rmse_golden"] = math.sqrt(mse_g)
        m["rmse_ref_golden"] = math.sqrt(float(((rf - gf) ** 2).sum().item()) / count)
        m["rel_l2_golden"] = math.sqrt(mse_g * count / g_sq) if g_sq > 0 else None
    return m


def _cosine(a: Any, b: Any) -> float | None:
    na = float(a.norm().item())
    nb = float(b.norm().item())
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float((a.reshape(-1) @ b.reshape(-1)).item()) / (na * nb)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim if dim else 0)
        flat //= dim if dim else 1
    return tuple(reversed(idx))


def headline(m: ErrorMetrics) -> str:
    """A short text form of the most telling metrics."""
    parts = []
    if m.get("max_abs") is not None:
        parts.append(f"max_abs={m['max_abs']:.2e}")
    if m.get("rel_l2") is not None:
        parts.append(f"rel_l2={m['rel_l2']:.2e}")
    psnr = m.get("psnr_db")
    if m.get("exact"):
        parts.append("exact")
    elif psnr is not None:
        parts.append(f"psnr={psnr:.1f}dB")
    if m.get("cosine") is not None:
        parts.append(f"cos={m['cosine']:.6f}")
    return " ".join(parts)
