"""Worker ops behind the compile, run and correctness rungs.

Each op returns plain JSON data; the parent's rung modules turn it into a RungResult. The checks
follow HARNESS.md's correctness section: reference first on clones, input hashes before and after,
several seeds per case plus a hidden one, poisoned fresh allocations and a second run with other
garbage, float64 metrics and the dtype-aware gate, checker sanity, and proof that the candidate
launched a kernel of its backend.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from contextlib import contextmanager
from typing import Any

from kerneltui.core import metrics
from kerneltui.core.worker.integrity import IdentitySnapshot, check_identities
from kerneltui.core.worker.runtime import CandidateError, runtime_for
from kerneltui.core.worker.state import WorkerState

Progress = Any
MAX_PROBLEMS = 8


class CheckFailure(Exception):
    """A failed check with structured detail (raised inside ops, reported as a failed rung)."""

    harness_message = True

    def __init__(self, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.detail = detail


# ----------------------------------------------------------------------------------------------
# load / compile
# ----------------------------------------------------------------------------------------------


def op_load(state: WorkerState, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """Install the task copy, import the reference, then the candidate, and compile its kernels."""
    t0 = time.perf_counter()
    state.install_task(args["task"], args["files"])
    if args.get("override"):
        from kerneltui.core.worker.override import OverrideUnusable, activate

        try:
            activate(state, str(args["override"]))
        except OverrideUnusable as exc:
            raise CheckFailure(f"{exc}: write the override again from the asm view (e)") from exc
    state.runtime = runtime_for(state)
    progress("importing the reference")
    state.runtime.load_reference()
    state.backend.install_hooks(state)
    state.integrity = IdentitySnapshot.take(state.torch, state.runtime.watched_functions())
    progress("importing the kernel")
    t_import = time.perf_counter()
    state.recording = True
    try:
        state.runtime.load_candidate()
    finally:
        state.recording = False
    import_s = time.perf_counter() - t_import
    check_identities(state, "while the kernel module was imported")

    result: dict[str, Any] = {"import_s": round(import_s, 4), "notes": list(state.notes)}
    can_run, why = state.backend.can_run(state)
    result["can_run"] = can_run
    if not can_run:
        result["run_skipped_reason"] = why
    progress("compiling: first call of the kernel on the first test case")
    t_compile = time.perf_counter()
    compiled = state.backend.compile(state, first_case_inputs=lambda: _first_inputs(state))
    result.update(compiled)
    result["compile_s"] = round(time.perf_counter() - t_compile, 4)
    result["total_s"] = round(time.perf_counter() - t0, 4)
    result["notes"] = list(dict.fromkeys(result.get("notes", []) + state.notes))
    return result


def _first_inputs(state: WorkerState) -> Any:
    rt = state.runtime
    case = state.task["tests"][0]
    params = {k: v for k, v in case.items() if k != "seed"}
    return rt.make_inputs(params, rt.seed_for(0, case.get("seed"), 0))


# ----------------------------------------------------------------------------------------------
# run: one call on the first test case
# ----------------------------------------------------------------------------------------------


def op_run(state: WorkerState, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    rt = state.runtime
    torch = state.torch
    case = state.task["tests"][0]
    params = {k: v for k, v in case.items() if k != "seed"}
    seed = rt.seed_for(0, case.get("seed"), 0)
    inputs = _fresh_inputs(rt, torch, params, seed)
    ref_out = rt.call_reference(rt.clone(inputs))
    state.sync()
    state.launches.clear()
    t0 = time.perf_counter()
    out = _call_candidate(state, rt.clone(inputs))  # GPU MODE's rule: the candidate gets a copy
    elapsed = time.perf_counter() - t0
    problems: list[str] = []
    ref_parts = dict(_flatten(ref_out, "out", torch))
    out_parts = dict(_flatten(out, "out", torch))
    described: list[str] = []
    if callable(getattr(rt.reference, "check_implementation", None)):
        # The task's own checker decides the questions it covers (dtype, shape, structure):
        # GPU MODE's prefixsum reference returns float64, a correct float32 answer passes its check.
        ok, message = _check_implementation(rt, inputs, out)
        if not ok:
            problems.append(f"check_implementation: {message or 'failed'}")
        described = [f"{name} {tuple(t.shape)} {str(t.dtype).replace('torch.', '')} {t.device.type}"
                     for name, t in out_parts.items() if isinstance(t, torch.Tensor)]
        ref_parts = {}
    elif set(ref_parts) != set(out_parts):
        problems.append(
            f"returned {_describe_structure(out, torch)}, the reference returns {_describe_structure(ref_out, torch)}"
        )
    for name, ref in ref_parts.items():
        got = out_parts.get(name)
        if got is None:
            continue
        if not isinstance(ref, torch.Tensor):
            continue
        if not isinstance(got, torch.Tensor):
            problems.append(f"{name} is a {type(got).__name__}, expected a tensor")
            continue
        if type(got) is not torch.Tensor and type(got).__name__ != "Parameter":
            problems.append(f"{name} is a tensor subclass ({type(got).__name__}); return a plain torch.Tensor")
        if tuple(got.shape) != tuple(ref.shape):
            problems.append(f"{name} has shape {tuple(got.shape)}, expected {tuple(ref.shape)}")
        if got.dtype != ref.dtype:
            problems.append(f"{name} has dtype {str(got.dtype).replace('torch.', '')}, expected {str(ref.dtype).replace('torch.', '')}")
        if got.device.type != ref.device.type:
            problems.append(f"{name} is on {got.device}, expected {ref.device}")
        if got.is_floating_point() and got.numel() and tuple(got.shape) == tuple(ref.shape):
            bad = ~torch.isfinite(got.detach()) & torch.isfinite(ref.detach())
            if bool(bad.any()):
                problems.append(f"{name} has {int(bad.sum())} NaN/Inf values where the reference is finite")
        described.append(f"{name} {tuple(got.shape)} {str(got.dtype).replace('torch.', '')} {got.device.type}")
    launches = _launch_summary(state)
    return {
        "case": case,
        "outputs": described,
        "problems": problems,
        "call_s": round(elapsed, 4),
        "launches": launches,
    }


# ----------------------------------------------------------------------------------------------
# correctness
# ----------------------------------------------------------------------------------------------


def op_correctness(state: WorkerState, args: dict[str, Any], progress: Progress) -> dict[str, Any]:
    rt = state.runtime
    torch = state.torch
    task = state.task
    n_seeds = int(args.get("seeds") or task.get("seeds") or 5)
    hidden_seed = int(args["hidden_seed"])
    tol_overrides = task.get("tolerance") or {}
    inplace = bool(task.get("inplace"))
    has_check = callable(getattr(rt.reference, "check_implementation", None))
    require_launch = state.backend.requires_launch
    checks: list[dict[str, Any]] = []
    problems: list[str] = []
    warnings_out: list[str] = []
    sanity: list[dict[str, Any]] = []
    determinism: list[dict[str, Any]] = []
    total_launches = 0
    worst: dict[str, Any] = {}
    cases = task["tests"]
    total = len(cases) * (n_seeds + 1)
    done = 0

    previous: tuple[Any, list[str], str] | None = None  # the last call's output, its digest, its label
    shapes_passed = 0  # test cases whose every seed passed so far
    for ci, case in enumerate(cases):
        params = {k: v for k, v in case.items() if k != "seed"}
        public_passed = 0
        seeds = [rt.seed_for(ci, case.get("seed"), k) for k in range(n_seeds)] + [hidden_seed ^ (ci * 0x9E3779B1 & 0x7FFFFFFF)]
        for si, seed in enumerate(seeds):
            label = _case_label(params) + (" (hidden seed)" if si == len(seeds) - 1 else f" seed={seed}")
            progress(f"{label}", done / total)
            done += 1
            # `inputs` stays as generated: the reference and the candidate each get a copy, and the
            # task's check_implementation a fresh copy of the original (GPU MODE's eval does the same).
            inputs = _fresh_inputs(rt, torch, params, seed)
            out_buffers = _output_buffers(rt, inputs, torch)
            ref_inputs = rt.clone(inputs)
            ref_before = _hashes(rt, ref_inputs)
            ref_out = rt.call_reference(ref_inputs)
            state.sync()
            # Buffers the reference itself writes (GPU MODE's preallocated outputs) are outputs.
            written_by_ref = {k for k, h in _hashes(rt, ref_inputs).items() if ref_before.get(k) != h}
            cand_inputs = rt.clone(inputs)
            before = _hashes(rt, cand_inputs)
            state.launches.clear()
            with poisoned_allocations(torch):
                out = _call_candidate(state, cand_inputs)
            total_launches += len(state.launches)
            after = _hashes(rt, cand_inputs)
            changed = [k for k, h in after.items()
                       if before.get(k) != h and k not in written_by_ref and k not in out_buffers]
            if changed and not inplace:
                raise CheckFailure(
                    f"the kernel modified its input {', '.join(changed)} ({label}); the task does not "
                    "declare the op in-place (inplace = true in task.toml), and an edited input can make "
                    "the reference agree with a wrong answer",
                    case=case, seed=seed, changed=changed,
                )
            if previous is not None and _output_digests(previous[0], torch) != previous[1]:
                raise CheckFailure(
                    f"the output returned for {previous[2]} changed when the kernel was called again ({label}): it "
                    "returns a buffer it reuses across calls, or one still being written after it returned (a lazy or "
                    "aliased result); return a freshly written tensor from every call",
                    case=case, seed=seed,
                )
            aliasing = _aliasing(rt, out, cand_inputs, ref_out, ref_inputs, torch, out_buffers)
            if aliasing and not inplace:
                raise CheckFailure(
                    f"output {aliasing} shares memory with an input ({label}); return a freshly written tensor",
                    case=case, seed=seed,
                )
            verdict = _judge(state, rt, inputs, out, ref_out, tol_overrides, has_check, label)
            checks.append({"case": case, "seed": seed, "hidden": si == len(seeds) - 1, **verdict})
            _track_worst(worst, verdict)
            if not verdict["ok"]:
                hint = ""
                if si == len(seeds) - 1 and public_passed == len(seeds) - 1:
                    hint = (" — every published seed of this case passed and only the hidden seed fails: the kernel "
                            "depends on the test's seeds (inputs or answers hard-coded), not on its inputs")
                elif shapes_passed and "left unwritten" in str(verdict["reason"]):
                    hint = (" — other test shapes pass, so the kernel covers only part of this one (a hard-coded "
                            "size, block or grid?)")
                problems.append(f"{label}: {verdict['reason']}{hint}")
                if len(problems) >= MAX_PROBLEMS:
                    break
                continue
            previous = (out, _output_digests(out, torch), label)
            if si < len(seeds) - 1:
                public_passed += 1
            elif public_passed == len(seeds) - 1:
                shapes_passed += 1
            if si == 0:
                # Only on the first seed of each case: these double the work.
                det = _determinism(state, rt, params, seed, out, ref_out, tol_overrides, has_check, label)
                determinism.append(det)
                if det.get("fail"):
                    problems.append(det["fail"])
                elif det.get("warn"):
                    warnings_out.append(det["warn"])
                sanity.append(_checker_sanity(rt, inputs, ref_out, tol_overrides, has_check, label, torch))
        if len(problems) >= MAX_PROBLEMS:
            break

    check_identities(state, "while the kernel ran")
    for s in sanity:
        for probe in s["passed"]:
            warnings_out.append(
                f"cannot tell right from wrong on {s['case']}: a {probe} output passes the check "
                "(widen the test's value range or tighten [tolerance])"
            )
    if require_launch and total_launches == 0 and state.backend.can_run(state)[0]:
        problems.append(
            f"no {state.backend.label} kernel was launched: custom_kernel must run a kernel of the task's backend "
            "(calling torch or the reference is not a kernel)"
        )
    return {
        "ok": not problems,
        "checks": len(checks),
        "passed": sum(1 for c in checks if c["ok"]),
        "cases": len(cases),
        "seeds": n_seeds,
        "problems": problems,
        "warnings": warnings_out,
        "worst": worst,
        "launches": total_launches,
        "determinism": determinism,
        "sanity": sanity,
        "details": checks,
    }


def _judge(state: Any, rt: Any, inputs: Any, out: Any, ref_out: Any, tol_overrides: dict[str, Any],
           has_check: bool, label: str) -> dict[str, Any]:
    torch = state.torch
    if has_check:
        ok, msg = _check_implementation(rt, inputs, out)
        info: dict[str, Any] = {"ok": ok, "reason": msg or ("check_implementation passed" if ok else "check_implementation failed")}
        # Metrics against the reference are still informative when shapes agree.
        parts = _compare_all(out, ref_out, tol_overrides, None, torch)
        if parts:
            info["outputs"] = parts
        return info
    parts = _compare_all(out, ref_out, tol_overrides, None, torch)
    failing = [p for p in parts if not p["verdict_ok"]]
    if failing and any(p["metrics"].get("numel") and not p["metrics"].get("shape_mismatch") for p in failing):
        # allclose failed: bring in the float64 golden to tell a wrong kernel from a hard problem.
        try:
            golden = rt.reference_fp64(rt.clone(inputs))
            state.sync()
            parts = _compare_all(out, ref_out, tol_overrides, golden, torch)
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


def _compare_all(out: Any, ref_out: Any, tol_overrides: dict[str, Any], golden: Any, torch: Any) -> list[dict[str, Any]]:
    ref_parts = _flatten(ref_out, "out", torch)
    out_parts = dict(_flatten(out, "out", torch))
    gold_parts = dict(_flatten(golden, "out", torch)) if golden is not None else {}
    results = []
    for name, ref in ref_parts:
        got = out_parts.get(name)
        if not isinstance(ref, torch.Tensor):
            ok = got == ref
            results.append({"name": name, "verdict_ok": ok, "reason": "equal" if ok else f"got {got!r}, expected {ref!r}", "metrics": {}})
            continue
        tol = metrics.tolerances_for(str(ref.dtype), tol_overrides)
        if got is None:
            m: dict[str, Any] = {"shape_mismatch": f"{name} is missing from the output"}
        else:
            g = gold_parts.get(name)
            m = metrics.compare(got, ref, tol, g if isinstance(g, torch.Tensor) else None)
            if isinstance(got, torch.Tensor) and type(got) is not torch.Tensor and type(got).__name__ != "Parameter":
                m["shape_mismatch"] = f"output is a tensor subclass ({type(got).__name__}); return a plain torch.Tensor"
        v = metrics.gate(m, tol)
        results.append({"name": name, "verdict_ok": v.ok, "reason": v.reason, "metrics": m})
    return results


def _determinism(state: Any, rt: Any, params: dict[str, Any], seed: int, out: Any, ref_out: Any,
                 tol_overrides: dict[str, Any], has_check: bool, label: str) -> dict[str, Any]:
    """Run again on the same inputs with other garbage in every fresh allocation; results must not
    move, and the first call's output must not change when the kernel is called again."""
    torch = state.torch
    inputs = _fresh_inputs(rt, torch, params, seed)
    first_digest = _output_digests(out, torch)
    with garbage_allocations(torch, seed):
        again = _call_candidate(state, rt.clone(inputs))
    if _output_digests(out, torch) != first_digest:
        return {
            "case": label, "identical": False,
            "fail": f"{label}: the output of an earlier call changed when the kernel was called again: it returns a "
                    "buffer it reuses across calls, or one still being written after it returned (a lazy or aliased "
                    "result); return a freshly written tensor from every call",
        }
    same = _bitwise_equal(out, again, torch)
    if same:
        return {"case": label, "identical": True}
    verdict = _judge(state, rt, inputs, again, ref_out, tol_overrides, has_check, label)
    if not verdict["ok"]:
        return {
            "case": label, "identical": False,
            "fail": f"{label}: a second run with different garbage in fresh memory gave a wrong result "
                    f"({verdict['reason']}): the kernel reads memory it never wrote (uninitialised output or scratch)",
        }
    return {"case": label, "identical": False,
            "warn": f"{label}: two runs on the same inputs differ bitwise (both pass): the kernel is not deterministic"}


