"""Can a worker be forked on a GPU machine? Import what a Triton worker imports (torch, torch._dynamo,
Triton, kerneltui's backend and worker modules) in a process that never initialises CUDA, ask the
driver whether it was (the zygote's own check), then fork children that each start CUDA and run a
Triton kernel.

Prints, as JSON lines: the parent's import time and whether libcuda is mapped or CUDA initialised
after the imports; each forked child's time from fork to a checked kernel result; the same for a new
Python started the usual way (the exec'd worker's path); and what happens when the parent has asked
``torch.cuda.is_available()`` before forking. Run it on a GPU machine:

    python bench/zygote_cuda_probe.py [--children 3]
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# What the child does once CUDA is its own: start it, run one Triton kernel, check the result.
CHILD_WORK = """
import time, torch, triton, triton.language as tl
t0 = time.perf_counter()
torch.cuda.init()
t_init = time.perf_counter() - t0

@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

x = torch.randn(1 << 20, device="cuda")
y = torch.randn(1 << 20, device="cuda")
out = torch.empty_like(x)
_add[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
torch.cuda.synchronize()
ok = bool(torch.equal(out, x + y))
RESULT = {"cuda_init_s": round(t_init, 3), "kernel_ok": ok, "first_kernel_s": round(time.perf_counter() - t0, 3)}
"""


def libcuda_mapped() -> bool:
    from kerneltui.core.sandbox.zygote import cuda_driver_mapped  # the zygote's own rule

    return bool(cuda_driver_mapped(Path("/proc/self/maps").read_text()))


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def child_module() -> str:
    """CHILD_WORK as a file (Triton reads a @jit function's source from its file)."""
    folder = tempfile.mkdtemp(prefix="zygote-probe-")
    path = os.path.join(folder, "probe_child.py")
    with open(path, "w") as fh:
        fh.write(CHILD_WORK)
    return path


def fork_child(label: str) -> dict[str, object]:
    """Fork; the child runs CHILD_WORK and writes its result to a pipe."""
    read_end, write_end = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        result: dict[str, object]
        try:
            scope = runpy.run_path(child_module())
            result = dict(scope["RESULT"])
        except BaseException as exc:  # noqa: BLE001 - report whatever stopped CUDA in the child
            result = {"error": f"{type(exc).__name__}: {exc}"[:400]}
        os.write(write_end, json.dumps(result).encode())
        os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    row: dict[str, object] = {"probe": label, "wall_s": round(time.perf_counter() - started, 3),
                              "exit_status": status}
    row.update(json.loads(data or b'{"error": "no result"}'))
    return row


def exec_child() -> dict[str, object]:
    """A new Python that imports and then does the child's work: the exec'd worker's path."""
    code = ("import json, runpy, torch, torch._dynamo, triton, triton.language\n"
            f"print(json.dumps(runpy.run_path({child_module()!r})['RESULT']))")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    row: dict[str, object] = {"probe": "exec'd python", "wall_s": round(time.perf_counter() - started, 3),
                              "returncode": proc.returncode}
    lines = proc.stdout.strip().splitlines()
    row.update(json.loads(lines[-1]) if proc.returncode == 0 and lines else {"error": proc.stderr[-400:]})
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--children", type=int, default=3)
    parser.add_argument("--after-is-available", action="store_true",
                        help="(internal) ask torch.cuda.is_available() in the parent before forking")
    args = parser.parse_args()
    os.environ.pop("TRITON_INTERPRET", None)

    from kerneltui.core.sandbox.zygote import cuda_initialised
    from kerneltui.core.worker.contract.start import warm_imports

    started = time.perf_counter()
    import importlib

    for name in warm_imports("triton").modules:
        importlib.import_module(name)
    import torch

    from kerneltui.core.worker.child.evidence import dispatch_table
    from kerneltui.core.worker.child.known_code import known_code

    known_code(os.path.join(os.path.dirname(str(torch.__file__)), ""))
    dispatch_table(torch)
    parent = {"probe": "parent after the imports", "import_s": round(time.perf_counter() - started, 3),
              "libcuda_mapped": libcuda_mapped(), "cuda_initialized": torch.cuda.is_initialized(),
              "zygote_check": cuda_initialised(Path("/proc/self/maps").read_text()) or "not initialised: may fork",
              "threads": threads()}
    if args.after_is_available:
        parent["is_available"] = torch.cuda.is_available()
        parent["libcuda_mapped_after_is_available"] = libcuda_mapped()
        parent["zygote_check_after_is_available"] = cuda_initialised(Path("/proc/self/maps").read_text()) or "not initialised"
    print(json.dumps(parent), flush=True)
    for i in range(args.children):
        print(json.dumps(fork_child(f"forked child {i + 1}")), flush=True)
    if not args.after_is_available:
        for _ in range(2):
            print(json.dumps(exec_child()), flush=True)
        # The same parent again, but one that asked is_available() first (what a careless import could do).
        subprocess.run([sys.executable, __file__, "--children", "1", "--after-is-available"], timeout=300)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
