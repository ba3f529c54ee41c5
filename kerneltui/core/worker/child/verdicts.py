"""The judge's decisions on one call of the kernel (judge side; never runs candidate code).

Given the inputs the judge made, the reference's output, the kernel's output (received from the
candidate's worker) and the candidate's evidence, these functions decide: is the output right
(``compare`` with the dtype-aware gate and the float64-golden rule, or the task's own
``check_implementation``), is its structure right (``structure_problems``, the run rung), was it
made by the task's backend (``evidence_problems``), would a trivial output have passed
(``checker_sanity``), and does a second run with other garbage in fresh memory agree
(``second_run``).
"""

from __future__ import annotations

import re
from typing import Any

from kerneltui.core import metrics
from kerneltui.core.backends import torch_is_the_kernel
from kerneltui.core.metrics import ToleranceData
from kerneltui.core.task import TaskData, allow_ops_advice
from kerneltui.core.worker.child import tree
from kerneltui.core.worker.contract.replies import CallEvidence, OutputJudgement, OutputVerdict, SanityReport

# GPU kernels of torch and its libraries that only move or fill memory (allocation, copies, casts).
DATA_MOVEMENT_KERNEL = re.compile(r"copy|Copy|fill|Fill|memset|Memset|memcpy|Memcpy|CatArray|zero", re.ASCII)
LIBRARY_KERNEL = re.compile(r"at::native|at::cuda|cublas|cudnn|cutlass::Kernel|xmma|gemm|Gemm|sm\d\d_|ampere_|"
                            r"hopper_|volta_|turing_|void at::|triton_poi|triton_red|triton_per", re.ASCII)


def judge_output(rt: Any, inputs: Any, out: Any, ref_out: Any, task_tolerance: ToleranceData, sync: Any) -> OutputJudgement:
    """Right or wrong, with metrics for every output tensor."""
    torch = rt.torch
    if rt.has_check:
        # On a fresh copy of the original inputs: its reference call may write into them (GPU MODE).
        ok, msg = rt.checked(inputs, out, ref_out)
        info: OutputJudgement = {"ok": ok, "reason": msg or ("check_implementation passed" if ok else "check_implementation failed")}
        parts = compare_all(out, ref_out, task_tolerance, None, torch)  # informative where shapes agree
        if parts:
            info["outputs"] = parts
        return info
    parts = compare_all(out, ref_out, task_tolerance, None, torch)
    failing = [p for p in parts if not p["verdict_ok"]]
    if failing and any(p["metrics"].get("numel") and not p["metrics"].get("shape_mismatch") for p in failing):
        # allclose failed: bring in the float64 golden to tell a wrong kernel from a hard problem.
        try:
            golden = rt.call_fp64(rt.clone(inputs))
            sync()
            parts = compare_all(out, ref_out, task_tolerance, golden, torch)
            failing = [p for p in parts if not p["verdict_ok"]]
        except Exception as exc:  # references that cannot run in float64 keep the plain verdict
            for p in failing:
                p["note"] = f"float64 reference unavailable: {type(exc).__name__}: {exc}"
    if not parts:
        return {"ok": False, "reason": "the kernel returned no tensors", "outputs": []}
    if failing:
        first = failing[0]
        return {"ok": False, "reason": f"{first['name']}: {first['reason']}", "outputs": parts}
    return {"ok": True, "reason": "; ".join(sorted({p["reason"] for p in parts})), "outputs": parts}


def compare_all(out: Any, ref_out: Any, task_tolerance: ToleranceData, golden: Any, torch: Any) -> list[OutputVerdict]:
    ref_parts = tree.flatten(ref_out, "out", torch)
    out_parts = dict(tree.flatten(out, "out", torch))
    gold_parts = dict(tree.flatten(golden, "out", torch)) if golden is not None else {}
    results: list[OutputVerdict] = []
    for name, ref in ref_parts:
        got = out_parts.get(name)
        if not isinstance(ref, torch.Tensor):
            ok = got == ref
            results.append({"name": name, "verdict_ok": ok, "reason": "equal" if ok else f"got {got!r}, expected {ref!r}",
                            "metrics": {}})
            continue
        tol = metrics.tolerances_for(str(ref.dtype), task_tolerance)
        if got is None:
            m: metrics.ErrorMetrics = {"shape_mismatch": f"{name} is missing from the output"}
        elif not isinstance(got, torch.Tensor):
            m = {"shape_mismatch": f"{name} is a {type(got).__name__}, expected a tensor"}
        else:
            g = gold_parts.get(name)
            m = metrics.compare(got, ref, tol, g if isinstance(g, torch.Tensor) else None)
        v = metrics.gate(m, tol)
        results.append({"name": name, "verdict_ok": v.ok, "reason": v.reason, "metrics": m})
    return results


