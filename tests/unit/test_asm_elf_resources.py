"""Cubin ELF reading, ptxas -v parsing, the resource report and the occupancy estimate, checked
against what cuobjdump and ptxas themselves printed for the same binaries."""

from __future__ import annotations

import re

import pytest

from kerneltui.core.asm.elf import CubinError, read_cubin, same_code
from kerneltui.core.asm.occupancy import estimate, limits_for
from kerneltui.core.asm.resources import build_report, kernel_resources, parse_ptxas_log, rerun_ptxas
from kerneltui.core.asm.tools import Tool, tool_version, triton_bin_dir
from tests.unit.asm_cases import ALL_CASES, TASK_ROOT, TRITON_CASES, cubin, meta, read, res_usage


@pytest.mark.parametrize("name", ALL_CASES)
def test_cubin_resources_match_cuobjdump(name):
    info = read_cubin(cubin(name))
    expected = res_usage(name)
    assert set(info.kernels) == set(expected)
    for kernel, usage in expected.items():
        k = info.kernels[kernel]
        assert k.registers == usage["REG"]
        assert k.static_shared_bytes == usage["SHARED"]
        assert k.frame_bytes == usage["STACK"]
        assert k.constant0_bytes == usage["CONSTANT[0]"]


@pytest.mark.parametrize("name", ALL_CASES)
def test_barriers_and_registers_match_ptxas(name):
    info = read_cubin(cubin(name))
    log = parse_ptxas_log(read(name, "ptxas_v.txt"))
    for kernel, fn in log.items():
        assert info.kernels[kernel].registers == fn.registers
        assert info.kernels[kernel].barriers == fn.barriers


def test_arch_from_the_elf_header():
    assert read_cubin(cubin("triton_vector_add_mod16")).arch == "sm_90a"
    assert read_cubin(cubin("triton_matmul_sm80")).arch == "sm_80"
    # nvcc 13 writes the newer ELF layout, which does not mark the 'a' targets in the flags.
    assert read_cubin(cubin("cuda_two_kernels")).arch == "sm_90"


def test_launch_bounds_and_maxnreg_from_the_cubin():
    k = read_cubin(cubin("triton_softmax_spills")).kernels["softmax_kernel"]
    assert k.required_threads == [128, 1, 1]  # Triton writes .reqntid num_warps * 32
    assert k.max_registers == 40


@pytest.mark.parametrize("name", TRITON_CASES)
def test_embedded_ptx_is_kept_with_line_info(name):
    info = read_cubin(cubin(name))
    assert info.embedded_ptx is not None
    assert ".target" in info.embedded_ptx


def test_not_a_cubin():
    with pytest.raises(CubinError, match="not an ELF"):
        read_cubin(b"\x00" * 100)
    with pytest.raises(CubinError):
        read_cubin(cubin("triton_vector_add_mod16")[:200])


def test_ptxas_log_with_spills():
    fn = parse_ptxas_log(read("triton_softmax_spills", "ptxas_v.txt"))["softmax_kernel"]
    assert (fn.registers, fn.stack_frame_bytes, fn.spill_store_bytes, fn.spill_load_bytes) == (40, 576, 820, 1048)
    assert fn.arch == "sm_90a"
    assert fn.barriers == 1


def test_ptxas_log_with_two_functions_and_smem():
    log = parse_ptxas_log(read("cuda_two_kernels", "ptxas_v.txt"))
    assert set(log) == {"_Z2k1PKfPfi", "_Z2k2Pfi"}
    assert log["_Z2k2Pfi"].shared_bytes == 1024
    assert log["_Z2k2Pfi"].barriers == 1
    assert log["_Z2k1PKfPfi"].spill_store_bytes == 0


def _triton_ptxas() -> Tool:
    bin_dir = triton_bin_dir()
    assert bin_dir is not None, "triton (a dependency) ships ptxas in triton/backends/nvidia/bin"
    path = str(bin_dir / "ptxas")
    return Tool("ptxas", path, "triton wheel", tool_version(path))


@pytest.mark.parametrize("name", ["triton_vector_add_mod16", "triton_softmax_spills"])
def test_rerun_ptxas_reproduces_the_cubin(name):
    run = rerun_ptxas(read(name, "kernel.ptx"), meta(name)["arch"], _triton_ptxas(), cubin(name))
    assert run.same_cubin, "the ptxas that built the cubin, run on the same PTX, gives the same bytes"
    expected = parse_ptxas_log(read(name, "ptxas_v.txt"))
    assert {k: v.spill_store_bytes for k, v in run.functions.items()} == {k: v.spill_store_bytes for k, v in expected.items()}


def test_rerun_ptxas_reports_a_different_cubin_honestly():
    run = rerun_ptxas(read("triton_vector_add_mod16", "kernel.ptx"), "sm_90a", _triton_ptxas(), b"not the cubin")
    assert not run.same_cubin
    report = build_report("add_kernel", "sm_90a", {"num_warps": 4}, None, run, None, 0, 0)
    assert "approximate" in report.spills_source


def test_rerun_ptxas_error_says_what_failed():
    with pytest.raises(RuntimeError, match="could not assemble"):
        rerun_ptxas(".version 8.7\n.target sm_90a\nthis is not ptx\n", "sm_90a", _triton_ptxas(), None)


