"""ncu's failure output turned into a message and a fix (recorded and published ncu output)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from kerneltui.core.profile.command import SECTIONS, ProfileCommand, import_argv
from kerneltui.core.profile.errors import diagnose, no_ncu
from kerneltui.core.profile.locate import NCU_ENV, NcuNotFound, _version_key, find_ncu

DATA = Path(__file__).resolve().parent.parent / "data" / "ncu"


def test_counter_permission():
    p = diagnose((DATA / "errors" / "err_nvgpuctrperm.txt").read_text(), 1, False)
    assert p is not None and p.kind == "counter_permission" and p.environment
    assert "NVreg_RestrictProfilingToAdminUsers=0" in p.fix and "root" in p.fix
    assert "ERR_NVGPUCTRPERM" in p.evidence


def test_profiler_that_cannot_load_in_a_sandbox():
    p = diagnose((DATA / "errors" / "library_not_loaded.txt").read_text(), 1, False)
    assert p is not None and p.kind == "profiler_unavailable" and p.environment
    assert "LibraryNotLoaded" in p.message and "gVisor" in p.message
    assert p.evidence == "Failed to initialize the profiler: LibraryNotLoaded"


def test_dcgm_holding_the_counters():
    p = diagnose((DATA / "errors" / "dcgm_conflict.txt").read_text(), 1, False)
    assert p is not None and p.kind == "counters_busy"
    assert "dcgmi profile --pause" in p.fix
    assert "driver resource was unavailable" in p.evidence


def test_no_kernels_in_the_range():
    p = diagnose((DATA / "errors" / "no_kernels_profiled.txt").read_text(), 0, False)
    assert p is not None and p.kind == "no_kernels" and not p.environment
    assert "launched no GPU kernel" in p.message


def test_kernel_filter_matching_nothing_lists_the_kernels_ncu_saw():
    p = diagnose((DATA / "kerneltui_rung" / "error_no_kernels.ncu.log").read_text(), 0, False,
                 kernel_filter="no_such_kernel")
    assert p is not None and p.kind == "no_kernels"
    assert "'no_such_kernel'" in p.message
    assert "Available Kernels:\n1. add_kernel" in p.evidence


def test_a_successful_run_is_no_problem():
    assert diagnose((DATA / "kerneltui_rung" / "memory_vector_add.ncu.log").read_text(), 0, True) is None


def test_target_error_is_reported_with_its_place():
    p = diagnose("==PROF== Connected to process 1\n==ERROR== The application returned an error code (3).\n", 3, False,
                 target_error="kernel.py:12: ValueError: bad")
    assert p is not None and p.kind == "target_failed" and "kernel.py:12: ValueError: bad" in p.message


def test_unknown_failure_keeps_ncus_lines():
    p = diagnose("==ERROR== something new went wrong\n", 9, False)
    assert p is not None and p.kind == "ncu_failed" and "status 9" in p.message
    assert "something new went wrong" in p.evidence


def test_old_ncu_without_an_option():
    p = diagnose("==ERROR== unrecognised option '--import-source'\n", 1, False)
    assert p is not None and "too old" in p.message


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_ncu_on_path_and_by_variable(tmp_path):
    ncu = _executable(tmp_path / "ncu")
    assert find_ncu({"PATH": str(tmp_path)}) == ncu
    other = _executable(tmp_path / "my-ncu")
    assert find_ncu({"PATH": "", NCU_ENV: str(other)}) == other


def test_a_wrong_variable_is_named():
    found = find_ncu({"PATH": "", NCU_ENV: "/nowhere/ncu"})
    assert isinstance(found, NcuNotFound)
    assert found.message == f"{NCU_ENV}=/nowhere/ncu is not an executable ncu"
    problem = no_ncu(found)
    assert problem.kind == "no_ncu" and "/nowhere/ncu" in problem.evidence


def test_not_found_says_where_it_looked(tmp_path):
    found = find_ncu({"PATH": str(tmp_path)})
    if not isinstance(found, NcuNotFound):
        pytest.skip(f"this machine has an ncu at {found}")
    assert "/usr/local/cuda/bin/ncu" in found.searched
    assert "PATH" in found.message and "KERNELTUI_NCU" in found.fix and "apt install nsight-compute" in found.fix


def test_newest_install_first():
    paths = [Path("/opt/nvidia/nsight-compute/2023.1.0/ncu"), Path("/opt/nvidia/nsight-compute/2025.3.1/ncu"),
             Path("/opt/nvidia/nsight-compute/2024.10.2/ncu")]
    assert [p.parent.name for p in sorted(paths, key=_version_key, reverse=True)] == ["2025.3.1", "2024.10.2", "2023.1.0"]


def test_profile_command_line():
    argv = ProfileCommand(ncu=Path("/usr/local/cuda/bin/ncu"), report=Path("/v/profile.ncu-rep"),
                          target=["python", "-m", "kerneltui.core.profile.target", "spec.json"],
                          kernel_name="add_.*", launch_count=3).argv()
    text = " ".join(argv)
    assert argv[0] == "/usr/local/cuda/bin/ncu"
    assert "--clock-control none" in text and "--nvtx --nvtx-include kerneltui/" in text
    assert "--launch-count 3" in text and "--kernel-name regex:add_.*" in text
    assert "--import-source yes" in text and "--export /v/profile --force-overwrite" in text
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--section"] == list(SECTIONS)
    assert argv[-4:] == ["python", "-m", "kerneltui.core.profile.target", "spec.json"]


def test_import_command_lines():
    ncu, rep = Path("ncu"), Path("r.ncu-rep")
    assert import_argv(ncu, rep, "raw") == ["ncu", "--import", "r.ncu-rep", "--csv", "--page", "raw", "--print-units", "base"]
    assert import_argv(ncu, rep, "details")[-2:] == ["--print-details", "all"]
    assert import_argv(ncu, rep, "source", "cuda,sass")[-2:] == ["--print-source", "cuda,sass"]


def test_environment_problems_are_not_kernel_failures():
    assert no_ncu(NcuNotFound(searched=("x",))).environment