def _output_digests(out: Any, torch: Any) -> list[str]:
    return [tensor_digest(t) if isinstance(t, torch.Tensor) else repr(t) for _, t in _flatten(out, "out", torch)]


def _checker_sanity(rt: Any, inputs: Any, ref_out: Any, tol_overrides: dict[str, Any], has_check: bool,
                    label: str, torch: Any) -> dict[str, Any]:
    """Zeros, an input copy, a constant and noise must all fail this case's gate."""
    refs = [(n, t) for n, t in _flatten(ref_out, "out", torch) if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 0]
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
        fake = _rebuild(ref_out, replacement, "out", torch)
        if has_check:
            ok, _ = _check_implementation(rt, inputs, fake)
        else:
            parts = _compare_all(fake, ref_out, tol_overrides, None, torch)
            ok = bool(parts) and all(p["verdict_ok"] for p in parts)
        if ok:
            passed.append(probe)
    return {"case": label, "passed": passed, "probes": sorted(probes)}


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def _fresh_inputs(rt: Any, torch: Any, params: dict[str, Any], seed: int) -> Any:
    """A case's inputs, generated with fresh allocations poisoned: a buffer the task hands over
    uninitialised (``torch.empty`` for an output) holds NaN or the integer maximum, never an
    earlier call's answer left in reused memory."""
    with poisoned_allocations(torch):
        return rt.make_inputs(params, seed)


