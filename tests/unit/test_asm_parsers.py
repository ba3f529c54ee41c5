"""PTX, SASS, MLIR and LLVM IR parsers and their source maps, on real compiler output."""

from __future__ import annotations

import pytest

from kerneltui.core.asm.elf import read_cubin
from kerneltui.core.asm.llvm import parse_llvm_locations
from kerneltui.core.asm.mlir import parse_mlir_locations, trailing_loc
from kerneltui.core.asm.ptx import parse_ptx
from kerneltui.core.asm.sass import link_to_ptx, parse_sass
from kerneltui.core.asm.srcmap import Frame, LineMap
from kerneltui.core.asm.writer import ptx_matches_embedded
from tests.unit.asm_cases import ALL_CASES, TASK_ROOT, TRITON_CASES, case_dir, cubin, read

VA = f"{TASK_ROOT}/vector_add.py"
SOFTMAX = f"{TASK_ROOT}/softmax.py"
MATMUL = f"{TASK_ROOT}/matmul.py"
INLINED = f"{TASK_ROOT}/inlined.cu"


def _line_of(text: str, needle: str) -> int:
    """1-based line number of the first source line containing ``needle``."""
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


# -- PTX ------------------------------------------------------------------------------------------

def test_ptx_header_files_and_kernels():
    ptx = parse_ptx(read("triton_vector_add_mod16", "kernel.ptx"))
    assert ptx.target == "sm_90a"
    assert ptx.version.startswith("8.")
    assert ptx.kernels == ["add_kernel"]
    assert ptx.files[1] == VA


def test_ptx_maps_the_load_line_to_vector_loads_and_back():
    text = read("triton_vector_add_mod16", "kernel.ptx")
    src = read("triton_vector_add_mod16", "source.py")
    load_x = _line_of(src, "x = tl.load(")
    ptx = parse_ptx(text)
    lines = ptx.line_map.asm_lines_for(VA, load_x)
    ptx_lines = text.splitlines()
    assert any("ld.global.v4.b32" in ptx_lines[n - 1] for n in lines)
    v4 = next(n for n in lines if "ld.global.v4.b32" in ptx_lines[n - 1])
    assert ptx.line_map.source_of(v4) == Frame(VA, load_x, ptx.line_map.frames[v4][0].column)
    # Every instruction line is mapped and the map only names this kernel's file.
    assert ptx.line_map.files() == [VA]
    assert len(ptx.line_map) == len(ptx.instructions)


def test_ptx_inlined_triton_helpers_map_to_the_calling_line():
    src = read("triton_softmax_8192", "source.py")
    max_line = _line_of(src, "tl.max(")
    ptx = parse_ptx(read("triton_softmax_8192", "kernel.ptx"))
    hits = ptx.line_map.asm_lines_for(SOFTMAX, max_line)
    text = read("triton_softmax_8192", "kernel.ptx").splitlines()
    assert any("max.f32" in text[n - 1] for n in hits)
    # The chain runs from Triton's standard library out to the kernel's own line.
    chain = ptx.line_map.frames[next(n for n in hits if "max.f32" in text[n - 1])]
    assert chain[0].file.endswith("triton/language/standard.py")
    assert chain[-1].file == SOFTMAX and chain[-1].line == max_line
    assert ptx.line_map.source_of(hits[0], [SOFTMAX]).line == max_line


def test_ptx_from_nvcc_with_inlined_at():
    src = read("cuda_inlined", "source.cu")
    ptx = parse_ptx(read("cuda_inlined", "kernel.ptx"))
    body = _line_of(src, "float y = x * x;")
    call = _line_of(src, "b[i] = poly(v);")
    inlined = [chain for chain in ptx.line_map.frames.values() if chain[0].line == body]
    assert inlined and inlined[0][0].file == INLINED
    assert inlined[0][1] == Frame(INLINED, call, 5)
    assert ptx.line_map.source_lines(INLINED)  # some lines mapped
    assert set(ptx.line_map.asm_lines_for(INLINED, body)) <= set(ptx.line_map.asm_lines_for(INLINED, call))


def test_ptx_with_two_entries():
    ptx = parse_ptx(read("cuda_two_kernels", "kernel.ptx"))
    assert sorted(ptx.kernels) == ["_Z2k1PKfPfi", "_Z2k2Pfi"]
    for entry in ptx.entries:
        assert entry.end > entry.start
    ops = {i.opcode for i in ptx.instructions}
    assert "bar.sync" in ops and "ld.shared.f32" in ops


@pytest.mark.parametrize("name", TRITON_CASES)
def test_cubin_embeds_exactly_this_ptx(name):
    text = read(name, "kernel.ptx")
    assert ptx_matches_embedded(text, parse_ptx(text), read_cubin(cubin(name)).embedded_ptx)
    other = read("triton_vector_add_n1000" if name != "triton_vector_add_n1000" else "triton_vector_add_n1", "kernel.ptx")
    assert not ptx_matches_embedded(other, parse_ptx(other), read_cubin(cubin(name)).embedded_ptx)


