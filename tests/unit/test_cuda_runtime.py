"""kerneltui.cuda on its own: nvcc builds and their cache, kernel signatures, argument checks,
compile-only launches seen by a hook, and nvcc/ptxas output parsing."""

from __future__ import annotations

import ctypes
import runpy
from pathlib import Path

import pytest

from kerneltui.cuda import nvcc, params


def _has_nvcc() -> bool:
    try:
        nvcc.find_nvcc()
    except nvcc.NvccNotFound:
        return False
    return True


needs_nvcc = pytest.mark.skipif(not _has_nvcc(), reason="nvcc (CUDA toolkit) not installed")

SOURCE = r"""
#include "scale.cuh"
struct Pair { float lo; float hi; };

__global__ void scale(const float* __restrict__ x, float* __restrict__ y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = SCALE_EXTRA * s * x[i];
}

extern "C" __global__ void clamp(float* y, Pair p, unsigned long long n) {
    unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fminf(fmaxf(y[i], p.lo), p.hi);
}

template <int K> __global__ void fill(float* y) { y[threadIdx.x] = K; }
template __global__ void fill<1>(float*);
template __global__ void fill<2>(float*);
"""


@pytest.fixture
def cuda_task(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELTUI_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "kernels.cu").write_text(SOURCE)
    (folder / "scale.cuh").write_text("#define SCALE_EXTRA 1.0f\n")
    return folder


@pytest.fixture
def compile_only():
    import kerneltui.cuda as kc

    seen = []
    remove = kc.add_launch_hook(seen.append)
    kc.configure(compile_only=True)
    try:
        yield seen
    finally:
        remove()
        kc.configure(compile_only=False)


# -- building -------------------------------------------------------------------------------------


@needs_nvcc
def test_load_resolves_against_the_callers_folder_and_caches(cuda_task):
    launcher = cuda_task / "launch.py"
    launcher.write_text("import kerneltui.cuda\nmod = kerneltui.cuda.load('kernels.cu', arch='sm_90a')\n")
    mod = runpy.run_path(str(launcher))["mod"]
    assert mod.path == cuda_task / "kernels.cu"
    assert mod.arch == "sm_90a" and ".target sm_90a" in mod.ptx
    assert mod.cubin[:4] == b"\x7fELF"
    assert mod.result.cached is False
    again = runpy.run_path(str(launcher))["mod"]
    assert again.result.cached is True and again.cubin == mod.cubin
    # A header beside the source is part of the key: editing it rebuilds.
    (cuda_task / "scale.cuh").write_text("#define SCALE_EXTRA 2.0f\n")
    assert runpy.run_path(str(launcher))["mod"].result.cached is False


@needs_nvcc
def test_kernels_by_name_with_their_signatures_and_resources(cuda_task):
    import kerneltui.cuda as kc

    mod = kc.load(cuda_task / "kernels.cu", arch="sm_90a")
    assert mod.scale.signature.describe() == "scale(const float*, float*, float, int)"
    assert mod.scale.symbol == "_Z5scalePKfPffi"
    assert mod.clamp.signature.describe() == "clamp(64-bit integer or pointer, 8-byte struct, 64-bit integer or pointer)"
    assert mod.scale.resources.registers and mod.scale.resources.registers > 0
    assert mod["_Z4fillILi2EEvPf"].name == "fill"
    with pytest.raises(KeyError, match="several kernels named fill"):
        mod["fill"]
    with pytest.raises(AttributeError, match="no __global__ function 'scal'; kernels: clamp, fill, scale"):
        mod.scal  # noqa: B018


@needs_nvcc
def test_nvcc_error_names_file_line_and_keeps_the_log(cuda_task):
    import kerneltui.cuda as kc

    bad = cuda_task / "bad.cu"
    bad.write_text("__global__ void k(float* y) {\n  y[0] = nope;\n}\n")
    with pytest.raises(kc.CudaCompileError) as info:
        kc.load(bad, arch="sm_90a")
    err = info.value
    assert str(err) == 'bad.cu:2: error: identifier "nope" is undefined'
    assert err.file == str(bad) and err.line == 2
    assert "1 error detected" in err.log and err.__notes__ == [err.log]


# -- launching ------------------------------------------------------------------------------------


@needs_nvcc
def test_compile_only_launch_checks_and_records(cuda_task, compile_only):
    torch = pytest.importorskip("torch")
    import kerneltui.cuda as kc

    mod = kc.load(cuda_task / "kernels.cu", arch="sm_90a")
    x = torch.randn(1000)
    y = torch.empty_like(x)
    mod.scale(4, (256,), x, y, 2.0, x.numel())
    mod.clamp(grid=1, block=(32, 2), args=(y, bytes(8), 1000))
    assert [(i.kernel, i.grid, i.block, i.executed) for i in compile_only] == [
        ("scale", (4, 1, 1), (256, 1, 1), False), ("clamp", (1, 1, 1), (32, 2, 1), False)]
    with pytest.raises(TypeError, match=r"scale: argument 2 \(float\) got a tensor"):
        mod.scale(4, 256, x, y, x, 1000)
    with pytest.raises(TypeError, match=r"scale: argument 3 \(int\) is an integer parameter, got the float 1000.0"):
        mod.scale(4, 256, x, y, 2.0, 1000.0)
    with pytest.raises(OverflowError, match="does not fit in 32 bits"):
        mod.scale(4, 256, x, y, 2.0, 2**31)
    with pytest.raises(TypeError, match=r"takes 4 arguments, got 3"):
        mod.scale(4, 256, x, y, 2.0)
    with pytest.raises(TypeError, match=r"clamp: argument 1 \(8-byte struct\) is passed by value"):
        mod.clamp(1, 32, y, 0.5, 1000)
    with pytest.raises(ValueError, match="2048 threads; the limit is 1024"):
        mod.scale(1, (1024, 2), x, y, 2.0, 1000)
    with pytest.raises(ValueError, match="dimension below 1"):
        mod.scale(0, 256, x, y, 2.0, 0)
    assert len(compile_only) == 2  # rejected launches are not recorded