def _output_buffers(rt: Any, inputs: Any, torch: Any) -> set[str]:
    """Names of input tensors that are nothing but poison: output buffers the task preallocates
    (GPU MODE's ``torch.empty`` outputs). The candidate may write them and return them."""
    found = set()
    for name, t in rt.tensors(inputs):
        if not t.numel() or t.dtype == torch.bool or t.is_complex():
            continue
        x = t.detach()
        if x.is_floating_point():
            poison = bool(torch.isnan(x).all())
        else:
            poison = bool((x == torch.iinfo(x.dtype).max).all())
        if poison:
            found.add(name)
    return found


def _check_implementation(rt: Any, inputs: Any, out: Any) -> tuple[bool, str]:
    """The task's own check_implementation on a fresh copy of the original inputs: its reference
    call may write into them, and the candidate never saw them."""
    verdict = rt.check_implementation(rt.clone(inputs), out)
    return verdict if verdict is not None else (True, "")


def _call_candidate(state: WorkerState, inputs: Any) -> Any:
    state.recording = True
    try:
        out = state.runtime.call_candidate(inputs)
        state.sync()
    finally:
        state.recording = False
    return out


@contextmanager
def poisoned_allocations(torch: Any):
    """Fresh torch allocations are filled with NaN (ints: their max) while the candidate runs."""
    try:
        import torch.utils.deterministic as det
    except ImportError:
        yield
        return
    prev_algos = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    prev_fill = det.fill_uninitialized_memory
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.use_deterministic_algorithms(True, warn_only=True)
        det.fill_uninitialized_memory = True
        try:
            yield
        finally:
            det.fill_uninitialized_memory = prev_fill
            torch.use_deterministic_algorithms(prev_algos, warn_only=prev_warn)


