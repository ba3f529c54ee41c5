"""Worker op behind the dump rung: the backend's compiler outputs for every kernel specialisation.

The op only gathers (TTIR/TTGIR/LLIR/MLIR/PTX text and cubins, see ``core.asm.artifact``); the
parent disassembles, maps and reports, since that needs no torch and no candidate code.
"""

from __future__ import annotations

from typing import Any

from kerneltui.core.worker.ops_check import CheckFailure
from kerneltui.core.worker.state import WorkerState


def op_dump(state: WorkerState, args: dict[str, Any], progress: Any) -> dict[str, Any]:
    if state.runtime is None or state.runtime.candidate is None:
        raise CheckFailure("the kernel is not loaded in this worker: the compile rung must pass before the dump")
    arch = str(args.get("arch") or state.info.get("arch") or state.arch)
    state.dump_notes = []
    artifacts = state.backend.collect_artifacts(state, arch, progress)
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


OPS = {"dump": op_dump}
