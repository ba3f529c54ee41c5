"""Hand-edited PTX on the CPU, up to compilation: the dump's PTX written as an override, edited,
assembled by ptxas into a cubin, and checked through the loop as a version of its own."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from kerneltui.core import override
from kerneltui.core.asm.store import Dump
from kerneltui.core.loop_factory import check_once
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task_loaders.load import load_task
from kerneltui.cuda.nvcc import CudaCompileError, build_from_ptx, find_nvcc
from tests.conftest import EXAMPLES, copy_tree

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None and shutil.which("ptxas") is None,
                                reason="needs the CUDA toolkit (nvcc + ptxas)")


def _check(task, override_folder=None):
    options = RunOptions(rungs=["dump"], record=False, override_folder=override_folder)
    return asyncio.run(check_once(load_task(str(task.root)), options))


@pytest.fixture(scope="module")
def cuda_task(tmp_path_factory):
    dest = tmp_path_factory.mktemp("override") / "cuda_elementwise"
    copy_tree(EXAMPLES / "cuda_elementwise", dest)
    task = load_task(str(dest))
    report = _check(task)
    assert report.ok, [r.line() for r in report.results]
    version = Path(report.version_dir)
    dump = Dump.load(version)
    ptx = dump.stage_text(dump.variant("axpb"), "ptx")
    return task, version, ptx


def test_edited_ptx_assembles_with_ptxas(cuda_task, tmp_path: Path) -> None:
    task, version, ptx = cuda_task
    assert "fma.rn.f32" in ptx
    edited = override.write(task, version.name, "PTX", ptx)
    assert edited.file == task.root / ".kerneltui" / "override" / version.name / "kernel.ptx"
    assert edited.kernel == "_Z4axpbPKfPfffx" and edited.file.read_text() == ptx
    edited.file.write_text(ptx.replace("fma.rn.f32", "fma.rn.ftz.f32"))
    find_nvcc()
    result = build_from_ptx(edited.file, task.root / "kernel.cu", "sm_90a")
    assert result.cubin[:4] == b"\x7fELF" and "fma.rn.ftz.f32" in result.ptx
    assert result.resources["_Z4axpbPKfPfffx"].registers  # ptxas -v of the edited PTX
    broken = tmp_path / "kernel.ptx"
    broken.write_text(ptx.replace("fma.rn.f32", "fma.rn.bogus.f32", 1))
    with pytest.raises(CudaCompileError, match=r"kernel\.ptx:\d+: ptxas error") as info:
        build_from_ptx(broken, task.root / "kernel.cu", "sm_90a")
    line = info.value.line
    assert line is not None and "bogus" in broken.read_text().splitlines()[line - 1]


def test_override_is_a_version_of_its_own(cuda_task) -> None:
    task, version, ptx = cuda_task
    edited = override.write(task, version.name, "PTX", ptx)
    edited.file.write_text(ptx.replace("fma.rn.f32", "fma.rn.ftz.f32"))
    report = _check(task, override_folder=edited.rel_folder)
    assert report.ok, [r.line() for r in report.results]
    new_version = Path(report.version_dir)
    assert new_version != version  # the edited build is another version
    dump = Dump.load(new_version)
    assert "fma.rn.ftz.f32" in dump.stage_text(dump.variant("axpb"), "ptx")
    assert "fma.rn.ftz.f32" in (new_version / "override" / "kernel.ptx").read_text()
    assert (new_version / "kernel.cu").read_text() == (task.root / "kernel.cu").read_text()
    compile_rung = next(r for r in report.results if r.name == "compile")
    assert "hand-edited PTX" in compile_rung.details or "hand-edited PTX" in compile_rung.summary + str(compile_rung.metrics)


def test_broken_override_fails_compile_at_the_ptx_line(cuda_task) -> None:
    task, version, ptx = cuda_task
    edited = override.write(task, "broken-" + version.name, "PTX", ptx)
    edited.file.write_text(ptx.replace("fma.rn.f32", "fma.rn.bogus.f32", 1))
    report = _check(task, override_folder=edited.rel_folder)
    compile_rung = next(r for r in report.results if r.name == "compile")
    assert compile_rung.status == "fail"
    assert "kernel.ptx" in (compile_rung.error or "") and "ptxas error" in (compile_rung.error or "")


def test_override_folder_must_exist(cuda_task) -> None:
    task, _, _ = cuda_task
    with pytest.raises(override.OverrideError, match="has no override.json"):
        _check(task, override_folder=".kerneltui/override/nothing-here")
    with pytest.raises(override.OverrideError, match="not under"):
        _check(task, override_folder="../elsewhere")


def test_triton_override_reaches_the_compiled_kernel(tmp_path: Path) -> None:
    """Triton's kernel override with the specialisation key from the dump: the ahead-of-time compile
    of the override version (no GPU here) takes the edited PTX."""
    dest = tmp_path / "vector_add"
    copy_tree(EXAMPLES / "vector_add", dest)
    task = load_task(str(dest))
    report = _check(task)
    assert report.ok, [r.line() for r in report.results]
    version = Path(report.version_dir)
    dump = Dump.load(version)
    variant = dump.primary()
    ptx = dump.stage_text(variant, "ptx")
    key = override.triton_key(version, "PTX", ptx)
    assert key and key == variant.metadata["override_key"]
    edited = override.write(task, version.name, "PTX", ptx, key=key)
    assert edited.file == edited.folder / key / "add_kernel.ptx"
    marker = "// edited by hand in kerneltui"
    edited.file.write_text(ptx.replace(".address_size 64", f".address_size 64\n{marker}", 1))
    again = _check(task, override_folder=edited.rel_folder)
    assert again.ok, [r.line() for r in again.results]
    new = Dump.load(Path(again.version_dir))
    assert marker in new.stage_text(new.variant("add_kernel", variant.label), "ptx")


def test_check_cli_says_what_is_wrong_with_an_override(cuda_task) -> None:
    from tests.conftest import run_cli

    task, _, _ = cuda_task
    proc = run_cli("check", str(task.root), "--override", ".kerneltui/override/none", "--no-history")
    assert proc.returncode == 2
    assert "has no override.json" in proc.stderr and "edit this stage" in proc.stderr
