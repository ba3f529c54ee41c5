"""Run the worker's load op and the backend's artifact collection in this process, print JSON.

``python -m tests.integration.artifacts_probe TASK_DIR [ARCH]`` is a worker in all but the
protocol: the same WorkerState start-up (torch, no GPU, the backend's warm imports), the same
``load`` op the compile rung sends, then ``collect_artifacts`` as the dump rung will call it.
"""

from __future__ import annotations

import base64
import json
import sys


def main() -> int:
    from kerneltui.core.task import load_task
    from kerneltui.core.worker.ops_check import op_load
    from kerneltui.core.worker.state import WorkerState

    task = load_task(sys.argv[1])
    arch = sys.argv[2] if len(sys.argv) > 2 else "sm_90a"
    state = WorkerState(backend_name=task.backend, arch=arch)
    state.warm_up()
    loaded = op_load(state, {"task": task.to_dict(), "files": task.read_sources()}, lambda *a, **k: None)
    artifacts = state.backend.collect_artifacts(state, arch, lambda *a, **k: None)
    summary = []
    for art in artifacts:
        stages = art["stages"]
        cubin = base64.b64decode(stages["cubin"]["base64"]) if "cubin" in stages else b""
        summary.append({
            "kernel": art["kernel"], "variant": art["variant"], "source_file": art["source_file"],
            "metadata": art["metadata"], "stage_names": sorted(stages),
            "mlir_head": stages.get("mlir", "")[:20000], "ptx": stages.get("ptx", ""),
            "cubin_magic": cubin[:4].hex(), "cubin_bytes": len(cubin),
        })
    print(json.dumps({"load": loaded, "artifacts": summary, "kernels": state.backend.kernels(state)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