FACTORY_OPS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})


@contextmanager
def garbage_allocations(torch: Any, seed: int):
    """Every fresh torch allocation made while the candidate runs is filled with seeded garbage
    (finite floats in ±1000, random integers) instead of the first run's NaN poison. It works at
    the dispatcher, so it sees ``torch.empty`` however the kernel reached it (an alias taken at
    import, a method, ``new_empty``); the allocator's reuse of freed blocks plays no part."""
    from torch.utils._python_dispatch import TorchDispatchMode

    try:
        import torch.utils.deterministic as det

        prev_fill = det.fill_uninitialized_memory
        det.fill_uninitialized_memory = False
    except ImportError:
        det, prev_fill = None, None
    gen_cpu = torch.Generator().manual_seed(seed ^ 0x6A5D)

    class GarbageFill(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            result = func(*args, **(kwargs or {}))
            if func.overloadpacket.__name__ in FACTORY_OPS and isinstance(result, torch.Tensor) and result.numel():
                _fill_garbage(torch, result, gen_cpu)
            return result

    try:
        with GarbageFill():
            yield
    finally:
        if det is not None:
            det.fill_uninitialized_memory = prev_fill


def _fill_garbage(torch: Any, t: Any, gen: Any) -> None:
    with torch.no_grad():
        if t.is_floating_point():
            noise = torch.empty(t.shape, dtype=torch.float32).uniform_(-1000.0, 1000.0, generator=gen)
        elif t.dtype == torch.bool:
            noise = torch.randint(0, 2, t.shape, generator=gen).bool()
        elif t.is_complex():
            return
        else:
            noise = torch.randint(0, 100, t.shape, generator=gen)
        t.copy_(noise.to(device=t.device, dtype=t.dtype))


def _hashes(rt: Any, data: Any) -> dict[str, str]:
    out = {}
    for name, t in rt.tensors(data):
        out[name] = tensor_digest(t)
    return out


def tensor_digest(t: Any) -> str:
    import torch

    x = t.detach()
    if not x.is_contiguous():
        x = x.contiguous()
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    raw = x.reshape(-1).view(torch.uint8) if x.numel() else x.reshape(-1)
    h = hashlib.blake2b(raw.cpu().numpy().tobytes(), digest_size=16)
    h.update(str((tuple(t.shape), str(t.dtype))).encode())
    return h.hexdigest()


def _flatten(value: Any, prefix: str, torch: Any) -> list[tuple[str, Any]]:
    if value is None:
        return []
    if isinstance(value, torch.Tensor):
        return [(prefix, value)]
    if isinstance(value, (tuple, list)):
        items: list[tuple[str, Any]] = []
        for i, v in enumerate(value):
            items.extend(_flatten(v, f"{prefix}[{i}]", torch))
        return items
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            items.extend(_flatten(v, f"{prefix}[{k!r}]", torch))
        return items
    return [(prefix, value)]


def _rebuild(value: Any, replacement: dict[str, Any], prefix: str, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return replacement.get(prefix, value)
    if isinstance(value, tuple):
        return tuple(_rebuild(v, replacement, f"{prefix}[{i}]", torch) for i, v in enumerate(value))
    if isinstance(value, list):
        return [_rebuild(v, replacement, f"{prefix}[{i}]", torch) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _rebuild(v, replacement, f"{prefix}[{k!r}]", torch) for k, v in value.items()}
    return value


def _describe_structure(value: Any, torch: Any) -> str:
    if isinstance(value, torch.Tensor):
        return "a tensor"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


def _bitwise_equal(a: Any, b: Any, torch: Any) -> bool:
    pa, pb = _flatten(a, "out", torch), _flatten(b, "out", torch)
    if [n for n, _ in pa] != [n for n, _ in pb]:
        return False
    for (_, x), (_, y) in zip(pa, pb, strict=True):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            if not torch.equal(x.detach().reshape(-1).view(torch.uint8) if x.numel() else x, y.detach().reshape(-1).view(torch.uint8) if y.numel() else y):
                return False
        elif x != y:
            return False
    return True


def _aliasing(rt: Any, out: Any, inputs: Any, ref_out: Any, ref_inputs: Any, torch: Any,
              out_buffers: set[str] | frozenset[str] = frozenset()) -> str | None:
    """Name of an output that shares storage with an input, unless the reference does the same or
    the input is an output buffer the task preallocated."""
    ref_alias = set()
    ref_in = [t for _, t in rt.tensors(ref_inputs)]
    for name, t in _flatten(ref_out, "out", torch):
        if isinstance(t, torch.Tensor) and any(_overlaps(t, x) for x in ref_in):
            ref_alias.add(name)
    ins = [t for name, t in rt.tensors(inputs) if name not in out_buffers]
    for name, t in _flatten(out, "out", torch):
        if isinstance(t, torch.Tensor) and name not in ref_alias and any(_overlaps(t, x) for x in ins):
            return name
    return None


def _overlaps(a: Any, b: Any) -> bool:
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    pa, pb = sa.data_ptr(), sb.data_ptr()
    return pa < pb + sb.nbytes() and pb < pa + sa.nbytes()


def _launch_summary(state: WorkerState) -> dict[str, int]:
    counts: dict[str, int] = {}
    for rec in state.launches:
        counts[rec.kernel] = counts.get(rec.kernel, 0) + 1
    return counts


def _case_label(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "default case"


def _track_worst(worst: dict[str, Any], verdict: dict[str, Any]) -> None:
    for part in verdict.get("outputs") or []:
        m = part.get("metrics") or {}
        for key, better in (("max_abs", min), ("max_rel", min), ("rel_l2", min), ("psnr_db", max), ("cosine", max), ("rmse", min)):
            v = m.get(key)
            if v is None:
                continue
            cur = worst.get(key)
            # worst = the opposite of better
            if cur is None or (better is min and v > cur) or (better is max and v < cur):
                worst[key] = v
        if m.get("exact") is False:
            worst["exact"] = False
        elif "exact" not in worst and m.get("exact"):
            worst["exact"] = True


OPS = {
    "load": op_load,
    "run": op_run,
    "correctness": op_correctness,
}

__all__ = ["OPS", "CheckFailure", "CandidateError", "tensor_digest"]
