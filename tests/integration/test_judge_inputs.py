"""The judge's inputs: no verdict for inputs made without the reference (the compile rung's first case,
the dump, the trace); an input the kernel changed is found by comparing the candidate's copy with
the originals where they are, bit for bit, never by hashing them on the host (seconds for a GPU's
gigabytes: a copy to the host, then blake2b); output buffers the task hands over are told by their
poison.

Real judge state in a subprocess, the real vector_add task, real tensors (on the CPU here).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from tests.conftest import EXAMPLES, ROOT

IN_JUDGE = r'''
import json, os, sys
from pathlib import Path
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.worker.child.ops_candidate import CheckFailure
from kerneltui.core.worker.child import ops_judge, tree
from kerneltui.core.worker.child.ops_judge import op_judge_inputs, op_judge_load, op_judge_verdict
from kerneltui.core.worker.child.state import WorkerState

def no_host_hash(t):
    raise AssertionError("the judge hashed a tensor on the host")

tree.tensor_digest = no_host_hash

scratch = Path(sys.argv[1])
(scratch / "exchange").mkdir()
task = load_task(str(scratch / "vector_add"))
judge = WorkerState("triton", role="judge", workdir=scratch / "judge")
judge.warm_up()
quiet = lambda *a, **k: None
op_judge_load(judge, {"task": task.to_dict(), "files": task.read_sources(), "exchange": str(scratch / "exchange")}, quiet)
case = task.tests[1]
op_judge_inputs(judge, {"key": "plain", "params": case.params, "seed": 1, "reference": False}, quiet)
op_judge_inputs(judge, {"key": "judged", "params": case.params, "seed": 1}, quiet)
checks = judge.judge.checks
try:
    op_judge_verdict(judge, {"key": "plain", "outputs": None}, quiet)
    refused = ""
except CheckFailure as exc:
    refused = str(exc)
check = checks["judged"]
rt = judge.judge.rt
untouched = ops_judge._changed(rt, check.copy, check.inputs)
kept = check.copy[1][7].clone()
check.copy[1][7] += 1.0  # the kernel writes into its copy of y
one = ops_judge._changed(rt, check.copy, check.inputs)
check.copy[1][7] = kept
nan_x = check.inputs[0].clone()
nan_x[3] = float("nan")
check.copy[0].copy_(nan_x)
check.inputs[0].copy_(nan_x)
same_nan = ops_judge._changed(rt, check.copy, check.inputs)  # the same NaN bits are no change
check.copy[0][5] = -0.0
check.inputs[0][5] = 0.0
signed_zero = ops_judge._changed(rt, check.copy, check.inputs)  # -0.0 == 0.0, but not the same bits
import torch
first_only = torch.zeros(8)
first_only[0] = float("nan")
candidates = (torch.full((4, 4), float("nan")), torch.ones(4), first_only,
              torch.full((3,), torch.iinfo(torch.int32).max, dtype=torch.int32), torch.full((6,), float("nan"))[::2])
buffers = sorted(ops_judge.output_buffers(rt, candidates))
print(json.dumps({"buffers": buffers, "buffer_names": [n for n, _ in rt.tensors(candidates)], "refused": refused, "untouched": untouched, "one": one, "same_nan": same_nan,
                  "signed_zero": signed_zero, "names": [n for n, _ in rt.tensors(check.inputs)]}))
'''


def test_changed_inputs_are_found_bit_for_bit_and_inputs_without_the_reference_get_no_verdict(tmp_path):
    shutil.copytree(EXAMPLES / "vector_add", tmp_path / "vector_add")
    proc = subprocess.run([sys.executable, "-c", IN_JUDGE, str(tmp_path)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "made without the reference" in got["refused"], got
    x, y = got["names"]
    assert got["untouched"] == [] and got["same_nan"] == [], got
    assert got["one"] == [y], got
    assert got["signed_zero"] == [x], got
    # Output buffers the task hands over are all poison (NaN, or the integer maximum), strided ones too;
    # a first poisoned element alone does not make one.
    names = got["buffer_names"]
    assert got["buffers"] == sorted([names[0], names[3], names[4]]), got