def test_report_of_a_spilling_kernel():
    name = "triton_softmax_spills"
    info = read_cubin(cubin(name))
    run = rerun_ptxas(read(name, "kernel.ptx"), "sm_90a", _triton_ptxas(), cubin(name))
    k = kernel_resources(info, "softmax_kernel")
    report = build_report("softmax_kernel", "sm_90a", {"num_warps": 4, "shared": 16}, k, run, None, 12, 34)
    assert report.registers == 40
    assert (report.spill_store_bytes, report.spill_load_bytes) == (820, 1048)
    assert report.stack_frame_bytes == 576
    assert report.spills_text() == "spills 820 B st / 1048 B ld"
    assert report.threads_per_block == 128
    assert report.dynamic_shared_bytes == 16
    assert report.static_shared_bytes == 1024
    assert report.occupancy is not None and report.occupancy["blocks_per_sm"] > 0


def test_report_without_ptxas_falls_back_to_local_memory_instructions():
    info = read_cubin(cubin("triton_softmax_spills"))
    report = build_report("softmax_kernel", "sm_90a", {"num_warps": 4}, kernel_resources(info, "softmax_kernel"),
                          None, None, local_loads=7, local_stores=5)
    assert report.spill_store_bytes is None
    assert report.spills_text() == "5 STL / 7 LDL"
    assert "no ptxas" in report.spills_source


def test_kernel_lookup_by_mangled_name():
    info = read_cubin(cubin("cuda_two_kernels"))
    assert kernel_resources(info, "_Z2k2Pfi").name == "_Z2k2Pfi"
    assert kernel_resources(info, "k2").name == "_Z2k2Pfi"  # the plain name inside the mangled one
    assert kernel_resources(info, "nothing") is None


# -- occupancy: hand-computed with the rules of NVIDIA's occupancy calculator -----------------------

def test_occupancy_full_when_the_warp_cap_binds():
    occ = estimate("sm_90a", 128, 26, 0)
    # 26 regs → 1024 per warp → 16 warps per sub-partition → 64 warps; 4 warps per block → 16 blocks
    assert (occ.blocks_per_sm, occ.warps_per_sm, occ.occupancy) == (16, 64, 1.0)
    assert occ.limited_by == "warps"


def test_occupancy_limited_by_registers():
    occ = estimate("sm_90a", 256, 120, 0)
    # 120 regs → 3840 per warp → 4 warps per sub-partition → 16 warps → 2 blocks of 8 warps
    assert (occ.blocks_per_sm, occ.occupancy, occ.limited_by) == (2, 0.25, "registers")


def test_occupancy_limited_by_shared_memory():
    occ = estimate("sm_90a", 128, 32, 100 * 1024)
    # (100 KiB + 1 KiB reserved) per block in 228 KiB → 2 blocks
    assert (occ.blocks_per_sm, occ.limited_by) == (2, "shared memory")
    assert occ.blocks_limit["shared memory"] == 2


def test_occupancy_cannot_launch():
    assert estimate("sm_90a", 128, 32, 300 * 1024).blocks_per_sm == 0
    assert "over the limit" in estimate("sm_90a", 2048, 32, 0).limited_by
    assert "over the limit" in estimate("sm_80", 128, 300, 0).limited_by


def test_occupancy_per_arch():
    assert estimate("sm_86", 128, 26, 0).max_warps_per_sm == 48
    assert limits_for("sm_100a").max_shared_per_block == 232448
    assert limits_for("sm_42") is None
    assert estimate("sm_42", 128, 32, 0) is None


def test_same_code_ignores_the_line_table_timestamp(tmp_path):
    # ptxas stamps the source file's mtime into .debug_line: a rebuild where the source is gone
    # (a CI machine, a finished worker) differs there and only there.
    ptx = read("triton_vector_add_mod16", "kernel.ptx").replace(TASK_ROOT, str(tmp_path / "gone"))
    original = cubin("triton_vector_add_mod16")
    run = rerun_ptxas(ptx, "sm_90a", _triton_ptxas(), original)
    assert run.same_cubin
    assert same_code(original, original)
    assert not same_code(original, cubin("triton_vector_add_n1000"))
    assert not same_code(original, b"junk")


def test_rerun_ptxas_lowers_a_newer_ptx_version_and_says_so():
    # CuTe DSL can emit a PTX ISA version newer than the ptxas found here; the header is lowered to
    # what this ptxas supports, and the report says so (and whether the cubin still matches).
    ptx = read("triton_vector_add_mod16", "kernel.ptx")
    newer = re.sub(r"^\.version \d+\.\d+", ".version 99.9", ptx, count=1, flags=re.MULTILINE)
    assert newer != ptx
    run = rerun_ptxas(newer, "sm_90a", _triton_ptxas(), cubin("triton_vector_add_mod16"))
    assert run.lowered_version.startswith("PTX .version 99.9 lowered to ")
    assert run.functions["add_kernel"].spill_store_bytes == 0
    report = build_report("add_kernel", "sm_90a", {"num_warps": 4}, None, run, None, 0, 0)
    assert "lowered" in report.spills_source
