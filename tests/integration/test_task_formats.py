"""KernelBench and GPU MODE problems, laid out as published, through the whole loop on the CPU.

GPU MODE: the candidate gets a copy of the data and the task's check_implementation the original
(so a do-nothing kernel cannot borrow the reference's answer), the checker decides the dtype
questions it covers, a reference that needs a GPU is a task error. KernelBench: the backend is
declared, never read off the candidate; sizes scale with --scale/--set; cases from the header.
A task.toml value of the wrong type is a task error before anything runs. A reference at fault
(a module it imports missing, raising while it is built, out of memory, killed by the system or slower
than the timeout at the run's sizes, a checker that raises) is a task error with its file, line and what to do; a
candidate's own copies of the module constants follow --set/--scale.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cheats.gallery import COPY_KERNEL, IMPORTS
from tests.conftest import DATA, copy_tree, run_cli

KB = DATA / "kernelbench"
GM = DATA / "gpumode"

# Many short checks: warm workers answer them, as they answer a person's shell by default.
pytestmark = pytest.mark.usefixtures("commands_share_an_engine")


def check(*args: str, seeds: str = "2", rungs: str = "correctness") -> tuple[int, dict, str]:
    proc = run_cli("check", *args, "--json", "--seeds", seeds, "--rungs", rungs, "--no-history", "--no-session")
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def rung(report: dict, name: str) -> dict:
    return next(r for r in report["rungs"] if r["name"] == name)


def first_failure(report: dict) -> dict:
    return next(r for r in report["rungs"] if r["status"] == "fail")


def gm_copy(tmp_path: Path) -> Path:
    """The problems folder copied (version folders stay out of the repository)."""
    copy_tree(GM, tmp_path / "gm")
    return tmp_path / "gm"


# -- GPU MODE ---------------------------------------------------------------------------------------------


def test_gpumode_honest_submissions_pass(tmp_path):
    root = gm_copy(tmp_path)
    for problem in ("vectorscale", "histogram_py", "prefixsum_py"):
        code, report, _ = check(str(root / problem))
        assert code == 0 and report["ok"], (problem, report)
        correctness = rung(report, "correctness")
        # The reference writing into its own copy of the output is no reason to call the kernel
        # non-deterministic: both runs of the candidate agree bitwise.
        assert "not deterministic" not in json.dumps(report), problem
        assert correctness["metrics"]["launches"] > 0


def test_gpumode_do_nothing_kernels_fail(tmp_path):
    # GPU MODE's own solutions/wrong/empty.py hands back the output buffer it was given. Before, the
    # checker's reference call filled that very buffer and the kernel passed.
    root = gm_copy(tmp_path)
    for problem in ("vectorscale", "histogram_py", "prefixsum_py"):
        code, report, _ = check(str(root / problem), "--kernel", str(root / problem / "solutions/wrong/empty.py"))
        assert code == 1 and not report["ok"], (problem, report)
        failed = first_failure(report)
        assert failed["name"] in ("run", "correctness")
        assert "differs from the reference" in failed["error"], failed


def test_gpumode_wrong_kernels_fail_on_the_task_checker(tmp_path):
    root = gm_copy(tmp_path)
    cases = {"vectorscale": "scaled_twice.py", "histogram_py": "drops_tail.py", "prefixsum_py": "exclusive.py"}
    for problem, name in cases.items():
        code, report, _ = check(str(root / problem), "--kernel", str(root / problem / "solutions/wrong" / name))
        assert code == 1, (problem, report)
        assert "differs from the reference" in first_failure(report)["error"]


def test_gpumode_prefixsum_float32_answer_passes_against_float64_reference(tmp_path):
    # The reference returns a new float64 tensor; the task's check_implementation accepts float32
    # within its tolerance, and it, not a dtype rule, decides.
    code, report, _ = check(str(gm_copy(tmp_path) / "prefixsum_py"), rungs="run")
    assert code == 0, report
    assert "float32" in rung(report, "run")["summary"]


def test_gpumode_reference_that_needs_a_gpu_is_a_task_error(tmp_path):
    shutil.copytree(DATA / "gpumode_gpu", tmp_path / "g")
    code, report, stderr = check(str(tmp_path / "g" / "needs_gpu_py"))
    assert code == 2
    assert report["error"]["kind"] == "task" and report["exit_code"] == 2
    assert "needs a CUDA GPU and this machine has none" in report["error"]["message"]
    assert (report["error"]["file"], report["error"]["line"]) == ("reference.py", 10)
    assert "task error" in stderr and "Traceback" not in stderr


# -- KernelBench ------------------------------------------------------------------------------------------


def kb_copy(tmp_path: Path) -> Path:
    copy_tree(KB, tmp_path / "kb")
    return tmp_path / "kb"


def test_kernelbench_candidate_passes(tmp_path):
    code, report, _ = check(str(kb_copy(tmp_path) / "level1" / "7_ScaledReLU.py"))
    assert code == 0 and report["ok"], report
    assert rung(report, "correctness")["metrics"]["launches"] > 0


def test_kernelbench_weights_must_match(tmp_path):
    root = kb_copy(tmp_path)
    code, report, _ = check(str(root / "level1" / "7_ScaledReLU.py"), "--kernel",
                            str(root / "runs/broken/level_1_problem_7_sample_0_kernel.py"))
    assert code == 1
    assert "elements outside atol=0.01" in rung(report, "correctness")["error"]


def test_kernelbench_torch_only_candidate_fails_unless_the_task_says_torch(tmp_path):
    root = kb_copy(tmp_path)
    problem = root / "level1" / "23_RowSoftmax.py"
    torch_only = str(root / "runs/torch_only/level_1_problem_23_sample_0_kernel.py")
    code, report, _ = check(str(problem), "--kernel", torch_only, rungs="prechecks,correctness")
    assert code == 1
    prechecks = rung(report, "prechecks")
    assert prechecks["status"] == "fail" and "calls torch.softmax" in prechecks["error"]
    integrity = json.dumps(report["integrity"])
    assert "a kernel of the task's backend must launch: passed" not in integrity

    code, report, _ = check(str(problem), "--kernel", torch_only, "--backend", "torch")
    assert code == 0, report
    problem.write_text('# kerneltui: backend = "torch"\n' + problem.read_text())
    code, report, _ = check(str(problem), "--kernel", torch_only)
    assert code == 0, report


def test_kernelbench_operator_left_to_torch_is_named_and_can_be_allowed(tmp_path):
    # Level 2 as kernel engineers often write it: the convolution stays in torch, ReLU and bias are
    # fused into one Triton kernel. Failed unless the operator is allowed, and then only that one.
    root = kb_copy(tmp_path)
    problem = root / "level2" / "1_Conv2dReLUBiasAdd.py"
    candidate = root / "level2" / "1_Conv2dReLUBiasAdd_new.py"
    code, report, _ = check(str(problem), rungs="prechecks,correctness")
    assert code == 1
    failed = first_failure(report)
    assert failed["name"] == "prechecks" and "F.conv2d" in failed["error"] and "allow_ops" in failed["error"]
    code, report, _ = check(str(problem))  # the record, without the static first line
    assert code == 1
    failed = first_failure(report)
    assert failed["name"] == "correctness" and "aten::convolution" in failed["error"], failed
    assert 'allow_ops = ["convolution"]' in failed["error"], failed

    code, report, _ = check(str(problem), "--allow-ops", "conv2d", rungs="prechecks,correctness")
    assert code == 0, report
    assert rung(report, "prechecks")["metrics"]["waived"] == 1
    problem.write_text('# kerneltui: allow_ops = ["convolution"]\n' + problem.read_text())
    code, report, _ = check(str(problem), rungs="prechecks,correctness")
    assert code == 0, report

    # Allowing the convolution allows nothing else: a ReLU computed by torch still fails.
    candidate.write_text(candidate.read_text().replace("y = F.conv2d(", "y = torch.relu(F.conv2d(").replace(
        "self.conv.bias).contiguous()", "self.conv.bias)).contiguous()"))
    code, report, _ = check(str(problem))
    assert code == 1
    assert "aten::relu" in first_failure(report)["error"], report


# Torch's ReLU and bias computed inside the allowed convolution, by a tensor subclass's handler.
INSIDE_THE_ALLOWED_OPERATOR = '''
import torch.nn as nn
import torch.nn.functional as F
''' + IMPORTS + COPY_KERNEL + '''

class Carrier(torch.Tensor):
    bias = None

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        plain = [a.as_subclass(torch.Tensor) if isinstance(a, torch.Tensor) else a for a in args]
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*plain, **(kwargs or {}))
            if getattr(func, "__name__", "") == "conv2d":
                out = torch.relu(out) + Carrier.bias
        return out


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        Carrier.bias = self.bias
        y = F.conv2d(x.as_subclass(Carrier), self.conv.weight, self.conv.bias).contiguous()
        out = torch.empty_like(y)
        copy_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
'''


def test_an_allowed_operator_covers_no_code_of_the_kernels_inside_it(tmp_path):
    root = kb_copy(tmp_path)
    (root / "level2" / "1_Conv2dReLUBiasAdd_new.py").write_text(INSIDE_THE_ALLOWED_OPERATOR)
    code, report, _ = check(str(root / "level2" / "1_Conv2dReLUBiasAdd.py"), "--allow-ops", "conv2d")
    assert code == 1
    failed = first_failure(report)
    assert failed["name"] == "correctness" and "computed by torch (aten::add)" in failed["error"], failed


def test_kernelbench_allow_ops_of_the_wrong_type_is_a_task_error(tmp_path):
    problem = kb_copy(tmp_path) / "level2" / "1_Conv2dReLUBiasAdd.py"
    problem.write_text('# kerneltui: allow_ops = "conv2d"\n' + problem.read_text())
    code, report, _ = check(str(problem))
    assert code == 2 and report["error"]["line"] == 1, report
    assert 'allow_ops must be a list of strings, not the string "conv2d"' in report["error"]["message"]
    proc = run_cli("check", str(problem), "--allow-ops", "conv 2d", "--no-history", "--no-session")
    assert proc.returncode == 2 and "--allow-ops" in proc.stderr, proc.stderr


def test_kernelbench_gb_scale_problem_runs_scaled(tmp_path):
    # 4096 × 393216 floats (6.4 GB a tensor) as published; --scale shrinks every size constant.
    problem = kb_copy(tmp_path) / "level1" / "30_SoftsignWide.py"
    proc = run_cli("check", str(problem), "--scale", "0.004", "--seeds", "1", "--rungs", "correctness",
                   "--no-history", "--no-session")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "constants batch_size=16, dim=1568" in proc.stdout


def test_kernelbench_set_and_header_cases(tmp_path):
    problem = kb_copy(tmp_path) / "level1" / "23_RowSoftmax.py"
    code, report, _ = check(str(problem), "--set", "dim=33", seeds="1")
    assert code == 0 and report["ok"], report
    problem.write_text("# kerneltui: tests = [{batch_size = 3}, {batch_size = 5}]\n" + problem.read_text())
    code, report, _ = check(str(problem), seeds="1")
    assert code == 0, report
    assert rung(report, "correctness")["metrics"]["cases"] == 2


def test_kernelbench_bad_set_is_a_json_task_error(tmp_path):
    problem = kb_copy(tmp_path) / "level1" / "40_TallMatmul.py"
    code, report, stderr = check(str(problem), "--set", "M=-8")
    assert code == 2
    assert report == {"ok": False, "exit_code": 2, "error": {
        "kind": "task", "message": report["error"]["message"], "file": str(problem), "line": 22}}
    assert "must stay a positive integer" in report["error"]["message"]
    code, report, _ = check(str(problem), "--set", "M")
    assert code == 2 and report["error"]["kind"] == "usage"


# -- the strict schema, through the command line ----------------------------------------------------------


TAMPERING = '''import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def custom_kernel(x, y):
    out = x
    add[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out  # writes its input and returns it
'''


@pytest.mark.parametrize(("value", "shown"), [('"false"', 'the string "false"'), ("1", "the integer 1")])
def test_inplace_of_the_wrong_type_is_refused_before_anything_runs(example_task, value, shown):
    # Read as true, `inplace = "false"` or `inplace = 1` turned off the input-tampering and
    # aliasing checks: this kernel writes into x and returns it, and passed.
    root = example_task("vector_add", TAMPERING)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace('backend = "triton"\n', f'backend = "triton"\ninplace = {value}\n'))
    code, report, stderr = check(str(root))
    assert code == 2, report
    assert report["error"] == {"kind": "task", "file": str(toml), "line": 7,
                               "message": f"inplace must be a boolean, not {shown}: write true or false"
                                          + (" without quotes" if value.startswith('"') else "")
                                          + " (a value of another type is never read as one)"}
    assert "Traceback" not in stderr


def test_tampering_kernel_fails_when_inplace_is_false(example_task):
    root = example_task("vector_add", TAMPERING)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace('backend = "triton"\n', 'backend = "triton"\ninplace = false\n'))
    code, report, _ = check(str(root))
    assert code == 1
    assert "modified its input x" in rung(report, "correctness")["error"]


# -- a reference at fault is a task error (exit 2), never the kernel's failure ---------------------------


KB_PROBLEM = '''import torch
import torch.nn as nn
{imports}

class Model(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        {init}

    def forward(self, x):
        {forward}
        return torch.relu(x) * self.scale

batch_size = 16
features = 257
N = {n}
{module}

def get_inputs():
    {inputs}
    return [torch.randn(batch_size, features)]

def get_init_inputs():
    {init_inputs}
    return [features]
'''


def kb_problem(tmp_path: Path, *, imports: str = "", init: str = "", forward: str = "", n: int = 4,
               module: str = "", inputs: str = "", init_inputs: str = "", header: str = "") -> Path:
    """A small KernelBench problem (ScaledReLU) with one statement swapped in, beside its honest candidate."""
    problem = tmp_path / "prob.py"
    text = KB_PROBLEM.format(imports=imports, init=init or "pass", forward=forward or "pass", n=n, module=module,
                             inputs=inputs or "pass", init_inputs=init_inputs or "pass")
    problem.write_text(header + text)
    shutil.copy(KB / "level1" / "7_ScaledReLU_new.py", tmp_path / "prob_new.py")
    return problem


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def assert_task_error(code: int, report: dict, stderr: str, file: str | None, line: int | None) -> str:
    assert code == 2, report
    assert report["exit_code"] == 2 and report["error"]["kind"] == "task", report
    assert (report["error"]["file"], report["error"]["line"]) == (file, line), report["error"]
    assert "task error" in stderr and "Traceback" not in stderr
    return str(report["error"]["message"])


def test_reference_importing_a_missing_module_is_a_task_error(tmp_path):
    # Before, "compile failed: the reference could not be loaded", exit 1: the kernel's failure.
    problem = kb_problem(tmp_path, imports="import not_a_module")
    code, report, stderr = check(str(problem), seeds="1")
    message = assert_task_error(code, report, stderr, "prob.py", 3)
    assert "imports not_a_module, which is not installed here" in message and "install it" in message

    root = gm_copy(tmp_path) / "vectorscale"
    reference = root / "reference.py"
    reference.write_text("import not_a_module\n" + reference.read_text())
    code, report, stderr = check(str(root), seeds="1")
    message = assert_task_error(code, report, stderr, "reference.py", 1)
    assert "list it in task.yml's files:" in message


@pytest.mark.parametrize("where", ["init_inputs", "init", "module"])  # get_init_inputs, Model.__init__, module level
def test_reference_that_raises_while_building_is_a_task_error(tmp_path, where):
    raising = 'raise ValueError("broken on purpose")'
    problem = kb_problem(tmp_path, **{where: raising})
    code, report, stderr = check(str(problem), seeds="1")
    message = assert_task_error(code, report, stderr, "prob.py", line_of(problem, raising))
    assert "the task's reference failed" in message and "ValueError: broken on purpose" in message
    assert "not the kernel" in message


def test_a_kernel_that_fails_where_the_reference_fails_too_is_judged_by_the_reference(tmp_path):
    # KernelBench's 19_MobileNetV1 at --scale 0.05: 224 px become 11 and its 7x7 average pool raises
    # "Output size is too small" in the reference as in the kernel that copies it. Before, the kernel's
    # first call (made while it compiles) failed the run rung, exit 1: an honest kernel failed for the
    # task's sizes.
    pooling = "x = x * torch.nn.functional.avg_pool1d(x.unsqueeze(1), N).mean()"
    problem = kb_problem(tmp_path, forward=pooling)
    (tmp_path / "prob_new.py").write_text(problem.read_text() + "\n\nclass ModelNew(Model):\n    pass\n")
    code, report, _ = check(str(problem), "--backend", "torch", seeds="1", rungs="run")
    assert code == 0, report
    code, report, stderr = check(str(problem), "--backend", "torch", "--set", "N=1000", seeds="1", rungs="run")
    message = assert_task_error(code, report, stderr, "prob.py", line_of(problem, pooling))
    assert rung(report, "run")["metrics"]["failure"] == "task"
    assert "the task's reference failed" in message and "not the kernel" in message and "--set NAME=VALUE" in message

    # A kernel that fails where the reference runs is still the kernel's failure.
    (tmp_path / "prob_new.py").write_text(problem.read_text() + "\n\nclass ModelNew(Model):\n"
                                          "    def forward(self, x):\n        raise RuntimeError('kernel bug')\n")
    code, report, _ = check(str(problem), "--backend", "torch", seeds="1", rungs="run")
    assert code == 1 and "kernel bug" in first_failure(report)["summary"], report


HUGE = 1 << 45  # floats: 128 TiB, more than any machine can allocate


@pytest.mark.parametrize("where", ["inputs", "forward"])
def test_reference_out_of_memory_at_the_run_sizes_suggests_smaller_ones(tmp_path, where):
    problem = kb_problem(tmp_path, n=HUGE, **{where: "scratch = torch.empty(N)"})
    code, report, stderr = check(str(problem), seeds="1")
    message = assert_task_error(code, report, stderr, "prob.py", line_of(problem, "torch.empty(N)"))
    assert "ran out of memory at this run's sizes" in message and "can't allocate memory" in message
    assert "--set NAME=VALUE" in message and "--scale F" in message
    code, report, _ = check(str(problem), "--set", "N=16", seeds="1")
    assert code == 0, report


KILL = "__import__('os').kill(__import__('os').getpid(), 9)"  # what the out-of-memory killer does


@pytest.mark.parametrize(("where", "rung_name", "op"), [("init", "compile", "judge_load"),
                                                        ("forward", "run", "judge_inputs")])
def test_reference_killed_by_the_system_is_a_task_error(tmp_path, where, rung_name, op):
    # Before, "the worker exited with status 1 during judge_inputs", exit 1: the kernel's failure.
    problem = kb_problem(tmp_path, **{where: KILL})
    code, report, stderr = check(str(problem), seeds="1", rungs="run")
    message = assert_task_error(code, report, stderr, None, None)
    assert rung(report, rung_name)["metrics"]["failure"] == "task"
    assert f"the judge, which runs only the task's reference (prob.py), was killed (SIGKILL) during {op}" in message
    assert "most likely by the system's out-of-memory killer" in message and "not the kernel" in message
    assert "--set NAME=VALUE" in message and "--scale F" in message


def test_reference_slower_than_the_timeout_is_a_task_error_naming_the_setting(tmp_path):
    # Before, "no answer after 3 s during judge_inputs: the kernel hangs or is far too slow", exit 1.
    problem = kb_problem(tmp_path, forward="__import__('time').sleep(60)",
                         header="# kerneltui: timeouts = {run = 3}\n")
    code, report, stderr = check(str(problem), seeds="1", rungs="run")
    message = assert_task_error(code, report, stderr, None, None)
    assert rung(report, "run")["metrics"]["failure"] == "task"
    assert "the task's reference (prob.py) took longer than 3 s" in message
    assert "`# kerneltui: timeouts = {run = SECONDS}` line in prob.py or --timeout SECONDS" in message


@pytest.mark.parametrize("resize", [("--set", "N=64"), ("--scale", "0.25")])
def test_candidate_copies_of_module_constants_follow_set_and_scale(tmp_path, resize):
    # Before, the candidate ran at N = 4096 on inputs of the reduced N: it read past them and crashed.
    for name in ("double.py", "double_new.py"):  # the candidate copies the problem's N = 4096
        shutil.copy(KB / "copied_constant" / name, tmp_path / name)
    problem = tmp_path / "double.py"
    code, report, _ = check(str(problem), *resize, seeds="1")
    assert code == 0, report
    size = 64 if resize[0] == "--set" else 1024
    assert rung(report, "run")["summary"].startswith(f"out ({size},) float32"), report
    proc = run_cli("check", str(problem), *resize, "--rungs", "compile", "--no-history", "--no-session")
    assert f"constants N={size} (and double_new.py's own N)" in proc.stdout


GM_CHECKER = '''import torch
from task import input_t, output_t


def ref_kernel(data: input_t) -> output_t:
    return -data


def generate_input(size: int, seed: int) -> input_t:
    return torch.randn(size, generator=torch.Generator().manual_seed(seed))


def check_implementation(data: input_t, output: output_t):
    expected = ref_kernel(data)
    {check}
'''

SHORT_KERNEL = '''import torch
import triton
import triton.language as tl


@triton.jit
def negate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, -tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def custom_kernel(data):
    out = torch.empty(data.numel() - 1)  # one element short
    negate[(triton.cdiv(out.numel(), 1024),)](data, out, out.numel(), BLOCK=1024)
    return out
'''


def gm_problem(tmp_path: Path, check_body: str) -> Path:
    root = tmp_path / "negate"
    shutil.copytree(DATA / "gpumode_gpu" / "needs_gpu_py", root)
    (root / "reference.py").write_text(GM_CHECKER.format(check=check_body))
    return root


def test_gpumode_checker_that_raises_is_a_task_error(tmp_path):
    # Before, the checker's KeyError failed the run rung as the kernel's error, exit 1.
    root = gm_problem(tmp_path, 'raise KeyError("tolerance")')
    code, report, stderr = check(str(root), seeds="1")
    message = assert_task_error(code, report, stderr, "reference.py", 15)
    assert "the task's check_implementation raised (reference.py:15: KeyError: 'tolerance')" in message
    assert "on the reference's own output as well as the kernel's" in message


def test_gpumode_checker_that_raises_only_on_the_kernels_output_fails_the_kernel(tmp_path):
    root = gm_problem(tmp_path, 'if output.shape != expected.shape:\n        raise ValueError("shapes differ")\n'
                                '    return torch.equal(output, expected), "differs from the reference"')
    (root / "short.py").write_text(SHORT_KERNEL)
    code, report, _ = check(str(root), "--kernel", str(root / "short.py"), seeds="1")
    assert code == 1, report
    assert ("the task's check_implementation raised on the kernel's output (reference.py:16: ValueError: shapes "
            "differ) but not on the reference's") in first_failure(report)["error"]
    code, report, _ = check(str(root), seeds="1")
    assert code == 0, report


def test_gpumode_checker_slower_than_the_timeout_is_a_task_error(tmp_path):
    # Before, "no answer after 4 s during judge_verdict: the kernel hangs or is far too slow", exit 1:
    # the judge's own check of the output, blamed on the kernel (seen on GPU MODE's qr_py on the CPU).
    root = gm_problem(tmp_path, '__import__("time").sleep(60)\n    return True, ""')
    with (root / "task.yml").open("a") as fh:
        fh.write("\ntest_timeout: 4\n")
    code, report, stderr = check(str(root), seeds="1")
    message = assert_task_error(code, report, stderr, None, None)
    assert "took longer than 4 s checking the kernel's output (the task's check_implementation" in message
    assert "test_timeout" in message


def test_gpumode_problem_with_its_own_evaluator_says_so(tmp_path):
    # Published GPU MODE problems whose folder brings its own eval.py and a reference without
    # generate_input/ref_kernel (princeton/cross_entropy_py): before, "missing function
    # generate_input()" with no line, as if the problem were malformed.
    root = tmp_path / "own_eval"
    root.mkdir()
    (root / "task.yml").write_text(
        'files:\n  - {"name": "submission.py", "source": "@SUBMISSION@"}\n'
        '  - {"name": "reference.py", "source": "reference.py"}\n  - {"name": "eval.py", "source": "eval.py"}\n'
        'lang: "py"\ndescription: "own evaluator"\nconfig:\n  main: "eval.py"\ntests:\n  - {"size": 8, "seed": 1}\n')
    (root / "reference.py").write_text("def reference_forward(x):\n    return x\n\n\ndef generate_inputs(size, seed=0):\n"
                                       "    return size\n")
    (root / "eval.py").write_text("print('the problem judges itself')\n")
    (root / "submission.py").write_text("def forward(x):\n    return x\n")
    code, report, stderr = check(str(root), seeds="1")
    message = assert_task_error(code, report, stderr, str(root / "task.yml"), 8)  # config: main
    assert "judged by its own evaluator (eval.py, in its folder)" in message
    assert "no generate_input() and ref_kernel()" in message


def test_asm_and_trace_take_the_sizes_and_backend_as_check_does(tmp_path):
    # As published, the problem's tensors are 6.4 GB each: the dump's first call never ends on a small
    # machine. --scale shrinks them for asm as it does for check.
    problem = kb_copy(tmp_path) / "level1" / "30_SoftsignWide.py"
    proc = run_cli("asm", str(problem), "--scale", "0.004", "--list")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "* softsign [" in proc.stdout and "stages: " in proc.stdout
    bad = run_cli("trace", str(problem), "--set", "dim")
    assert bad.returncode == 2 and "--set dim: write NAME=VALUE" in bad.stderr, bad.stderr
    backend = run_cli("trace", str(problem), "--backend", "nope")
    assert backend.returncode == 2 and "invalid choice: 'nope'" in backend.stderr
