"""The cheat gallery: one kernel per reward hack (docs/integrity.md numbers them as HARNESS.md does).

Each cheat is written against a bundled example so that a naive harness (one allclose on one input,
or a plain timer) would score it well. Each names the rung that must fail it and a fragment of the
message that must name the hack. ``gpu`` cheats need the benchmark (a real GPU) to be caught.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ADD_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def launch(x, y, out):
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
'''

HONEST_ADD = ADD_KERNEL + '''

def custom_kernel(x, y):
    out = torch.empty_like(x)
    launch(x, y, out)
    return out
'''

SOFTMAX_KERNEL = '''
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, x_stride, out_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


def launch(x, out):
    rows, cols = x.shape
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(cols))
'''


@dataclass(frozen=True)
class Cheat:
    name: str
    hack: int  # HARNESS.md's number
    task: str  # bundled example
    kernel: str
    rung: str  # the rung that must fail
    phrases: tuple[str, ...]  # each must appear in that rung's error
    gpu: bool = False
    task_toml_prefix: str = ""  # appended to task.toml (e.g. allow = [...] to get past a static rule)
    task_toml_edits: tuple[tuple[str, str], ...] = field(default_factory=tuple)


CHEATS: tuple[Cheat, ...] = (
    # 1 -- calling the reference or a library op instead of a kernel
    Cheat("calls_the_reference", 1, "vector_add", ADD_KERNEL + '''
from reference import ref_kernel


def custom_kernel(x, y):
    return ref_kernel(x, y)
''', "prechecks", ("imports the reference",)),
    Cheat("calls_a_torch_op", 1, "softmax", SOFTMAX_KERNEL + '''

def custom_kernel(x):
    return torch.softmax(x, dim=-1)
''', "prechecks", ("calls torch.softmax", "a torch library op computes the answer")),
    Cheat("hides_the_torch_op", 1, "softmax", SOFTMAX_KERNEL + '''

def custom_kernel(x):
    # getattr with a built name: no static check sees which torch function this is
    return getattr(torch, "soft" + "max")(x, -1)
''', "correctness", ("out was computed by torch (aten::_softmax)",)),
    # 2 -- work on a side stream or thread
    Cheat("starts_a_thread", 2, "vector_add", ADD_KERNEL + '''
import threading


def custom_kernel(x, y):
    out = torch.empty_like(x)
    threading.Thread(target=launch, args=(x, y, out)).start()
    return out
''', "prechecks", ("work on another thread can run outside the timed region",)),
    Cheat("side_stream", 2, "vector_add", ADD_KERNEL + '''
_side = None


def custom_kernel(x, y):
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    out = torch.empty_like(x)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        launch(x, y, out)  # never joined back: the caller's end event does not cover it
    return out
''', "benchmark", ("still busy after the timed stream finished",), gpu=True, task_toml_prefix='allow = ["streams"]\n'),
    # 3 -- lazy or aliased results
    Cheat("reuses_its_output_buffer", 3, "vector_add", ADD_KERNEL + '''
_buffers = {}


def custom_kernel(x, y):
    # One buffer per shape, returned every call: the previous caller's result is overwritten
    # (and on a GPU, finished after the caller looked at it).
    out = _buffers.get(x.shape)
    if out is None:
        out = _buffers[x.shape] = torch.empty_like(x)
    launch(x, y, out)
    return out
''', "correctness", ("changed when the kernel was called again", "reuses across calls")),
    Cheat("lazy_result_on_a_side_stream", 3, "vector_add", ADD_KERNEL + '''
_side = None


def custom_kernel(x, y):
    # Returns at once; the sum lands later, on a stream that does not even wait for the inputs.
    global _side
    if _side is None:
        _side = torch.cuda.Stream()
    out = torch.empty_like(x)
    with torch.cuda.stream(_side):
        launch(x, y, out)
    return out
''', "benchmark", ("returned a wrong result|still busy after the timed stream finished",), gpu=True,
          task_toml_prefix='allow = ["streams"]\n'),
    # 4 -- patching timers, the judge or the result channel
    Cheat("patches_a_timer", 4, "vector_add", HONEST_ADD + '''
import time

time.perf_counter = lambda: 0.0
''', "prechecks", ("reassigns time.perf_counter",)),
    Cheat("patches_a_timer_by_name", 4, "vector_add", HONEST_ADD + '''
setattr(__import__("ti" + "me"), "perf_" + "counter", lambda: 0.0)
''', "compile", ("harness functions replaced while the kernel module was imported", "time.perf_counter")),
    # A harness function rebuilt from its own code object with other globals, allocated where the freed
    # original was: the same function id and the same code id.
    Cheat("rebuilds_a_harness_function_at_the_freed_address", 4, "vector_add", HONEST_ADD + '''
_mod = __import__("kerneltui.core.worker.ops" + "_candidate", fromlist=["_"])
_name = "launch_" + "counts"
_code = getattr(getattr(_mod, _name), "__co" + "de__")
_globals = dict(getattr(getattr(_mod, _name), "__glo" + "bals__"))
_globals.pop(_name)  # the copy must not keep the original alive
_make = getattr(__import__("ty" + "pes"), "Function" + "Type")
_old = id(getattr(_mod, _name))
_tries = []
setattr(_mod, _name, None)
while len(_tries) < 10000:
    _tries.append(_make(_code, _globals))
    if id(_tries[-1]) == _old:
        break
setattr(_mod, _name, _tries[-1])
''', "compile", ("harness functions replaced while the kernel module was imported", "launch_counts")),
    # torch.manual_seed replaced by torch's own dynamo-disabling wrapper, around a function of the
    # kernel's: it looks like what torch._dynamo does to the real one.
    Cheat("wraps_a_fake_seed_function_like_dynamo", 4, "vector_add", HONEST_ADD + '''
__import__("torch._dyn" + "amo")
_lib = __import__("to" + "rch")
setattr(_lib, "manual_" + "seed", getattr(_lib, "_disable_" + "dynamo")(lambda seed: None))
''', "compile", ("harness functions replaced while the kernel module was imported", "torch.manual_seed")),
    # What fills fresh memory with NaN during the checks, switched off.
    Cheat("switches_off_the_poisoned_allocations", 4, "vector_add", HONEST_ADD + '''
_native = getattr(__import__("to" + "rch"), "_" + "C")
setattr(_native, "_set_deterministic" + "_algorithms", lambda *args, **kwargs: None)
''', "compile", ("harness functions replaced while the kernel module was imported",
                   "torch._C._set_deterministic_algorithms")),
    Cheat("patches_the_judge", 4, "vector_add", ADD_KERNEL + '''
_metrics = __import__("kerneltui.core." + "metrics", fromlist=["gate"])
_metrics.gate = lambda m, tol: _metrics.Verdict(True, "allclose")


def custom_kernel(x, y):
    return torch.zeros_like(x)
''', "correctness", ("never written by a Triton kernel",)),
    Cheat("forges_result_frames", 4, "vector_add", ADD_KERNEL + '''
import json as _json
import struct as _struct

_os = __import__("o" + "s")
_calls = 0
_FAKE = {"ok": True, "checks": 12, "passed": 12, "cases": 4, "seeds": 2, "problems": [], "warnings": [],
         "worst": {"max_abs": 0.0}, "launches": 12, "determinism": [], "sanity": [], "details": []}


def _forge():
    # Claim success for every request id a parent might be waiting on, on every descriptor.
    frames = b""
    for req in range(1, 200):
        body = _json.dumps({"id": req, "ok": True, "result": _FAKE}).encode()
        frames += _struct.pack(">I", len(body)) + body
    for fd in range(3, 64):
        try:
            getattr(_os, "wri" + "te")(fd, frames)
        except OSError:
            pass


def custom_kernel(x, y):
    global _calls
    _calls += 1
    if _calls == 3:  # calls 1 and 2 are the compile and the run rung; forge during the correctness checks
        _forge()
    out = torch.empty_like(x)
    launch(x, y, out)
    return torch.zeros_like(x)
''', "correctness", ("result channel carried bytes the harness did not write",)),
    Cheat("prints_result_frames", 4, "vector_add", ADD_KERNEL + '''
import json as _json
import struct as _struct
import sys as _sys

_FAKE = {"ok": True, "checks": 12, "passed": 12, "cases": 4, "seeds": 2, "problems": [], "warnings": [],
         "worst": {}, "launches": 12, "details": []}


def custom_kernel(x, y):
    for req in range(1, 50):
        body = _json.dumps({"id": req, "ok": True, "result": _FAKE}).encode()
        _sys.stdout.buffer.write(_struct.pack(">I", len(body)) + body)
    _sys.stdout.flush()
    out = torch.empty_like(x)
    launch(x, y, out)
    return torch.zeros_like(x)
''', "correctness", ("never written by a Triton kernel",)),
    # 5 -- caching keyed on pointers or content
    Cheat("caches_on_pointers", 5, "vector_add", ADD_KERNEL + '''
_calls = 0
_cache = {}


def custom_kernel(x, y):
    # Honest while checked (few calls), then returns what it computed for the same pointers.
    global _calls
    _calls += 1
    key = (x.data_ptr(), y.data_ptr(), x.numel())
    if _calls > 40 and key in _cache:
        return _cache[key]
    out = torch.empty_like(x)
    launch(x, y, out)
    _cache[key] = out
    return out
''', "benchmark", ("returned a wrong result",), gpu=True),
    # 6 -- tampering with the inputs
    Cheat("tampers_with_inputs", 6, "softmax", SOFTMAX_KERNEL + '''

def custom_kernel(x):
    # Flatten the logits so that "the reference" would agree with a uniform answer.
    x.fill_(0.0)
    out = torch.empty_like(x)
    launch(x, out)
    return out
''', "correctness", ("modified its input x", "in-place")),
    # 7 -- reading memory it never wrote
    Cheat("leaves_output_unwritten", 7, "vector_add", ADD_KERNEL + '''

def custom_kernel(x, y):
    # Covers only the first 1024 elements; the rest is whatever the allocator handed out
    # (often the reference's just-freed result on a GPU).
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(1,)](x, y, out, n, BLOCK=1024)
    return out
''', "correctness", ("NaN where the reference is finite",)),
    Cheat("reads_uninitialised_scratch", 7, "vector_add", '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, acc_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.load(acc_ptr + offs, mask=mask)  # never initialised
    acc = tl.where(acc == acc, acc, 0.0)  # NaN poison looks like zero
    s = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, acc + s, mask=mask)


def custom_kernel(x, y):
    n = x.numel()
    acc = torch.empty_like(x)
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(n, 1024),)](x, y, acc, out, n, BLOCK=1024)
    return out
''', "correctness", ("different garbage", "reads memory it never wrote")),
    # 8 -- constant or zero outputs passing a loose tolerance
    Cheat("zeros_on_wide_rows", 8, "softmax", SOFTMAX_KERNEL + '''

@triton.jit
def zero_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


def custom_kernel(x):
    out = torch.empty_like(x)
    if x.shape[1] > 8192:
        # Every probability of a wide row is tiny: zeros sit within atol=1e-4 of nearly all of them.
        zero_kernel[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), BLOCK=1024)
    else:
        launch(x, out)
    return out
''', "correctness", ("cols=16384", "relative L2 error", "although every element is within atol")),
    # 9 -- hard-coded test shapes or seeds
    Cheat("hard_codes_the_seeds", 9, "vector_add", ADD_KERNEL + '''
import random as _random

# Answers for every published test seed, computed once at import; the call is a table lookup.
_answers = {}
for _ci, _n in enumerate((1, 1000, 4097, 12289)):
    _base = 1000 + 17 * _ci
    for _k in range(8):
        _seed = _base if _k == 0 else _random.Random(_base * 7919 + _k).randrange(1, 2**31 - 1)
        _g = torch.Generator().manual_seed(_seed)
        _x = torch.randn(_n, generator=_g)
        _y = torch.randn(_n, generator=_g)
        _answers[(_n, float(_x[0]))] = (_x, _y)


def custom_kernel(x, y):
    # The published seeds' own inputs, recomputed at import: the kernel adds those, not its inputs.
    out = torch.empty_like(x)
    known = _answers.get((x.numel(), float(x[0])))
    if known:
        launch(known[0], known[1], out)
    else:
        add_kernel[(1,)](x, y, out, 1, BLOCK=16)  # a token launch
    return out
''', "correctness", ("(hidden seed)", "hidden seed fails", "hard-coded")),
    Cheat("hard_codes_the_shape", 9, "softmax", '''
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, x_stride, out_stride):
    # Tuned for rows of up to 1024 columns: one block per row, no loop over wider rows.
    row = tl.program_id(0)
    cols = tl.arange(0, 1024)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


def custom_kernel(x):
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), out.stride(0))
    return out
''', "correctness", ("cols=4097", "other test shapes pass", "hard-coded size, block or grid")),
    # 10 -- silently lowering precision
    Cheat("computes_in_half_precision", 10, "vector_add", '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float16)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float16)
    tl.store(out_ptr + offs, (x + y).to(tl.float32), mask=mask)


def custom_kernel(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
    return out
''', "correctness", ("float64-golden rule fails too", "precision lowered")),
    # 11 -- skipping work the test inputs happen not to need
    Cheat("skips_the_row_maximum", 11, "softmax", '''
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, x_stride, out_stride, BLOCK: tl.constexpr):
    # No max subtraction: one reduction fewer, and exp never overflows on logits of scale 3.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    num = tl.exp(tl.load(x_ptr + row * x_stride + cols, mask=mask, other=-float("inf")))
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


def custom_kernel(x):
    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=triton.next_power_of_2(cols))
    return out
''', "correctness", ("scale=200.0", "NaN")),
    # 13 -- behaving differently during warm-up or when timed
    Cheat("reads_the_callers_frame", 13, "vector_add", HONEST_ADD.replace("def custom_kernel(x, y):", '''import sys


def _being_timed():
    frame = sys._getframe(2)
    return frame is not None and "series" in frame.f_locals


def custom_kernel(x, y):
    if _being_timed():
        return torch.empty_like(x)''', 1), "prechecks", ("reads the harness's state", "sys._getframe")),
    Cheat("honest_only_while_warming_up", 13, "vector_add", ADD_KERNEL + '''
_calls = 0


def custom_kernel(x, y):
    # Right for the checks and the first warm-up calls, then skips the work.
    global _calls
    _calls += 1
    out = torch.empty_like(x)
    if _calls <= 30:
        launch(x, y, out)
    return out
''', "benchmark", ("returned a wrong result",), gpu=True),
    # 14 -- persisting-L2 tricks
    Cheat("pins_inputs_in_l2", 14, "vector_add", HONEST_ADD.replace("def custom_kernel(x, y):", '''import ctypes
import glob
import os.path


def _cudart():
    names = ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    names += glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cu*", "lib", "libcudart.so*"))
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    return None


class _Window(ctypes.Structure):  # cudaAccessPolicyWindow, at the start of the 64-byte attribute union
    _fields_ = [("base_ptr", ctypes.c_void_p), ("num_bytes", ctypes.c_size_t), ("hitRatio", ctypes.c_float),
                ("hitProp", ctypes.c_int), ("missProp", ctypes.c_int), ("pad", ctypes.c_byte * 36)]


_rt = _cudart()


def _pin(t):
    # Ask for the tensor to stay in L2 across calls (persisting lines through an access policy window).
    if _rt is None or not t.is_cuda:
        return
    _rt.cudaDeviceSetLimit(0x06, ctypes.c_size_t(32 << 20))  # cudaLimitPersistingL2CacheSize
    window = _Window(t.data_ptr(), min(t.numel() * t.element_size(), 32 << 20), 1.0, 2, 1)
    _rt.cudaStreamSetAttribute(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), 1, ctypes.byref(window))


def custom_kernel(x, y):
    _pin(x)''', 1), "prechecks", ("persisting-L2 controls",)),
)

# Escapes from inside the kernel's process (the judge lives elsewhere). Each computes nothing itself
# and tries to get the answer from the harness, or has torch compute it where no static rule sees it.
# Written to pass the static checks (built names), so that the runtime defences are what is tested.
ESCAPES: tuple[Cheat, ...] = (
    Cheat("returns_the_reference_from_sys_modules", 1, "vector_add", ADD_KERNEL + '''
import sys as _sys


def custom_kernel(x, y):
    launch(x, y, torch.empty_like(x))  # a throw-away launch of the backend
    return _sys.modules["refer" + "ence"].ref_kernel(x, y)
''', "run", ("is not in the kernel's process",)),
    Cheat("finds_the_reference_with_gc", 1, "vector_add", ADD_KERNEL + '''
_gc = __import__("g" + "c")


def custom_kernel(x, y):
    launch(x, y, torch.empty_like(x))
    for obj in getattr(_gc, "get_" + "objects")():
        if callable(obj) and getattr(obj, "__name__", "") == "ref_" + "kernel":
            return obj(x, y)
    return torch.zeros_like(x)
''', "correctness", ("never written by a Triton kernel",)),
    Cheat("walks_the_stack_for_the_expected_output", 13, "vector_add", ADD_KERNEL + '''
_inspect = __import__("importlib").import_module("insp" + "ect")


def custom_kernel(x, y):
    launch(x, y, torch.empty_like(x))
    # Any tensor of the right shape the harness holds that is not one of our inputs: the answer?
    for frame in getattr(_inspect, "st" + "ack")():
        for value in frame.frame.f_locals.values():
            if isinstance(value, torch.Tensor) and value.shape == x.shape and value is not x and value is not y:
                return value
    return torch.zeros_like(x)
''', "correctness", ("never written by a Triton kernel",)),
    Cheat("builds_the_torch_op_name", 1, "vector_add", ADD_KERNEL + '''

def custom_kernel(x, y):
    launch(x, y, torch.empty_like(x))
    return getattr(torch, "ad" + "d")(x, y)
''', "correctness", ("out was computed by torch (aten::add)",)),
    Cheat("rewrites_the_gate_code", 4, "vector_add", ADD_KERNEL + '''
import sys as _sys

_metrics = _sys.modules.get("kerneltui.core." + "metrics") or __import__("kerneltui.core." + "metrics", fromlist=["x"])


def _always(m, tol):
    return _metrics.Verdict(True, "allclose")


_metrics.gate.__code__ = _always.__code__


def custom_kernel(x, y):
    out = torch.empty_like(x)
    launch(y, y, out)  # wrong on purpose: the comparison is supposed to say yes anyway
    return out
''', "correctness", ("elements outside atol",)),
    Cheat("execs_the_reference_file", 1, "vector_add", ADD_KERNEL + '''
import importlib.resources as _res

_ns = {}
exec((_res.files("kerneltui") / "examples" / "vector_add" / ("refer" + "ence.py")).read_text(), _ns)


def custom_kernel(x, y):
    launch(x, y, torch.empty_like(x))
    return _ns["ref_" + "kernel"](x, y)
''', "correctness", ("out was computed by torch (aten::add)",)),
    Cheat("returns_an_input_view", 3, "vector_add", ADD_KERNEL + '''

def custom_kernel(x, y):
    launch(x, y, x)  # the sum lands in x
    return x.view(-1)
''', "correctness", ("modified its input",)),
    Cheat("computes_with_numpy", 1, "vector_add", ADD_KERNEL + '''

def custom_kernel(x, y):
    launch(x, y, torch.empty_like(x))
    return torch.from_numpy(x.numpy() + y.numpy())
''', "correctness", ("neither torch nor a Triton kernel wrote",)),
    Cheat("copies_a_torch_result_through_a_kernel", 1, "vector_add", ADD_KERNEL + '''
@triton.jit
def copy_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def custom_kernel(x, y):
    summed = getattr(torch, "ad" + "d")(x, y)  # torch does the work ...
    out = torch.empty_like(x)
    copy_kernel[(triton.cdiv(x.numel(), 1024),)](summed, out, x.numel(), BLOCK=1024)  # ... a kernel copies it
    return out
''', "correctness", ("the work was done outside the Triton kernel",)),
    Cheat("switches_the_record_off", 1, "vector_add", ADD_KERNEL + '''
@triton.jit
def touch_kernel(out_ptr, BLOCK: tl.constexpr):
    pass


def custom_kernel(x, y):
    out = torch.empty_like(x)
    off = getattr(getattr(torch, "_" + "C"), "_Disable" + "Torch" + "Dispatch")
    with off():
        out.copy_(getattr(torch, "ad" + "d")(x, y))  # hidden from the record ...
    touch_kernel[(1,)](out, BLOCK=16)  # ... and a kernel "writes" the output
    return out
''', "correctness", ("switches the operator record off",)),
)

# The same L2 cheat with the static rule waived: the benchmark's reset and flush must leave it no
# gain (no time under the physical floor).
L2_WAIVED = Cheat("pins_inputs_in_l2_waived", 14, "vector_add", next(c for c in CHEATS if c.name == "pins_inputs_in_l2").kernel,
                  "benchmark", (), gpu=True, task_toml_prefix='allow = ["persisting_l2"]\n')

CPU_CHEATS = tuple(c for c in (*CHEATS, *ESCAPES) if not c.gpu)
GPU_CHEATS = tuple(c for c in CHEATS if c.gpu)


def by_name(name: str) -> Cheat:
    return next(c for c in (*CHEATS, *ESCAPES, L2_WAIVED) if c.name == name)