def structure_problems(rt: Any, out: Any, ref_out: Any) -> tuple[list[str], list[str]]:
    """What is wrong with the output's structure, types, shapes, dtypes, devices and finiteness
    (the run rung), and a one-line description of each output. Where the task judges outputs with
    its own ``check_implementation``, that decides dtype and shape questions: a reference returning
    float64 does not oblige the kernel to."""
    torch = rt.torch
    problems: list[str] = []
    ref_parts = dict(tree.flatten(ref_out, "out", torch))
    out_parts = dict(tree.flatten(out, "out", torch))
    lenient = rt.has_check
    if set(ref_parts) != set(out_parts) and not lenient:
        problems.append(f"returned {tree.describe_structure(out, torch)}, the reference returns "
                        f"{tree.describe_structure(ref_out, torch)}")
    described = []
    for name, got in out_parts.items():
        ref = ref_parts.get(name)
        if isinstance(got, torch.Tensor):
            described.append(f"{name} {tuple(got.shape)} {str(got.dtype).replace('torch.', '')} {got.device.type}")
        if not isinstance(ref, torch.Tensor):
            continue
        if not isinstance(got, torch.Tensor):
            problems.append(f"{name} is a {type(got).__name__}, expected a tensor")
            continue
        if lenient:
            continue
        if tuple(got.shape) != tuple(ref.shape):
            problems.append(f"{name} has shape {tuple(got.shape)}, expected {tuple(ref.shape)}")
        if got.dtype != ref.dtype:
            problems.append(f"{name} has dtype {str(got.dtype).replace('torch.', '')}, expected "
                            f"{str(ref.dtype).replace('torch.', '')}")
        if got.is_floating_point() and got.numel() and tuple(got.shape) == tuple(ref.shape):
            bad = ~torch.isfinite(got.detach()) & torch.isfinite(ref.detach())
            if bool(bad.any()):
                problems.append(f"{name} has {int(bad.sum())} NaN/Inf values where the reference is finite")
    return problems, described


def evidence_problems(evidence: CallEvidence, task: TaskData, backend_label: str,
                      kernel_names: set[str]) -> list[str]:
    """Whether the task's backend did the work: torch compute on the output path, data from the
    host, memory made outside the record, the record switched off, library GPU kernels."""
    if torch_is_the_kernel(task.get("backend")):
        return []
    allow = set(task.get("allow") or [])
    if "torch_ops" in allow:
        return []
    allowed_ops = {str(x) for x in task.get("allow_ops") or []}
    task_format = str(task.get("format") or "")

    def allowed(op: str) -> bool:
        bare = op.split(":", 1)[-1]
        return bare in allowed_ops or bare.lstrip("_") in allowed_ops

    problems = [f"{note}: kerneltui records which operators produce the output, and a kernel may not hide "
                "them (a precheck names the call)" for note in evidence.get("left_mode") or []]
    for name, fact in sorted((evidence.get("outputs") or {}).items()):
        writer = str(fact.get("writer"))
        numel = int(fact.get("numel") or 0)
        if writer.startswith("torch:") and not allowed(writer):
            problems.append(f"{name} was computed by torch ({_op_label(writer[6:])}), not by a {backend_label} kernel: "
                            f"write the computation as a {backend_label} kernel{_allow_hint(writer[6:], task_format)}")
        elif writer.startswith("host:"):
            problems.append(f"{name} holds values made on the host (from Python or numpy data, {writer[5:]}), not "
                            f"computed by a {backend_label} kernel")
        elif writer == "unknown":
            problems.append(f"{name} lives in memory that neither torch nor a {backend_label} kernel wrote while the "
                            "kernel ran (computed outside the record, e.g. with the record switched off or another "
                            "library): return a tensor a kernel of the task's backend wrote")
        elif writer == "input" and fact.get("copy"):
            problems.append(f"{name} is a copy of an input that no {backend_label} kernel wrote: the output must be "
                            f"computed by a {backend_label} kernel")
        elif writer == "alloc":
            problems.append(f"{name} was allocated (or filled with a constant) and never written by a {backend_label} "
                            "kernel")
        elif writer.startswith("kernel:"):
            problem = _taint_problem(name, writer[7:], numel, fact.get("taints") or [], allowed, backend_label,
                                     task_format)
            if problem:
                problems.append(problem)
    for kernel in evidence.get("gpu_kernels") or []:
        if any(k and k in kernel for k in kernel_names):
            continue
        if LIBRARY_KERNEL.search(kernel) and not DATA_MOVEMENT_KERNEL.search(kernel):
            problems.append(f"a GPU kernel of torch or a library ran while the kernel was called ({kernel[:120]}): the "
                            f"work must be done by {backend_label} kernels")
            break
    return problems


def _op_label(name: str) -> str:
    return name if "::" in name else f"aten::{name}"


