"""Writing a dump from backend artifacts and reading it back (the viewer's and the CLI's API)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltui.core.asm.artifact import ArtifactError, KernelArtifact, encode_cubin
from kerneltui.core.asm.store import Dump, DumpLookupError, DumpMissing, find_version
from kerneltui.core.asm.tools import INSTALL_HINT, Toolset, find_tool
from kerneltui.core.asm.writer import infer_roots, normalise_paths, write_dump
from tests.unit.asm_cases import TASK_ROOT, artifact, read


def _write(tmp: Path, arts: list[KernelArtifact], tools: Toolset | None = None, files: list[str] | None = None):
    return write_dump(tmp / "v1" / "dump", arts, arch="sm_90a", backend="triton", source_roots=[TASK_ROOT],
                      task_files=files or ["vector_add.py", "softmax.py", "matmul.py"], tools=tools or Toolset.discover())


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if needle in line)


@pytest.fixture(scope="module")
def vector_dump(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("vector")
    arts = [artifact("triton_vector_add_n1000", variant="BLOCK=1024 w4 s3"),
            artifact("triton_vector_add_mod16", primary=True)]
    result = _write(tmp_path, arts)
    return result, Dump.load(tmp_path / "v1")


def test_dump_files_and_index(vector_dump):
    result, dump = vector_dump
    root = result.dump_dir
    assert (root / "index.json").is_file()
    variant = dump.variant("add_kernel")
    assert variant.label == "n%16 BLOCK=1024 w4 s3" and variant.primary
    assert variant.stage_names == ["ttir", "ttgir", "llir", "ptx", "sass"]
    for stage in ("ptx", "sass", "ttgir", "ttir", "llir"):
        assert dump.stage_path(variant, stage).is_file()
    assert (root / variant.stages["cubin"]["file"]).read_bytes()[:4] == b"\x7fELF"
    # Paths of the worker's private copy are written task-relative in every text stage.
    for stage in variant.stage_names:
        assert TASK_ROOT not in dump.stage_text(variant, stage)
    assert '.file\t1 "vector_add.py"' in dump.stage_text(variant, "ptx")
    assert variant.stages["sass"]["linked_to_ptx"] is True


def test_summary_and_metrics_are_for_the_primary_variant(vector_dump):
    result, dump = vector_dump
    assert dump.summary.startswith("26 regs · 0 spills · LDG.E.128")
    assert dump.summary.endswith("2 variants")
    metrics = result.index["metrics"]
    assert metrics["global_load"] == "LDG.E.128" and metrics["global_load_bits"] == 128
    assert metrics["registers"] == 26 and metrics["spill_store_bytes"] == 0
    assert metrics["occupancy"] == 1.0
    narrow = dump.variant("add_kernel", "BLOCK")
    assert narrow.mix.widest_global_load() == "LDG.E"


def test_source_line_to_asm_and_back(vector_dump):
    _, dump = vector_dump
    v = dump.variant("add_kernel")
    load_x = _line_of(read("triton_vector_add_mod16", "source.py"), "x = tl.load(")
    sass_lines = dump.asm_lines_for(v, "sass", "vector_add.py", load_x)
    text = dump.stage_text(v, "sass").splitlines()
    ldg = [n for n in sass_lines if "LDG.E.128" in text[n - 1]]
    assert len(ldg) == 2  # x's two 128-bit loads; y's come from the next line
    assert dump.source_for(v, "sass", ldg[0]).line == load_x
    ptx_lines = dump.asm_lines_for(v, "ptx", "vector_add.py", load_x)
    ptx = dump.stage_text(v, "ptx").splitlines()
    assert any("ld.global.v4.b32" in ptx[n - 1] for n in ptx_lines)
    for stage in ("ttir", "ttgir", "llir"):
        assert dump.asm_lines_for(v, stage, "vector_add.py", load_x), stage


def test_inlined_helper_maps_to_the_kernel_line_in_sass(tmp_path):
    _write(tmp_path, [artifact("triton_softmax_8192")])
    dump = Dump.load(tmp_path / "v1")
    v = dump.variant()
    max_line = _line_of(read("triton_softmax_8192", "source.py"), "tl.max(")
    text = dump.stage_text(v, "sass").splitlines()
    hits = dump.asm_lines_for(v, "sass", "softmax.py", max_line)
    assert any("FMNMX" in text[n - 1] for n in hits)
    fmnmx = next(n for n in hits if "FMNMX" in text[n - 1])
    assert dump.source_for(v, "sass", fmnmx).file == "softmax.py"  # not standard.py: the user's own line


def test_hopper_matmul_summary_has_hgmma(tmp_path):
    result = _write(tmp_path, [artifact("triton_matmul_sm90a")])
    assert " HGMMA" in result.index["summary"]
    assert result.index["metrics"]["tensor_op"] == "HGMMA"
    occupancy = result.variants[0].resources.occupancy
    assert occupancy and occupancy["threads_per_block"] == 256


def test_spilling_kernel_summary(tmp_path):
    art = artifact("triton_softmax_spills", ptxas=str(Path(find_tool("ptxas").path)))
    result = _write(tmp_path, [art])
    assert "spills 820 B st / 1048 B ld" in result.index["summary"]


def test_without_a_disassembler_the_dump_says_so_and_uses_ptx(tmp_path):
    none = Toolset(nvdisasm=None, cuobjdump=None, ptxas=None)
    result = _write(tmp_path, [artifact("triton_matmul_sm90a")], tools=none)
    assert result.problems and "no SASS" in result.problems[0] and INSTALL_HINT in result.problems[0]
    v = Dump.load(tmp_path / "v1").variant()
    assert "sass" not in v.stages
    assert v.mix.source == "ptx" and v.mix.tensor_label().endswith("wgmma")
    assert v.resources.registers is not None  # from the cubin itself, no tool needed
    assert v.resources.spill_store_bytes is None and "no ptxas" in v.resources.spills_source
    assert "no SASS" in result.index["summary"]


def test_cuobjdump_alone_still_gives_sass(tmp_path):
    only = Toolset(nvdisasm=None, cuobjdump=find_tool("cuobjdump"), ptxas=None)
    result = _write(tmp_path, [artifact("triton_vector_add_mod16")], tools=only)
    v = Dump.load(tmp_path / "v1").variant()
    assert "sass" in v.stages and v.mix.source == "sass"
    assert v.mix.widest_global_load() == "LDG.E.128"
    assert not result.problems


def test_cuda_module_with_two_kernels(tmp_path):
    arts = [KernelArtifact(kernel=k, variant="default", texts={"ptx": read("cuda_two_kernels", "kernel.ptx")},
                           cubin=(Path(__file__).parent.parent / "data/asm/cuda_two_kernels/kernel.cubin").read_bytes(),
                           metadata={"block": [256, 1, 1]}, source_file="two_kernels.cu")
            for k in ("_Z2k1PKfPfi", "_Z2k2Pfi")]
    result = _write(tmp_path, arts, files=["two_kernels.cu"])
    by_kernel = {v.kernel: v for v in result.variants}
    assert by_kernel["_Z2k2Pfi"].mix.shared and not by_kernel["_Z2k1PKfPfi"].mix.shared
    assert by_kernel["_Z2k2Pfi"].resources.static_shared_bytes == 2048
    assert by_kernel["_Z2k1PKfPfi"].resources.threads_per_block == 256
    dump = Dump.load(tmp_path / "v1")
    assert sorted(dump.kernels()) == ["_Z2k1PKfPfi", "_Z2k2Pfi"]


def test_lookup_errors_list_what_there_is(vector_dump):
    _, dump = vector_dump
    with pytest.raises(DumpLookupError, match="add_kernel"):
        dump.variant("nope")
    with pytest.raises(DumpLookupError, match=r"n%16 BLOCK=1024 w4 s3"):
        dump.variant("add_kernel", "zzz")
    with pytest.raises(DumpLookupError, match="has no mlir stage; it has: ttir, ttgir, llir, ptx, sass"):
        dump.stage_text(dump.variant(), "mlir")


def test_missing_dump_and_version_lookup(tmp_path):
    with pytest.raises(DumpMissing, match="no dump yet"):
        Dump.load(tmp_path)
    versions = tmp_path / "state" / "versions"
    for name in ("abc123", "abd456"):
        (versions / name / "dump").mkdir(parents=True)
        (versions / name / "dump" / "index.json").write_text("{}")
    assert find_version(versions, "abc").name == "abc123"
    with pytest.raises(DumpMissing, match="matches 2 versions"):
        find_version(versions, "ab")
    with pytest.raises(DumpMissing, match="no version 'zz'"):
        find_version(versions, "zz")
    prev = find_version(versions, "prev", exclude=versions / "abd456")
    assert prev.name == "abc123"


def test_paths_of_an_earlier_copy_are_recognised():
    # Triton's cache keys on the source, not its path: a kernel built from another copy of the
    # same file comes back with that copy's paths.
    art = artifact("triton_vector_add_mod16")
    roots = infer_roots([art], ["vector_add.py"], known=["/tmp/some-other-worker/task"])
    assert roots == [TASK_ROOT]
    text = normalise_paths(art.texts["llir"], roots)
    assert TASK_ROOT not in text and 'directory: "."' in text
    assert infer_roots([art], ["vector_add.py"], known=[TASK_ROOT]) == []


def test_artifact_contract_errors():
    with pytest.raises(ArtifactError, match="without a kernel name"):
        KernelArtifact.from_json({"stages": {}})
    with pytest.raises(ArtifactError, match="unknown stage 'sass'"):
        KernelArtifact.from_json({"kernel": "k", "stages": {"sass": "..."}})
    with pytest.raises(ArtifactError, match="base64"):
        KernelArtifact.from_json({"kernel": "k", "stages": {"cubin": {"base64": "***"}}})
    art = KernelArtifact.from_json({"kernel": "k", "variant": "v", "stages": {"ptx": "x", "cubin": encode_cubin(b"\x7fELF")},
                                    "metadata": {"num_warps": 4}, "source_file": "kernel.py"})
    assert art.cubin == b"\x7fELF" and art.texts == {"ptx": "x"} and art.symbol == "k"


def test_index_is_plain_json(vector_dump):
    result, _ = vector_dump
    data = json.loads((result.dump_dir / "index.json").read_text())
    assert data["format"] == 1 and data["arch"] == "sm_90a"
    assert data["tools"]["nvdisasm"]["path"]


# -- finding the tools ----------------------------------------------------------------------------

def test_tool_override_and_search_order(tmp_path, monkeypatch):
    fake = tmp_path / "nvdisasm"
    fake.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 99.1, V99.1.7'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KERNELTUI_NVDISASM", str(fake))
    tool = find_tool("nvdisasm")
    assert (tool.path, tool.origin, tool.version) == (str(fake), "KERNELTUI_NVDISASM", "99.1.7")
    monkeypatch.setenv("KERNELTUI_NVDISASM", str(tmp_path / "missing"))
    assert find_tool("nvdisasm").origin != "KERNELTUI_NVDISASM"  # a wrong override is skipped, not fatal


def test_tools_are_found_without_importing_triton():
    code = ("import sys; from kerneltui.core.asm.tools import Toolset; t = Toolset.discover(); "
            "assert 'triton' not in sys.modules; print(t.disassembler.origin if t.disassembler else 'none')")
    env = {**os.environ, "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() in ("triton wheel", "pip package nvidia/cu13", "/usr/local/cuda") or \
        proc.stdout.strip().startswith("pip package")


def test_no_tool_anywhere_is_stated(tmp_path):
    code = ("import sys; sys.path[:] = [p for p in sys.path if 'site-packages' not in p]; "
            "from kerneltui.core.asm.tools import Toolset; t = Toolset.discover(); "
            "print(t.disassembler is None); print(t.missing_disassembler_message())")
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH") and not k.startswith("KERNELTUI_")}
    env["PATH"] = str(tmp_path)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    if Path("/usr/local/cuda/bin/nvdisasm").exists() or Path("/usr/local/cuda/bin/cuobjdump").exists():
        pytest.skip("this machine has a CUDA toolkit in /usr/local/cuda")
    assert lines[0] == "True"
    assert "pip install nvidia-cuda-nvdisasm" in lines[1]