# -- SASS -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [c for c in ALL_CASES if (case_dir(c) / "cuobjdump.sass").exists()])
def test_nvdisasm_and_cuobjdump_agree_on_the_instructions(name):
    ours = parse_sass(read(name, "nvdisasm_g.sass"))
    assert ours.instructions
    theirs = parse_sass(read(name, "cuobjdump.sass"))
    for function in ours.functions:
        a = [(i.offset, i.opcode) for i in ours.for_function(function)]
        b = [(i.offset, i.opcode) for i in theirs.for_function(function)]
        assert a == b, function


def test_sass_functions_and_line_info():
    src = read("triton_vector_add_mod16", "source.py")
    sass = parse_sass(read("triton_vector_add_mod16", "nvdisasm_g.sass"))
    assert list(sass.functions) == ["add_kernel"]
    listing = read("triton_vector_add_mod16", "nvdisasm_g.sass").splitlines()
    ldg = [i for i in sass.instructions if i.opcode == "LDG.E.128"]
    assert len(ldg) == 4 and all(i.predicate.startswith("@") for i in ldg)
    loads = {_line_of(src, "x = tl.load("), _line_of(src, "y = tl.load(")}
    assert {sass.line_map.frames[i.line][0].line for i in ldg} == loads
    assert all(listing[i.line - 1].strip().startswith(f"/*{i.offset:04x}*/") for i in sass.instructions)


def test_sass_linked_through_ptx_gets_inlining_chains():
    name = "triton_softmax_8192"
    src = read(name, "source.py")
    max_line = _line_of(src, "tl.max(")
    ptx = parse_ptx(read(name, "kernel.ptx"))
    sass = parse_sass(read(name, "nvdisasm_g.sass"), read(name, "nvdisasm_gp.sass"))
    assert len(sass.ptx_lines) == len(sass.instructions)
    plain = sass.line_map
    linked = link_to_ptx(sass, ptx.line_map)
    fmnmx = [i.line for i in sass.instructions if i.mnemonic == "FMNMX"]
    assert fmnmx
    # nvdisasm alone names standard.py for the reduction; through PTX it reaches the kernel's line.
    assert all(plain.frames[n][0].file.endswith("standard.py") for n in fmnmx)
    assert set(fmnmx) <= set(linked.asm_lines_for(SOFTMAX, max_line))
    assert not set(fmnmx) & set(plain.asm_lines_for(SOFTMAX, max_line))


def test_sass_of_two_kernels():
    sass = parse_sass(read("cuda_two_kernels", "nvdisasm_g.sass"))
    assert sorted(sass.functions) == ["_Z2k1PKfPfi", "_Z2k2Pfi"]
    k2 = [i.mnemonic for i in sass.for_function("_Z2k2Pfi")]
    assert "BAR" in k2 and "LDS" in k2 and "STS" in k2


def test_sass_from_the_pypi_nvdisasm_parses_the_same():
    try:
        other = read("triton_vector_add_mod16", "nvdisasm_pypi_g.sass")
    except FileNotFoundError:
        pytest.skip("nvidia-cuda-nvdisasm was not installed when the data was recorded")
    a = parse_sass(read("triton_vector_add_mod16", "nvdisasm_g.sass"))
    b = parse_sass(other)
    assert [(i.offset, i.opcode) for i in a.instructions] == [(i.offset, i.opcode) for i in b.instructions]


# -- MLIR and LLVM IR -----------------------------------------------------------------------------

def test_ttgir_locations_resolve_aliases_names_and_callsites():
    src = read("triton_softmax_8192", "source.py")
    text = read("triton_softmax_8192", "kernel.ttgir")
    line_map = parse_mlir_locations(text)
    lines = text.splitlines()
    load = next(n for n in line_map.frames if "tt.load" in lines[n - 1])
    assert line_map.frames[load][0] == Frame(SOFTMAX, _line_of(src, "tl.load("), line_map.frames[load][0].column)
    max_line = _line_of(src, "tl.max(")
    reduce_ops = [n for n in line_map.asm_lines_for(SOFTMAX, max_line) if "maxnumf" in lines[n - 1]]
    assert reduce_ops, "the combine function inlined from tl.max maps to the kernel's line through callsite()"
    assert line_map.frames[reduce_ops[0]][0].file.endswith("standard.py")


@pytest.mark.parametrize("name,stage", [("triton_matmul_sm90a", "kernel.ttir"), ("triton_matmul_sm90a", "kernel.ttgir"),
                                        ("triton_vector_add_mod16", "kernel.ttgir")])