def _taint_problem(name: str, kernel: str, numel: int, taints: list[Any], allowed: Any, backend_label: str,
                   task_format: str) -> str:
    """Whether what a kernel read was mostly made outside it. Small side data (a scale, a maximum)
    may come from torch; the parts are added up, so a result torch computed in small pieces is
    still torch's."""
    outside = [(str(taint[0]), int(taint[1])) for taint in taints if not allowed(str(taint[0]))]
    if not outside or sum(size for _, size in outside) * 4 < numel:
        return ""
    op, size = max(outside, key=lambda item: item[1])
    if op.startswith("torch:"):
        what = f"computed by torch ({_op_label(op[6:])})"
    elif op.startswith("host:"):
        what = f"made on the host ({op[5:]})"
    else:
        what = ("written outside the operator record (by numpy, ctypes, another thread, another library, or an "
                "operator run past the record)")
    more = f" (and {len(outside) - 1} more made outside it)" if len(outside) > 1 else ""
    hint = _allow_hint(op[6:], task_format) if op.startswith("torch:") else ""
    return (f"the {backend_label} kernel {kernel} that wrote {name} read a tensor of {size} elements {what}{more}: "
            f"the work was done outside the {backend_label} kernel{hint}")


def _allow_hint(op: str, task_format: str) -> str:
    """How a task lets one ATen operator stay in torch (``aten::x`` and library ops cannot be listed)."""
    bare = op.split("::", 1)[-1] if op.startswith("aten::") else op
    if "::" in bare:
        return " (the task allows no torch compute ops)"
    return (" (the task allows no torch compute ops; if this one may stay in torch, list it: "
            f"{allow_ops_advice(bare, task_format)})")


def checker_sanity(rt: Any, inputs: Any, ref_out: Any, task_tolerance: ToleranceData, label: str) -> SanityReport:
    """Zeros, an input copy, a constant and noise must all fail this case's gate."""
    torch = rt.torch
    refs = [(n, t) for n, t in tree.flatten(ref_out, "out", torch)
            if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 0]
    passed: list[str] = []
    if not refs:
        return {"case": label, "passed": passed, "skipped": "no floating-point outputs"}
    input_tensors = [t for _, t in rt.tensors(inputs)]
    gen = torch.Generator(device=refs[0][1].device).manual_seed(1234)
    probes: dict[str, Any] = {}
    for name, ref in refs:
        r = ref.detach().to(torch.float64)
        mean = float(r.mean())
        std = float(r.std()) if r.numel() > 1 else 1.0
        probes.setdefault("zeros", {})[name] = torch.zeros_like(ref)
        if float((r - mean).abs().max()) > 0:
            probes.setdefault("constant", {})[name] = torch.full_like(ref, mean)
        noise = torch.randn(ref.shape, generator=gen, device=ref.device, dtype=torch.float64) * (std or 1.0) + mean
        probes.setdefault("noise", {})[name] = noise.to(ref.dtype)
        same = [t for t in input_tensors if t.shape == ref.shape and t.dtype == ref.dtype]
        if same and not torch.equal(same[0], ref):
            probes.setdefault("input copy", {})[name] = same[0].clone()
    for probe, replacement in probes.items():
        fake = tree.rebuild(ref_out, replacement, "out", torch)
        if rt.has_check:
            ok, _ = rt.checked(inputs, fake, ref_out)
        else:
            parts = compare_all(fake, ref_out, task_tolerance, None, torch)
            ok = bool(parts) and all(p["verdict_ok"] for p in parts)
        if ok:
            passed.append(probe)
    return {"case": label, "passed": passed, "probes": sorted(probes)}


def late_writes(out: Any, returned: Any, label: str, torch: Any) -> list[str]:
    """The judge's copy of each host-memory output against its digest at the kernel's return, which
    the kernel's worker sent on the sealed channel before anything else ran there. A difference was
    written after the call returned, by code the kernel left behind, into the output kerneltui
    exported (found through /proc/self/maps, say): a thread, a signal handler, a gc callback or a
    finalizer, a profile hook set after the call."""
    digests = returned if isinstance(returned, dict) else {}
    problems = []
    for name, t in tree.tensors(out, "out", torch):
        if t.device.type != "cpu":
            continue
        want = digests.get(name)
        if want is None:
            problems.append(f"{name} ({label}): the kernel's worker sent no digest of it at the call's return, so "
                            "what the judge copied cannot be told from what the kernel returned")
        elif tree.tensor_digest(t) != want:
            problems.append(
                f"{name} ({label}) was written after the call returned: the judge's copy differs from what the kernel "
                "returned (code the kernel left behind, a thread, a signal handler, a gc callback or finalizer, or a "
                "profile hook, rewrote the exported output); return the finished output and leave nothing running")
    return problems


def aliasing_problem(rt: Any, aliases: list[str], ref_out: Any, ref_inputs: Any, label: str) -> str | None:
    """An output the kernel returned inside an input's memory, unless the reference does the same."""
    torch = rt.torch
    ref_in = [t for _, t in rt.tensors(ref_inputs)]
    ref_alias = {name for name, t in tree.tensors(ref_out, "out", torch) if any(tree.overlaps(t, x) for x in ref_in)}
    wrong = [a for a in aliases if a not in ref_alias]
    if wrong:
        return f"output {wrong[0]} shares memory with an input ({label}); return a freshly written tensor"
    return None
