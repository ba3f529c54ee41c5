"""The program ncu profiles: ``python -m kerneltui.core.profile.target SPEC.json``.

It loads the task copy the way a worker does (same :class:`WorkerState`, same task runtime, same
launch hooks), makes the inputs of one benchmark case, calls the candidate a few times so JIT
compilation and autotuning happen outside the measurement, then makes exactly one call inside the
NVTX range ``kerneltui``; ncu is told to profile only kernels inside that range.

The spec (written by the parent, ``core/profile/runner.py``) holds the task dict, the source
files, the case and where to write the result. The result is a small JSON file: which kernels the
profiled call launched, the case, the task's ``bytes_moved``/``flops`` for it, or the error with
its task-relative file and line. ncu owns stdout and stderr, so nothing is parsed from them here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from kerneltui.core.case_params import CaseParams
from kerneltui.core.profile.command import NVTX_RANGE
from kerneltui.core.profile.spec import ProfileSpec

EXIT_OK, EXIT_ERROR = 0, 3


def run_target(spec: ProfileSpec) -> dict[str, Any]:
    from kerneltui.core.worker.child.runtime import candidate_runtime_for, reference_runtime_for
    from kerneltui.core.worker.child.state import WorkerState

    # With a workdir the parent owns the folder and deletes it after ncu exits: ncu reads the
    # kernel's source files for the report after the last kernel, when this process may be gone.
    workdir = spec.get("workdir")
    state = WorkerState(backend_name=spec["backend"], arch=spec.get("arch"), workdir=Path(workdir) if workdir else None)
    result: dict[str, Any] = {"ok": False}
    try:
        state.warm_up()
        result["gpu"] = state.has_gpu
        state.install_task(spec["task"], spec["files"])
        if spec.get("override"):  # a version built from hand-edited PTX/TTGIR (core.override)
            from kerneltui.core.worker.child.override import activate

            activate(state, str(spec["override"]))
        result["task_dir"] = str(state.task_dir)
        # A profile decides nothing (the verdicts were decided by the judge of the check before it):
        # this one process makes the case's inputs with the reference, then loads the kernel.
        reference = reference_runtime_for(state)
        reference.load()
        case = spec["case"]
        params = dict(case.get("params") or {})
        seed = reference.seed_for(int(case.get("index", 0)), case.get("seed"), 0)
        result.update(case=case.get("label") or _label(params), params=params, seed=seed)
        result.update(_task_counts(reference.reference, params))
        inputs = reference.make_inputs(params, seed)
        setup = reference.candidate_setup()
        rt = state.runtime = candidate_runtime_for(state)
        state.backend.install_hooks(state)
        rt.load(setup)
        warmup = max(1, int(spec.get("warmup", 2)))
        state.launches.clear()
        state.recording = True
        for _ in range(warmup):
            rt.call(inputs)
            state.sync()
        state.recording = False
        result["warmup_kernels"] = sorted({r.kernel for r in state.launches})
        state.launches.clear()
        # Without a GPU there is nothing for ncu to see; the call still runs (under the Triton
        # interpreter) so the target can be tested anywhere.
        nvtx = state.torch.cuda.nvtx if state.has_gpu else None
        state.recording = True
        started = time.perf_counter()
        if nvtx is not None:
            nvtx.range_push(NVTX_RANGE)
        try:
            rt.call(inputs)
            state.sync()
        finally:
            if nvtx is not None:
                nvtx.range_pop()
            state.recording = False
        result["call_s"] = round(time.perf_counter() - started, 6)
        result["kernels"] = sorted({r.kernel for r in state.launches})
        result["launches"] = len(state.launches)
        result["ok"] = True
        return result
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        from kerneltui.core.worker.child.errors import describe_exception

        result["error"] = describe_exception(exc, state)
        result["exit"] = EXIT_ERROR
        return result
    finally:
        state.discard()


def _task_counts(reference: Any, params: CaseParams) -> dict[str, Any]:
    """The task's own byte and FLOP counts for this case (native tasks define them)."""
    counts: dict[str, Any] = {}
    for name in ("bytes_moved", "flops"):
        fn = getattr(reference, name, None)
        if not callable(fn):
            continue
        try:
            counts[name] = float(fn(**params))
        except Exception as exc:  # a broken count must not cost the profile
            counts[f"{name}_error"] = f"{type(exc).__name__}: {exc}"
    return counts


def _label(params: CaseParams) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items()) or "default case"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kerneltui-profile-target")
    parser.add_argument("spec", help="JSON file written by the profile rung")
    opts = parser.parse_args(argv)
    spec = json.loads(Path(opts.spec).read_text(encoding="utf-8"))
    from kerneltui.core.sandbox.confine import BoxError, apply_deferred_landlock

    try:
        apply_deferred_landlock()  # before any task code: the box's filesystem rules, for this process
    except BoxError as exc:
        print(f"kerneltui profile target: the box could not be applied ({exc}); the task was not run",
              file=sys.stderr)
        return EXIT_ERROR
    result = run_target(spec)
    Path(spec["result"]).write_text(json.dumps(result, default=str), encoding="utf-8")
    if not result.get("ok"):
        error = result.get("error") or {}
        where = f"{error.get('file')}:{error.get('line')}: " if error.get("file") else ""
        print(f"kerneltui profile target: {where}{error.get('message')}", file=sys.stderr)
    return int(result.get("exit", EXIT_OK))


if __name__ == "__main__":
    sys.exit(main())
