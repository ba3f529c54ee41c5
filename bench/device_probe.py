"""What the GPU box allows: CUDA IPC between unrelated processes, and the sandbox's parts.

The judge and the candidate's worker exchange tensors without copying through the host (CUDA IPC
handles of torch storages), and candidate code runs in a sandbox (network namespace, Landlock,
resource limits). Each part is tried here, on the machine that has to run it, and the table says
what worked and what it cost:

* ``ipc``       a storage exported with ``_share_cuda_`` in one process, mapped in a second process
                started with plain ``subprocess`` (not multiprocessing), written there, read back;
                an output exported by the second process and mapped by the first; a re-export of
                an imported mapping (expected to fail: aliasing must be seen on the exporting side)
* ``netns``     CUDA, a Triton JIT compile and ncu inside ``unshare -n`` (loopback up and down)
* ``landlock``  the Landlock ABI, and a CUDA + Triton process whose writes are confined to a
                scratch folder and the Triton cache
* ``rlimits``   CUDA's start under an address-space limit (CUDA reserves a large virtual range)
* ``cgroup``    whether a cgroup can be made for a run (v1/v2), and ``PR_SET_PDEATHSIG``

Usage: python bench/device_probe.py [--out DIR]
"""

from __future__ import annotations

import argparse
import base64
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROWS: list[tuple[str, str, str]] = []


def row(part: str, result: str, detail: str = "") -> None:
    ROWS.append((part, result, detail))
    print(f"[{part}] {result} {detail}", flush=True)


def run(cmd: list[str] | str, timeout: float = 120, env: dict[str, str] | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, shell=isinstance(cmd, str), **kw)  # type: ignore[call-overload]


CHILD_IPC = textwrap.dedent('''
    import base64, json, sys, time, torch
    msg = json.loads(sys.stdin.readline())
    torch.cuda.init()              # mapping a handle before CUDA is initialised crashes the process
    t0 = time.perf_counter()
    h = msg["handle"]
    args = (h[0], base64.b64decode(h[1]), h[2], h[3], base64.b64decode(h[4]), h[5], base64.b64decode(h[6]) if h[6] else b"", h[7])
    storage = torch.UntypedStorage._new_shared_cuda(*args)
    x = torch.empty(0, dtype=torch.float32, device="cuda").set_(storage, 0, (msg["numel"],), (1,))
    map_ms = (time.perf_counter() - t0) * 1e3
    total = float(x.sum())
    x.mul_(2)                      # the parent must see this write
    out = x + 1                    # an output this process owns, exported back
    torch.cuda.synchronize()
    s = out.untyped_storage()._share_cuda_()
    enc = [s[0], base64.b64encode(s[1]).decode(), s[2], s[3], base64.b64encode(s[4]).decode(), s[5],
           base64.b64encode(s[6] or b"").decode(), s[7]]
    reexport = "ok"
    try:
        x.untyped_storage()._share_cuda_()
    except Exception as exc:
        reexport = f"{type(exc).__name__}: {str(exc)[:80]}"
    print(json.dumps({"sum": total, "map_ms": map_ms, "out": enc, "numel": out.numel(), "reexport": reexport}), flush=True)
    sys.stdin.readline()           # keep `out` alive until the parent has read it
''')


