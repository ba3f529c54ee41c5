"""Record real compiler and disassembler output for the asm parser tests.

    python tests/data/asm/generate.py            # rewrite every case here
    python tests/data/asm/generate.py --out DIR  # somewhere else (the GPU bench adds device-built cases)

Each case folder holds what the tools printed, untouched: the stages Triton (ahead of time, no GPU
needed) or nvcc wrote, the cubin, ``nvdisasm -g -c`` / ``nvdisasm -gp -c``, ``cuobjdump -sass`` /
``-res-usage`` and ``ptxas -v`` run again on the PTX; ``case.json`` says which tool and version
made what. Sources are copied to /tmp/kerneltui-asm-data/task first, so the paths inside the
recorded output are the same on every machine (like a worker's private task copy).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
TASK_ROOT = Path("/tmp/kerneltui-asm-data/task")
EXAMPLES = REPO / "kerneltui" / "examples"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    os.environ.pop("TRITON_INTERPRET", None)
    # A private Triton cache: a cached kernel would carry the paths of whatever copy built it first.
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="kerneltui-asm-triton-cache-")
    sys.path.insert(0, str(REPO))
    from kerneltui.core.asm.tools import find_tool

    if TASK_ROOT.exists():
        shutil.rmtree(TASK_ROOT)
    TASK_ROOT.mkdir(parents=True)
    for name, src in (("vector_add.py", EXAMPLES / "vector_add" / "kernel.py"),
                      ("matmul.py", EXAMPLES / "matmul" / "kernel.py"),
                      ("softmax.py", EXAMPLES / "softmax" / "kernel.py"),
                      ("two_kernels.cu", HERE / "sources" / "two_kernels.cu"),
                      ("inlined.cu", HERE / "sources" / "inlined.cu")):
        shutil.copy(src, TASK_ROOT / name)
    sys.path.insert(0, str(TASK_ROOT))

    triton_tools = _triton_tools()
    cases = []
    cases += _triton_cases(args.out, triton_tools)
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
    if nvcc:
        cases += _cuda_cases(args.out, Path(nvcc), triton_tools)
    else:
        print("nvcc not found: CUDA C++ cases not recorded", file=sys.stderr)
    pypi_nvdisasm = next((t for t in _all("nvdisasm") if "pip package" in t.origin), None)
    if pypi_nvdisasm is not None:
        case = args.out / "triton_vector_add_mod16"
        _save(case / "nvdisasm_pypi_g.sass", _run([pypi_nvdisasm.path, "-g", "-c", str(case / "kernel.cubin")]))
    print("recorded:", ", ".join(cases))
    print("tools:", ", ".join(f"{k}={v}" for k, v in sorted(triton_tools.items())), "| nvdisasm found first:",
          find_tool("nvdisasm"))
    return 0


def _all(name: str) -> list:
    from kerneltui.core.asm.tools import find_all

    return find_all(name)


def _triton_tools() -> dict[str, str]:
    from kerneltui.core.asm.tools import triton_bin_dir

    bin_dir = triton_bin_dir()
    if bin_dir is None:
        raise SystemExit("triton is not installed: it ships the nvdisasm/cuobjdump/ptxas this script records")
    return {name: str(bin_dir / name) for name in ("nvdisasm", "cuobjdump", "ptxas")}


def _triton_cases(out: Path, tools: dict[str, str]) -> list[str]:
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    import matmul
    import softmax
    import vector_add

    from kerneltui.core.backends.triton_dump import Twins, specialise, variant_label

    f32 = torch.empty(1 << 20, dtype=torch.float32)
    a16 = torch.empty((4096, 4096), dtype=torch.float16)
    rows = torch.empty((8192, 8192), dtype=torch.float32)

    def mm_args(kwargs: dict) -> tuple:
        return ((a16, a16, a16, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1),
                dict(BM=128, BN=128, BK=64, GROUP_M=8, num_warps=8, num_stages=3, **kwargs))

    specs = [
        ("triton_vector_add_mod16", vector_add.add_kernel, (f32, f32, f32, 1 << 20), {"BLOCK": 1024}, 90),
        ("triton_vector_add_n1000", vector_add.add_kernel, (f32, f32, f32, 1000), {"BLOCK": 1024}, 90),
        ("triton_vector_add_n1", vector_add.add_kernel, (f32, f32, f32, 1), {"BLOCK": 1024}, 90),
        ("triton_matmul_sm90a", matmul.matmul_kernel, *mm_args({}), 90),
        ("triton_matmul_sm80", matmul.matmul_kernel, *mm_args({}), 80),
        ("triton_softmax_8192", softmax.softmax_kernel, (rows, rows, 8192, 8192, 8192), {"BLOCK": 8192, "num_warps": 8}, 90),
        # Too few registers on purpose: ptxas spills to local memory (STL/LDL in the SASS).
        ("triton_softmax_spills", softmax.softmax_kernel, (rows, rows, 8192, 8192, 8192),
         {"BLOCK": 8192, "num_warps": 4, "maxnreg": 40}, 90),
    ]
    # Big listings are kept where a test reads them (cuobjdump -sass prints every encoding).
    drop = {"triton_matmul_sm90a": {"cuobjdump.sass"},
            "triton_matmul_sm80": {"cuobjdump.sass", "kernel.ll", "kernel.ttir", "kernel.ttgir"},
            "triton_softmax_spills": {"cuobjdump.sass", "kernel.ll", "kernel.ttir"},
            "triton_softmax_8192": {"cuobjdump.sass"}}
    names = []
    for name, fn, call_args, kwargs, cap in specs:
        target = GPUTarget("cuda", cap, 32)
        launch = specialise(fn, call_args, dict(kwargs), make_backend(target), Twins())
        kernel = triton.compile(ASTSource(launch.fn, launch.signature, launch.constexprs, launch.attrs),
                                target=target, options=launch.options.__dict__)
        case = out / name
        if case.exists():
            shutil.rmtree(case)
        case.mkdir(parents=True)
        for stage, suffix in (("ttir", ".ttir"), ("ttgir", ".ttgir"), ("llir", ".ll"), ("ptx", ".ptx")):
            _save(case / f"kernel{suffix}", kernel.asm[stage])
        (case / "kernel.cubin").write_bytes(kernel.asm["cubin"])
        arch = f"sm_{cap}" + ("a" if cap >= 90 else "")
        meta = kernel.metadata
        shutil.copy(fn.fn.__code__.co_filename, case / "source.py")
        _tool_outputs(case, tools, arch, tools["ptxas"])
        _save(case / "case.json", json.dumps({
            "producer": f"triton {triton.__version__} (ahead of time)", "kernel": meta.name, "arch": arch,
            "variant": variant_label(launch), "source": f"{TASK_ROOT}/{Path(fn.fn.__code__.co_filename).name}",
            "metadata": {"num_warps": meta.num_warps, "num_stages": meta.num_stages, "shared": meta.shared,
                         "maxnreg": meta.maxnreg},
            "tools": {k: _version(v) for k, v in tools.items()},
        }, indent=1))
        for unwanted in drop.get(name, ()):
            (case / unwanted).unlink()
        names.append(name)
    return names


def _cuda_cases(out: Path, nvcc: Path, triton_tools: dict[str, str]) -> list[str]:
    names = []
    ptxas = nvcc.parent / "ptxas"
    for name, source in (("cuda_two_kernels", "two_kernels.cu"), ("cuda_inlined", "inlined.cu")):
        case = out / name
        if case.exists():
            shutil.rmtree(case)
        case.mkdir(parents=True)
        src = TASK_ROOT / source
        shutil.copy(src, case / "source.cu")
        _run([str(nvcc), "-arch=sm_90a", "-lineinfo", "-ptx", "-o", str(case / "kernel.ptx"), str(src)])
        _run([str(nvcc), "-arch=sm_90a", "-lineinfo", "-cubin", "-o", str(case / "kernel.cubin"), str(src)])
        _tool_outputs(case, triton_tools, "sm_90a", str(ptxas))
        _save(case / "case.json", json.dumps({
            "producer": f"nvcc {_version(str(nvcc))} -arch=sm_90a -lineinfo", "source": str(src), "arch": "sm_90a",
            "tools": {**{k: _version(v) for k, v in triton_tools.items()}, "ptxas (nvcc's)": _version(str(ptxas))},
        }, indent=1))
        names.append(name)
    return names


def _tool_outputs(case: Path, tools: dict[str, str], arch: str, ptxas: str) -> None:
    cubin = str(case / "kernel.cubin")
    _save(case / "nvdisasm_g.sass", _run([tools["nvdisasm"], "-g", "-c", cubin]))
    _save(case / "nvdisasm_gp.sass", _run([tools["nvdisasm"], "-gp", "-c", cubin]))
    _save(case / "cuobjdump.sass", _run([tools["cuobjdump"], "-sass", cubin]))
    _save(case / "res_usage.txt", _run([tools["cuobjdump"], "-res-usage", cubin]))
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([ptxas, "-lineinfo", "-v", f"--gpu-name={arch}", str(case / "kernel.ptx"),
                               "-o", str(Path(tmp) / "again.cubin")], capture_output=True, text=True, check=True)
        _save(case / "ptxas_v.txt", proc.stdout + proc.stderr)


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return proc.stdout


def _version(path: str) -> str:
    from kerneltui.core.asm.tools import tool_version

    return tool_version(path) or "?"


def _save(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
