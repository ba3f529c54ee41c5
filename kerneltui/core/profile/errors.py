"""Why a profile did not happen, read from ncu's own output, each with what to do about it.

ncu reports problems as ``==ERROR==`` / ``==WARNING==`` lines on stdout mixed with the profiled
program's output. The known ones get a plain sentence and a fix; anything else keeps ncu's lines
so nothing is hidden.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kerneltui.core.profile.locate import NcuNotFound


@dataclass(frozen=True)
class ProfilerProblem:
    kind: str  # no_ncu, counter_permission, profiler_unavailable, counters_busy, unsupported_gpu,
    #            no_kernels, target_failed, timeout, ncu_failed, no_report
    message: str  # what happened, one sentence
    fix: str  # what to do next
    evidence: str = ""  # ncu's own lines that told us

    @property
    def environment(self) -> bool:
        """A problem of this machine's setup, not of the kernel (the rung says skipped, not failed)."""
        return self.kind in {"no_ncu", "counter_permission", "profiler_unavailable", "counters_busy",
                             "unsupported_gpu"}

    def text(self) -> str:
        out = f"{self.message}. Fix: {self.fix}."
        if self.evidence:
            out += f"\nncu said:\n{self.evidence}"
        return out


def no_ncu(found: NcuNotFound) -> ProfilerProblem:
    return ProfilerProblem("no_ncu", found.message, found.fix,
                           evidence="looked in: " + ", ".join(found.searched))


@dataclass(frozen=True)
class _Known:
    kind: str
    pattern: re.Pattern[str]
    message: str
    fix: str


KNOWN: tuple[_Known, ...] = (
    _Known(
        "counter_permission", re.compile(r"ERR_NVGPUCTRPERM"),
        "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): the driver restricts them to "
        "administrators",
        "run kerneltui as root (or `sudo`), or let every user profile: as root write "
        "`options nvidia NVreg_RestrictProfilingToAdminUsers=0` to /etc/modprobe.d/nvidia-profiling.conf, "
        "rebuild the initramfs where your distribution needs it (`update-initramfs -u` / `dracut -f`) and reboot; "
        "in a container, start it with `--cap-add=SYS_ADMIN`. "
        "https://developer.nvidia.com/ERR_NVGPUCTRPERM has the details",
    ),
    _Known(
        "profiler_unavailable", re.compile(r"LibraryNotLoaded|Failed to initialize the profiler", re.IGNORECASE),
        "the profiler could not load on this machine (\"LibraryNotLoaded\"): the process runs in a sandbox that "
        "does not expose the GPU's profiling interface (gVisor and some container runtimes do this)",
        "profile on a machine or VM that gives the process the GPU directly (a plain container with the NVIDIA "
        "runtime, or the host); everything but the profile rung still works here",
    ),
    _Known(
        "counters_busy", re.compile(r"driver resource was unavailable|like DCGM|DCGM", re.IGNORECASE),
        "another tool holds the GPU's performance counters (usually DCGM or dcgm-exporter collecting profiling "
        "metrics)",
        "pause it while you profile: `dcgmi profile --pause`, then `dcgmi profile --resume` afterwards (or stop "
        "the service: `systemctl stop nvidia-dcgm` / dcgm-exporter); on a cluster, ask for a node without it",
    ),
    _Known(
        "unsupported_gpu", re.compile(r"not supported on this (device|GPU)|device is not supported|"
                                      r"Profiling is not supported", re.IGNORECASE),
        "this ncu cannot profile this GPU",
        "use the Nsight Compute that ships with a CUDA toolkit matching the driver (newer GPUs need a newer ncu; "
        "very old ones an older one), and set KERNELTUI_NCU to it",
    ),
)


def _ncu_lines(output: str) -> list[str]:
    return [line.rstrip() for line in output.splitlines() if line.startswith(("==ERROR==", "==WARNING=="))
            and "Running with unmodified GPU clocks" not in line]


def diagnose(output: str, returncode: int | None, report_exists: bool, target_error: str | None = None,
             kernel_filter: str | None = None) -> ProfilerProblem | None:
    """The problem ncu's output shows, or None when it produced a report."""
    lines = _ncu_lines(output)
    evidence = "\n".join(lines[-12:])
    for known in KNOWN:
        if known.pattern.search(output):
            hits = [line for line in lines if known.pattern.search(line)] or [
                line for line in output.splitlines() if known.pattern.search(line)]
            return ProfilerProblem(known.kind, known.message, known.fix, evidence="\n".join(hits[:4]) or evidence)
    if target_error:
        return ProfilerProblem(
            "target_failed", f"the kernel failed while being profiled: {target_error}",
            "fix the error (it passed the checks, so look for behaviour that differs under the profiler, e.g. "
            "timing-dependent code) and profile again", evidence=evidence)
    if "No kernels were profiled" in output:
        if kernel_filter:
            return ProfilerProblem(
                "no_kernels", f"no kernel matching {kernel_filter!r} ran in the profiled call",
                "check the name: the kernels ncu saw are listed below (drop --kernel-name to profile them all)",
                evidence=evidence + _available_kernels(output))
        return ProfilerProblem(
            "no_kernels", "the profiled call of custom_kernel launched no GPU kernel",
            "make sure every call launches the kernel (a result cached across calls is not allowed); if the kernel "
            "runs on another thread or stream, synchronise before returning", evidence=evidence)
    if returncode not in (0, None) and not report_exists:
        unknown = re.search(r"unrecogni[sz]ed option|unknown option|invalid option", output, re.IGNORECASE)
        if unknown:
            return ProfilerProblem(
                "ncu_failed", "this ncu does not accept an option kerneltui uses (it is probably too old)",
                "install Nsight Compute 2023.1 or newer (it comes with CUDA 12.1+) and point KERNELTUI_NCU at it",
                evidence=evidence)
        return ProfilerProblem("ncu_failed", f"ncu exited with status {returncode} and wrote no report",
                               "read ncu's messages below; run the same command by hand to see all of it",
                               evidence=evidence or output.strip()[-2000:])
    if not report_exists:
        return ProfilerProblem("no_report", "ncu finished but wrote no report",
                               "check that the version folder is writable and has free space", evidence=evidence)
    return None


def _available_kernels(output: str) -> str:
    m = re.search(r"Available Kernels:\s*\n((?:\s*\d+\.\s*\S.*\n?)+)", output)
    return ("\n" + "Available Kernels:\n" + m.group(1).rstrip()) if m else ""