def test_mlir_maps_tensor_core_and_memory_ops(name, stage):
    text = read(name, stage)
    line_map = parse_mlir_locations(text)
    lines = text.splitlines()
    mapped_ops = {lines[n - 1].split("=", 1)[-1].split()[0].strip('"') for n in line_map.frames if "=" in lines[n - 1]}
    assert "tt.load" in mapped_ops or "ttg.async_copy_global_to_local" in mapped_ops
    if "matmul" in name:
        dot = next(n for n in range(1, len(lines) + 1) if "tt.dot" in lines[n - 1] or "warp_group_dot" in lines[n - 1])
        src = read(name, "source.py")
        assert line_map.frames[dot][0].line == _line_of(src, "tl.dot(")


def test_trailing_loc_only_takes_the_operation_location():
    assert trailing_loc('%0 = arith.addi %a, %b : i32 loc(#loc3)') == "loc(#loc3)"
    assert trailing_loc('tt.func @k(%a: i32 loc("a"(#loc))) attributes {x} {') is None
    assert trailing_loc('} loc(callsite(#loc1 at #loc2))') == "loc(callsite(#loc1 at #loc2))"


def test_mlir_location_grammar():
    text = "\n".join([
        '#loc = loc("k.py":3:0)',
        '#loc1 = loc("k.py":7:9)',
        '#loc2 = loc("lib.py":20:4)',
        '#loc3 = loc(callsite(#loc2 at #loc1))',
        '#loc4 = loc("x"(#loc3))',
        '%0 = op1 loc(#loc4)',
        '%1 = op2 loc(fused[#loc1, #loc])',
        '%2 = op3 loc(unknown)',
        '%3 = op4 loc("k.py":9:1 to 9:5)',
        '%4 = op5 loc("-":18:138)',
    ])
    m = parse_mlir_locations(text)
    assert m.frames[6] == (Frame("lib.py", 20, 4), Frame("k.py", 7, 9))
    assert m.frames[7] == (Frame("k.py", 7, 9),)
    assert 8 not in m.frames
    assert m.frames[9] == (Frame("k.py", 9, 1),)
    assert 10 not in m.frames  # "-": a position in IR text from stdin, not a source file


def test_llvm_ir_debug_locations():
    src = read("triton_softmax_8192", "source.py")
    text = read("triton_softmax_8192", "kernel.ll")
    line_map = parse_llvm_locations(text)
    lines = text.splitlines()
    loads = [n for n in line_map.frames if "ld.global" in lines[n - 1]]
    assert loads and line_map.frames[loads[0]][0].line == _line_of(src, "tl.load(")
    assert line_map.frames[loads[0]][0].file == SOFTMAX  # DIFile directory + filename joined
    assert SOFTMAX in line_map.files()


def test_llvm_inlined_at_chain():
    text = "\n".join([
        "define void @k() !dbg !4 {",
        "  %1 = fadd float 1.0, 2.0, !dbg !7",
        "  ret void, !dbg !8",
        "}",
        '!1 = !DIFile(filename: "k.py", directory: "/t")',
        '!2 = !DIFile(filename: "/lib/std.py", directory: "")',
        '!4 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: 3)',
        '!5 = distinct !DISubprogram(name: "helper", scope: !2, file: !2, line: 10)',
        "!6 = !DILocation(line: 12, column: 2, scope: !4)",
        "!7 = !DILocation(line: 11, column: 5, scope: !5, inlinedAt: !6)",
        "!8 = !DILocation(line: 13, column: 1, scope: !4)",
    ])
    m = parse_llvm_locations(text)
    assert m.frames[2] == (Frame("/lib/std.py", 11, 5), Frame("/t/k.py", 12, 2))
    assert m.frames[3] == (Frame("/t/k.py", 13, 1),)


# -- the map itself --------------------------------------------------------------------------------

def test_line_map_round_trips_through_json():
    m = parse_ptx(read("triton_softmax_8192", "kernel.ptx")).line_map
    again = LineMap.from_json(m.to_json())
    assert again.frames == m.frames
    renamed = m.relabel({SOFTMAX: "softmax.py"})
    assert "softmax.py" in renamed.files() and SOFTMAX not in renamed.files()


@pytest.mark.parametrize("name", ALL_CASES)
def test_one_nvdisasm_run_gives_both_listings_as_each_flag_alone_would(name, tmp_path):
    # disassemble() runs `nvdisasm -g -gp` once and splits it: each part must be exactly what `-g` and
    # `-gp` print alone (the SASS text shown, and the PTX links), on Triton and CUDA C++ cubins.
    import subprocess

    from kerneltui.core.asm.sass import disassemble
    from kerneltui.core.asm.tools import Toolset

    tool = Toolset.discover().disassembler
    if tool is None or tool.name != "nvdisasm":
        pytest.skip("no nvdisasm (the triton wheel ships one)")
    path = tmp_path / "kernel.cubin"
    path.write_bytes(cubin(name))
    alone = {flag: subprocess.run([tool.path, flag, "-c", str(path)], capture_output=True, text=True, check=True).stdout
             for flag in ("-g", "-gp")}
    dis = disassemble(cubin(name), tool)
    assert dis.text == alone["-g"]
    assert dis.ptx_annotated == alone["-gp"]