@needs_nvcc
def test_launch_without_a_driver_says_so(cuda_task):
    torch = pytest.importorskip("torch")
    import kerneltui.cuda as kc

    if Path("/dev/nvidiactl").exists():
        pytest.skip("a CUDA driver is present")
    mod = kc.load(cuda_task / "kernels.cu", arch="sm_90a")
    x = torch.randn(10)
    with pytest.raises(ValueError, match="tensor on cpu: kernels read device memory"):
        mod.scale(1, 32, x, x, 1.0, 10)
    with pytest.raises(kc.CudaError, match="no CUDA driver"):
        mod.scale(1, 32, 0, 0, 1.0, 10)  # raw addresses pass the checks and reach the driver


# -- pure parsing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("symbol", "name", "kinds"), [
    ("_Z10vector_addPKfS0_Pfi", "vector_add",
     [("pointer", "const float*"), ("pointer", "const float*"), ("pointer", "float*"), ("int", "int")]),
    ("_ZN2ns5innerEPfj", "inner", [("pointer", "float*"), ("uint", "unsigned int")]),
    ("_Z4fillILi4EEvPf", "fill", [("pointer", "float*")]),
    ("_Z3addIfEvPKT_S2_PS0_i", "add", None),  # template parameters: sizes from PTX only
    ("plain_c_name", "plain_c_name", None),
])
def test_demangle(symbol, name, kinds):
    assert params.demangle(symbol) == (name, kinds)


def test_pack_converts_to_exact_parameter_types():
    sig = params.Signature("k", "k", (
        params.Param(0, "u", 8, 8, False, "pointer", "float*"),
        params.Param(1, "f", 8, 8, False, "float", "double"),
        params.Param(2, "u", 1, 1, False, "bool", "bool"),
        params.Param(3, "s", 4, 4, False, "int", "int"),
        params.Param(4, "b", 8, 4, True),
    ))
    storage, tensors = params.pack(sig, (None, 3, True, -7, ctypes.c_int64(5)), check_device=True)
    assert [type(s).__name__ for s in storage] == ["c_ulong", "c_double", "c_ubyte", "c_int", "c_long"]
    assert storage[1].value == 3.0 and storage[3].value == -7 and tensors == []
    with pytest.raises(TypeError, match="4 bytes; the ctypes value given is 8"):
        params.pack(sig, (None, 3, True, ctypes.c_int64(1), bytes(8)), check_device=True)


def test_ptx_entries_read_sizes_and_aggregates():
    ptx = """
.visible .entry k(
	.param .u64 .ptr .global .align 4 k_param_0,
	.param .f32 k_param_1,
	.param .align 8 .b8 k_param_2[24],
	.param .u8 k_param_3
)
"""
    sig = params.entries(ptx)["k"]
    assert [(p.ptx_kind, p.size, p.aggregate) for p in sig.params] == [
        ("u", 8, False), ("f", 4, False), ("b", 24, True), ("u", 1, False)]


def test_ptxas_log_resources_per_kernel():
    log = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90a'
ptxas info    : Function properties for _Z1kPf
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 364 bytes cmem[0]
ptxas info    : Compile time = 3.1 ms
ptxas info    : Compiling entry function 'other' for 'sm_90a'
ptxas info    : Used 8 registers, used 0 barriers
"""
    res = nvcc.parse_ptxas_log(log)
    k = res["_Z1kPf"]
    assert (k.registers, k.spill_stores, k.spill_loads, k.stack_frame, k.shared_bytes, k.barriers) == (40, 8, 4, 16, 2048, 1)
    assert k.constant == {"cmem[0]": 364}
    assert not any("Compile time" in line for line in k.lines)
    assert res["other"].registers == 8 and res["other"].spill_stores == 0


@pytest.mark.parametrize(("log", "message", "line"), [
    ('kernel.cu(12): error: identifier "x" is undefined\n\nkernel.cu(14): error: expected a ";"\n\n2 errors detected',
     'kernel.cu:12: error: identifier "x" is undefined (+1 more error)', 12),
    ("kernel.cu:3:10: fatal error: missing.cuh: No such file or directory\ncompilation terminated.",
     "kernel.cu:3: fatal error: missing.cuh: No such file or directory", 3),
    ("ptxas error   : Entry function '_Z1kv' uses too much shared data (0x10000 bytes, 0xc000 max)",
     "kernel.cu: ptxas error: Entry function '_Z1kv' uses too much shared data (0x10000 bytes, 0xc000 max)", None),
])
def test_compile_error_parsing(tmp_path, log, message, line):
    source = tmp_path / "kernel.cu"
    err = nvcc.compile_error(log, tmp_path, source, ["nvcc"])
    assert str(err) == message
    assert err.line == line