def probe_ipc() -> None:
    import torch

    n = 1 << 24
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    s = x.untyped_storage()._share_cuda_()
    export_ms = (time.perf_counter() - t0) * 1e3
    enc = [s[0], base64.b64encode(s[1]).decode(), s[2], s[3], base64.b64encode(s[4]).decode(), s[5],
           base64.b64encode(s[6] or b"").decode(), s[7]]
    child = subprocess.Popen([sys.executable, "-c", CHILD_IPC], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdin and child.stdout
    child.stdin.write(json.dumps({"handle": enc, "numel": n}) + "\n")
    child.stdin.flush()
    line = child.stdout.readline()
    if not line:
        child.wait(30)
        row("ipc", "FAILED", f"exit {child.returncode}: " + (child.stderr.read()[-400:] if child.stderr else ""))
        return
    reply = json.loads(line)
    torch.cuda.synchronize()
    doubled = bool(torch.equal(x, torch.arange(n, dtype=torch.float32, device="cuda") * 2))
    h = reply["out"]
    t0 = time.perf_counter()
    storage = torch.UntypedStorage._new_shared_cuda(h[0], base64.b64decode(h[1]), h[2], h[3], base64.b64decode(h[4]),
                                                    h[5], base64.b64decode(h[6]), h[7])
    out = torch.empty(0, dtype=torch.float32, device="cuda").set_(storage, 0, (reply["numel"],), (1,))
    back_ms = (time.perf_counter() - t0) * 1e3
    out_ok = bool(torch.equal(out, x + 1))
    child.stdin.write("\n")
    child.stdin.flush()
    child.wait(30)
    ok = doubled and out_ok and abs(reply["sum"] - (n - 1) * n / 2) / (n * n) < 1e-3
    row("ipc", "ok" if ok else "WRONG",
        f"export {export_ms:.2f} ms, child map {reply['map_ms']:.2f} ms, parent map {back_ms:.2f} ms; child write seen: "
        f"{doubled}; child output read: {out_ok}; re-export of an imported mapping: {reply['reexport']}")


TRITON_SNIPPET = textwrap.dedent('''
    import os, torch, triton, triton.language as tl
    @triton.jit
    def k(x, n, B: tl.constexpr):
        o = tl.program_id(0) * B + tl.arange(0, B)
        tl.store(x + o, tl.load(x + o, mask=o < n) + 1, mask=o < n)
    x = torch.zeros(1000, device="cuda")
    k[(4,)](x, 1000, B=256)
    torch.cuda.synchronize()
    print("triton ok", float(x.sum()), os.environ.get("TRITON_CACHE_DIR"))
''')


def probe_netns(scratch: Path) -> None:
    script = scratch / "t.py"
    script.write_text(TRITON_SNIPPET)
    env = dict(os.environ, TRITON_CACHE_DIR=str(scratch / "triton-cache"))
    r = run(["unshare", "-n", sys.executable, str(script)], env=env)
    row("netns", "ok" if r.returncode == 0 else f"rc={r.returncode}", (r.stdout + r.stderr).strip()[-200:])
    ncu = shutil.which("ncu") or next((str(p) for p in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"))), None)
    if not ncu:
        row("netns+ncu", "no ncu")
        return
    for label, prefix in (("lo down", ""), ("lo up", "ip link set lo up; ")):
        cmd = (f"{prefix}{ncu} --clock-control none --metrics gpu__time_duration.sum --csv "
               f"{sys.executable} {script}")
        r = run(["unshare", "-n", "sh", "-c", cmd], env=env, timeout=180)
        good = r.returncode == 0 and "gpu__time_duration" in r.stdout
        row(f"netns+ncu ({label})", "ok" if good else f"rc={r.returncode}", (r.stdout + r.stderr).strip()[-240:])


LANDLOCK_CHILD = textwrap.dedent('''
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    SYS_create, SYS_add, SYS_restrict = 444, 445, 446
    abi = libc.syscall(SYS_create, None, 0, 1)
    # every filesystem access right of ABI >= 3 (truncate); handled = what the ruleset controls
    READ = (1 << 0) | (1 << 2) | (1 << 3)                     # execute, read file, read dir
    WRITE_ALL = (1 << 1) | sum(1 << i for i in range(4, 13))   # write file, remove, make_*, refer
    if abi >= 3:
        WRITE_ALL |= 1 << 14                                   # truncate
    class Attr(ctypes.Structure):
        _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                    ("scoped", ctypes.c_uint64)]
    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]
    attr = Attr(READ | WRITE_ALL, 0, 0)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    fd = libc.syscall(SYS_create, ctypes.byref(attr), size, 0)
    assert fd >= 0, ("create", ctypes.get_errno())
    def allow(path, rights):
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        pb = PathBeneath(rights, pfd)
        rc = libc.syscall(SYS_add, fd, 1, ctypes.byref(pb), 0)
        assert rc == 0, ("add", path, ctypes.get_errno())
        os.close(pfd)
    allow("/", READ)
    for p in sys.argv[1:]:
        allow(p, READ | WRITE_ALL)
    for dev in ("/dev",):
        allow(dev, READ | WRITE_ALL)   # /dev/nvidia*, /dev/shm
    libc.prctl(38, 1, 0, 0, 0)          # PR_SET_NO_NEW_PRIVS
    rc = libc.syscall(SYS_restrict, fd, 0)
    assert rc == 0, ("restrict", ctypes.get_errno())
    try:
        open("/root/landlock-probe-escape", "w").write("x")
        print("ESCAPED: wrote outside")
    except PermissionError:
        print("write outside refused")
    import runpy
    runpy.run_path(os.environ["SNIPPET"])   # Triton reads @jit sources from their file
''')


def probe_landlock(scratch: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(444, None, 0, 1)
    row("landlock abi", str(abi) if abi > 0 else f"none (errno {ctypes.get_errno()})")
    if abi <= 0:
        return
    snippet = scratch / "snippet.py"
    snippet.write_text(TRITON_SNIPPET)
    child = scratch / "ll.py"
    child.write_text(LANDLOCK_CHILD)
    cache = scratch / "triton-cache-ll"
    cache.mkdir()
    work = scratch / "work"
    work.mkdir()
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache), SNIPPET=str(snippet), HOME=str(work),
               TMPDIR=str(work))
    r = run([sys.executable, str(child), str(work), str(cache), "/tmp"], env=env, timeout=180)
    row("landlock+cuda+triton", "ok" if r.returncode == 0 and "triton ok" in r.stdout else f"rc={r.returncode}",
        (r.stdout + r.stderr).strip()[-300:])


def probe_rlimits() -> None:
    for gib in (64, 256, 1024, 0):
        limit = "" if gib == 0 else f"resource.setrlimit(resource.RLIMIT_AS, ({gib} << 30, {gib} << 30)); "
        code = f"import resource; {limit}import torch; x = torch.ones(1 << 20, device='cuda'); print(float(x.sum()))"
        r = run([sys.executable, "-c", code], timeout=120)
        row(f"RLIMIT_AS {gib or 'none'} GiB", "ok" if r.returncode == 0 else f"rc={r.returncode}",
            (r.stdout + r.stderr).strip().splitlines()[-1][:160] if (r.stdout + r.stderr).strip() else "")


def probe_cgroup() -> None:
    row("cgroup", Path("/proc/self/cgroup").read_text().strip().replace("\n", " | ")[:200])
    for base in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/pids")):
        target = base / "kerneltui-probe"
        try:
            target.mkdir()
            procs = (target / "cgroup.procs").exists()
            target.rmdir()
            row(f"cgroup mkdir {base}", "ok", f"cgroup.procs: {procs}")
        except OSError as exc:
            row(f"cgroup mkdir {base}", "no", exc.strerror or str(exc))
    r = run([sys.executable, "-c", "import ctypes; print(ctypes.CDLL(None).prctl(1, 9, 0, 0, 0))"])
    row("PR_SET_PDEATHSIG", r.stdout.strip())
    for tool in ("bwrap", "unshare", "ip", "setpriv", "prlimit"):
        row(f"tool {tool}", shutil.which(tool) or "missing")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="kerneltui-probe-"))
    for name, fn in (("ipc", probe_ipc), ("netns", lambda: probe_netns(scratch)),
                     ("landlock", lambda: probe_landlock(scratch)), ("rlimits", probe_rlimits), ("cgroup", probe_cgroup)):
        try:
            fn()
        except Exception as exc:  # one broken probe must not hide the others
            row(name, "PROBE ERROR", f"{type(exc).__name__}: {exc}")
    shutil.rmtree(scratch, ignore_errors=True)
    print("\n| part | result | detail |\n|---|---|---|")
    for part, result, detail in ROWS:
        print(f"| {part} | {result} | {detail.replace('|', '/')} |")
    if args.out:
        Path(args.out).write_text(json.dumps(ROWS, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
