"""Instruction mix (SASS and PTX) and the per-stage diff of two versions' dumps."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltui.core.asm.diff import code_only, diff_dumps, diff_text
from kerneltui.core.asm.mix import access_bits, ptx_mix, sass_mix
from kerneltui.core.asm.ptx import parse_ptx
from kerneltui.core.asm.sass import parse_sass
from kerneltui.core.asm.store import Dump
from kerneltui.core.asm.tools import Toolset
from kerneltui.core.asm.writer import write_dump
from tests.unit.asm_cases import TASK_ROOT, artifact, read


def _sass(name: str):
    return sass_mix(parse_sass(read(name, "nvdisasm_g.sass")).instructions)


def test_hopper_matmul_uses_hgmma_and_async_copies():
    mix = _sass("triton_matmul_sm90a")
    assert mix.tensor_ops > 0
    assert all(op.startswith("HGMMA.64x") for op in mix.tensor)
    assert mix.tensor_label() == f"{mix.tensor_ops} HGMMA"
    assert any(op.startswith("LDGSTS") and op.endswith(".128") for op in mix.async_copies)
    assert mix.barriers and mix.branches


def test_ampere_matmul_uses_hmma():
    mix = _sass("triton_matmul_sm80")
    assert mix.tensor_label().endswith(" HMMA")
    assert any(op.startswith("LDSM") for op in mix.shared)


def test_vector_add_load_widths():
    wide = _sass("triton_vector_add_mod16")
    assert wide.global_loads == {"LDG.E.128": 4}
    assert wide.global_stores == {"STG.E.128": 2}
    assert wide.widest_global_load() == "LDG.E.128"
    assert wide.load_widths() == {128: 4}
    narrow = _sass("triton_vector_add_n1000")
    assert narrow.widest_global_load() == "LDG.E"
    assert narrow.load_widths() == {32: sum(narrow.global_loads.values())}
    assert not narrow.tensor and narrow.tensor_label() == ""


def test_spills_show_as_local_memory_instructions():
    mix = _sass("triton_softmax_spills")
    assert any(op.startswith("STL") for op in mix.local) and any(op.startswith("LDL") for op in mix.local)
    assert not _sass("triton_softmax_8192").local


def test_ptx_mix_without_a_disassembler():
    mm = ptx_mix(parse_ptx(read("triton_matmul_sm90a", "kernel.ptx")).instructions)
    assert mm.tensor and all(op.startswith("wgmma.mma_async") for op in mm.tensor)
    assert mm.tensor_label().endswith(" wgmma")
    assert any(op.startswith("cp.async") for op in mm.async_copies)
    va = ptx_mix(parse_ptx(read("triton_vector_add_mod16", "kernel.ptx")).instructions)
    assert va.widest_global_load() == "ld.global.v4.b32"
    assert va.load_widths() == {128: 4}
    ampere = ptx_mix(parse_ptx(read("triton_matmul_sm80", "kernel.ptx")).instructions)
    assert any(op.startswith("mma.sync") for op in ampere.tensor)


@pytest.mark.parametrize("op,source,bits", [("LDG.E.128", "sass", 128), ("LDG.E.64.CONSTANT", "sass", 64),
                                            ("LDG.E.U16", "sass", 16), ("LDG.E", "sass", 32),
                                            ("ld.global.v4.b32", "ptx", 128), ("ld.global.v2.f16", "ptx", 32),
                                            ("ld.global.b32", "ptx", 32), ("cp.async.cg.shared.global", "ptx", 32)])
def test_access_bits(op, source, bits):
    assert access_bits(op, source) == bits


# -- diff -------------------------------------------------------------------------------------------

def test_code_only_drops_location_noise():
    sass = code_only("sass", read("triton_vector_add_mod16", "nvdisasm_g.sass"))
    assert not any(line.startswith("/*") or "//##" in line for line in sass)
    assert any(line.startswith("@!P0 LDG.E.128") for line in sass)
    ptx = code_only("ptx", read("triton_vector_add_mod16", "kernel.ptx"))
    assert not any(".loc" in line for line in ptx)
    ttgir = code_only("ttgir", read("triton_vector_add_mod16", "kernel.ttgir"))
    assert not any("loc(" in line for line in ttgir)
    llir = code_only("llir", read("triton_vector_add_mod16", "kernel.ll"))
    assert not any("!dbg" in line for line in llir)


def test_diff_text_of_two_specialisations():
    old, new = read("triton_vector_add_mod16", "nvdisasm_g.sass"), read("triton_vector_add_n1000", "nvdisasm_g.sass")
    lines, added, removed = diff_text("sass", old, new)
    assert added and removed
    assert any(line.startswith("-") and "LDG.E.128" in line for line in lines)
    assert any(line.startswith("+") and "LDG.E " in line for line in lines)
    same, a, r = diff_text("sass", old, old)
    assert (same, a, r) == ([], 0, 0)


def _dump(tmp: Path, name: str, case: str) -> Dump:
    art = artifact(case, variant="BLOCK=1024 w4 s3")  # one label: the versions' kernels pair up
    write_dump(tmp / name / "dump", [art], arch="sm_90a", backend="triton", source_roots=[TASK_ROOT],
               task_files=["vector_add.py"], tools=Toolset.discover())
    return Dump.load(tmp / name)


def test_diff_of_two_versions(tmp_path):
    old = _dump(tmp_path, "aaaa", "triton_vector_add_mod16")
    new = _dump(tmp_path, "bbbb", "triton_vector_add_n1000")
    (diff,) = diff_dumps(old, new, "sass")
    assert diff.kernel == "add_kernel" and diff.added and diff.removed
    assert diff.opcodes["LDG"] == (4, 16)
    assert "LDG 4→16" in diff.headline()
    (ptx_diff,) = diff_dumps(old, new, "ptx")
    assert any("ld.global.v4.b32" in line for line in ptx_diff.lines if line.startswith("-"))
    (same,) = diff_dumps(old, old, "sass")
    assert same.identical and same.headline().endswith("identical")
    (missing,) = diff_dumps(old, new, "mlir")
    assert "no mlir stage" in missing.note
