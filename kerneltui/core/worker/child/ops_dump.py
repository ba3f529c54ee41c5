"""Worker op behind the dump rung: the backend's compiler outputs for every kernel specialisation.

The op only gathers (TTIR/TTGIR/LLIR/MLIR/PTX text and cubins, see ``core.asm.artifact``); the
parent disassembles, maps and reports, since that needs no torch and no candidate code.
"""

from __future__ import annotations

from typing import Any

from kerneltui.core.worker.child.ops_candidate import CheckFailure
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.contract.replies import DumpReply
from kerneltui.core.worker.contract.requests import DumpArgs


def op_dump(state: WorkerState, args: DumpArgs, progress: Any) -> DumpReply:
    if state.runtime is None or state.runtime.candidate is None:
        raise CheckFailure("the kernel is not loaded in this worker: the compile rung must pass before the dump")
    arch = str(args.get("arch") or state.info.get("arch") or state.arch)
    state.dump_notes = []
    state.case_inputs = {int(k): v for k, v in (args.get("cases") or {}).items()}
    artifacts = state.backend.collect_artifacts(state, arch, progress)
    for artifact in artifacts:
        _add_launch_config(artifact, state)
    roots = [str(state.task_dir)]
    resolved = str(state.task_dir.resolve())
    if resolved not in roots:
        roots.append(resolved)
    return {
        "arch": arch,
        "backend": state.backend_name,
        "artifacts": artifacts,
        "notes": list(state.dump_notes),
        "source_roots": roots,
        "on_gpu": bool(state.has_gpu),
    }


def _add_launch_config(artifact: dict[str, Any], state: WorkerState) -> None:
    """Block size and dynamic shared memory from a recorded launch, when the backend's metadata
    lacks them (the occupancy estimate needs them)."""
    meta = artifact.setdefault("metadata", {})
    if any(k in meta for k in ("threads_per_block", "block", "num_warps")):
        return
    symbol = meta.get("symbol")
    for rec in [*state.compile_launches, *state.launches]:
        if (symbol and rec.detail.get("symbol") == symbol) or rec.kernel == artifact.get("kernel"):
            block = rec.detail.get("block")
            if isinstance(block, (list, tuple)) and block:
                meta["block"] = [int(b) for b in block]
                if isinstance(rec.detail.get("grid"), (list, tuple)):
                    meta.setdefault("grid", [int(g) for g in rec.detail["grid"]])
                shared = rec.detail.get("shared")
                if isinstance(shared, int) and "shared" not in meta and "dynamic_shared_bytes" not in meta:
                    meta["dynamic_shared_bytes"] = shared
                return


OPS = {"dump": op_dump}
