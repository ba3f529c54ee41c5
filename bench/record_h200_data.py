"""Record real tool output on a GPU machine for kerneltui's parser tests (tests/data/).

Writes into OUTDIR:
  ncu/<kind>/report.ncu-rep, raw.csv, details.csv, source_sass.csv, source_cuda_sass.csv,
      ncu_stdout.txt, commands.txt      for kind in memory (256 MB vector add), compute (bf16
      4096³ matmul), latency (a 1024-element vector add)
  probe.json     what the machine's Python stack offers (Triton's Proton profiler, CUDA driver
                 entry points, device properties)
Usage:  python bench/record_h200_data.py OUTDIR
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

TARGET = textwrap.dedent(
    '''
    import sys, torch, triton, triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)

    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
            b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
            acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))

    kind = sys.argv[1]
    torch.manual_seed(0)
    if kind in ("memory", "latency"):
        n = 64 * 1024 * 1024 if kind == "memory" else 1024
        x = torch.randn(n, device="cuda"); y = torch.randn(n, device="cuda"); out = torch.empty_like(x)
        for _ in range(3):
            add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("kerneltui")
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        assert torch.allclose(out, x + y)
    else:
        M = N = K = 4096
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        grid = (M // 128, N // 128)
        for _ in range(2):
            matmul_kernel[grid](a, b, c, M, N, K, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("kerneltui")
        matmul_kernel[grid](a, b, c, M, N, K, BM=128, BN=128, BK=64, num_warps=8, num_stages=3)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        ref = (a.float() @ b.float())
        err = ((c.float() - ref).norm() / ref.norm()).item()
        assert err < 2e-2, err
    print("target done", kind)
    '''
)

SECTIONS = ["SpeedOfLight", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis", "Occupancy", "LaunchStats",
            "WarpStateStats", "SourceCounters"]


def find_ncu() -> str | None:
    exe = shutil.which("ncu")
    if exe:
        return exe
    for cand in sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu")) + [Path("/usr/local/cuda/bin/ncu")]:
        if cand.exists():
            return str(cand)
    return None


def run(cmd: list[str], out: Path, log: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    log.append(" ".join(cmd) + f"  > {out.name}")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    out.write_text(proc.stdout + ("\n--- stderr ---\n" + proc.stderr if proc.stderr.strip() else ""))
    return proc


def record_ncu(outdir: Path) -> dict[str, object]:
    ncu = find_ncu()
    if ncu is None:
        return {"ncu": None}
    target = outdir / "target.py"
    target.write_text(TARGET)
    result: dict[str, object] = {"ncu": ncu, "version": subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout}
    for kind, kname in (("memory", "add_kernel"), ("compute", "matmul_kernel"), ("latency", "add_kernel")):
        d = outdir / "ncu" / kind
        d.mkdir(parents=True, exist_ok=True)
        log: list[str] = []
        rep = d / "report"
        cmd = [ncu, "--clock-control", "none", "--target-processes", "all", "--nvtx", "--nvtx-include", "kerneltui/",
               "-k", f"regex:{kname}", "--launch-count", "1", "--import-source", "yes", "-f", "-o", str(rep)]
        for s in SECTIONS:
            cmd += ["--section", s]
        cmd += [sys.executable, str(target), kind]
        proc = run(cmd, d / "ncu_stdout.txt", log, timeout=600)
        result[f"{kind}_rc"] = proc.returncode
        repfile = Path(str(rep) + ".ncu-rep")
        if repfile.exists():
            run([ncu, "--import", str(repfile), "--csv", "--page", "raw"], d / "raw.csv", log)
            run([ncu, "--import", str(repfile), "--csv", "--page", "details"], d / "details.csv", log)
            run([ncu, "--import", str(repfile), "--csv", "--page", "details", "--print-details", "all"], d / "details_all.csv", log)
            run([ncu, "--import", str(repfile), "--csv", "--page", "source", "--print-source", "sass"], d / "source_sass.csv", log)
            run([ncu, "--import", str(repfile), "--csv", "--page", "source", "--print-source", "cuda,sass"], d / "source_cuda_sass.csv", log)
            run([ncu, "--import", str(repfile), "--page", "details"], d / "details.txt", log)
            run([ncu, "--import", str(repfile), "--csv", "--page", "raw", "--print-units", "base"], d / "raw_base_units.csv", log)
        (d / "commands.txt").write_text("\n".join(log) + "\n")
    # What a plain ncu run prints when the NVTX filter matches nothing (an error-path sample).
    d = outdir / "ncu" / "errors"
    d.mkdir(parents=True, exist_ok=True)
    log = []
    run([ncu, "--clock-control", "none", "--nvtx", "--nvtx-include", "nothing_matches/", "-f", "-o", str(d / "none"),
         sys.executable, str(target), "latency"], d / "no_kernels_profiled.txt", log)
    (d / "commands.txt").write_text("\n".join(log) + "\n")
    return result


def probe() -> dict[str, object]:
    info: dict[str, object] = {}
    import torch
    import triton

    info["torch"] = torch.__version__
    info["triton"] = triton.__version__
    p = torch.cuda.get_device_properties(0)
    info["device"] = {"name": p.name, "cc": f"{p.major}.{p.minor}", "sms": p.multi_processor_count,
                      "l2": getattr(p, "L2_cache_size", None), "mem": p.total_memory}
    try:
        import triton.profiler as proton  # noqa: F401
        import triton.profiler.language as pl

        info["proton"] = {"ok": True, "language": sorted(n for n in dir(pl) if not n.startswith("_"))}
        import triton.profiler as prof

        info["proton"]["api"] = sorted(n for n in dir(prof) if not n.startswith("_"))  # type: ignore[index]
    except Exception as exc:
        info["proton"] = {"ok": False, "error": repr(exc)}
    import ctypes

    try:
        lib = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int()
        lib.cuDriverGetVersion(ctypes.byref(v))
        info["driver_api"] = v.value
        info["cudart_reset_l2"] = hasattr(ctypes.CDLL("libcudart.so.13") if Path("/usr/local/cuda/lib64/libcudart.so.13").exists() else lib, "cudaCtxResetPersistingL2Cache")
    except OSError as exc:
        info["driver_api"] = repr(exc)
    for tool in ("nvcc", "ptxas", "nvdisasm", "cuobjdump", "ncu", "compute-sanitizer", "nvidia-smi"):
        info[f"which_{tool}"] = shutil.which(tool)
    smi = shutil.which("nvidia-smi")
    if smi:
        info["smi"] = subprocess.run([smi, "--query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,clocks.sm", "--format=csv"],
                                     capture_output=True, text=True).stdout
    info["env_cuda_home"] = os.environ.get("CUDA_HOME")
    return info


def main() -> int:
    outdir = Path(sys.argv[1])
    outdir.mkdir(parents=True, exist_ok=True)
    data = {"probe": probe()}
    data["ncu"] = record_ncu(outdir)
    (outdir / "probe.json").write_text(json.dumps(data, indent=2, default=str))
    print(json.dumps(data, indent=1, default=str)[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
