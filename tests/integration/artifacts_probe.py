"""Run the worker's load op and the backend's artifact collection in this process, print JSON.

``python -m tests.integration.artifacts_probe TASK_DIR [ARCH]`` is a worker in all but the
protocol: the same WorkerState start-up (torch, no GPU, the backend's warm imports), the same
``load`` op the compile rung sends (with the first test case's inputs made by a judge's ops, run
in this process too), then ``collect_artifacts`` as the dump rung will call it.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def main() -> int:
    import tempfile

    from kerneltui.core.task_loaders.load import load_task

    def quiet(*args: object, **kwargs: object) -> None:
        pass

    task = load_task(sys.argv[1])
    arch = sys.argv[2] if len(sys.argv) > 2 else "sm_90a"
    # Everything the two states write (task copies, the exchange's input files, hundreds of MB for a
    # benchmark case) goes into one folder that is removed when the probe ends.
    with tempfile.TemporaryDirectory(prefix="kerneltui-probe-") as scratch:
        return _probe(task, arch, Path(scratch), quiet)


def _probe(task: Any, arch: str, scratch: Path, quiet: Callable[..., None]) -> int:
    from kerneltui.core.worker.child.ops_candidate import op_load
    from kerneltui.core.worker.child.ops_judge import op_judge_inputs, op_judge_load
    from kerneltui.core.worker.child.state import WorkerState
    from kerneltui.core.worker.contract.seeds import seed_for

    exchange = str(scratch / "exchange")
    os.mkdir(exchange)
    judge = WorkerState(backend_name=task.backend, arch=arch, role="judge", workdir=scratch / "judge")
    judge.warm_up()
    files = task.read_sources()
    op_judge_load(judge, {"task": task.to_dict(), "files": files, "exchange": exchange}, quiet)
    first = task.tests[0]
    made = op_judge_inputs(judge, {"key": "k0", "params": first.params, "seed": seed_for(0, first.seed, 0),
                                   "reference": False}, quiet)
    state = WorkerState(backend_name=task.backend, arch=arch, workdir=scratch / "candidate")
    state.warm_up()
    loaded = op_load(state, {"task": task.to_dict(), "files": files, "first_inputs": made["inputs"],
                             "exchange": exchange}, quiet)
    for index, case in enumerate([*task.tests, *task.benchmarks[:1]]):
        state.case_inputs[index] = op_judge_inputs(
            judge, {"key": f"d{index}", "params": case.params, "seed": seed_for(index, case.seed, 0),
                    "reference": False}, quiet)["inputs"]
    artifacts = state.backend.collect_artifacts(state, arch, quiet)
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
