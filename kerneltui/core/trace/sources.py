"""Which tracer the trace rung uses for a kernel, and why (parent side: reads the source only).

Three sources fill the same per-CTA records (``buffer.TraceBuffer``) and so the same region table,
timeline, trace screen and Perfetto export:

* ``kerneltui``: kerneltui's own markers (``kerneltui.ktrace``: the CUDA C++ header, the Triton
  helpers), on a buffer the kernel takes from ``ktrace.buffer``;
* ``proton``: Triton's instrumentation mode, for Triton kernels that mark regions with
  ``triton.profiler.language`` (``pl.scope`` / ``pl.enter_scope``); run in the trace worker
  (``proton_run``), read by ``proton``;
* ``iket``: CuTe DSL's in-kernel event tracing, for CuTe kernels that mark ranges with
  ``cute.experimental.iket`` (``range_start``/``range_end``, ``range_push``/``range_pop``); run
  as ``run-iket`` around a one-shot process (``iket_run``), read by ``iket``.

A kernel whose source uses its backend's tracer gets that tracer (``BackendSpec.tracer`` says
which tracer a backend has and what in a source asks for it). Where it cannot run (no GPU, a Triton
without Proton, an nvidia-cutlass-dsl without IKET, a remote GPU host) the rung says why and uses
the markers instead; a kernel with no markers then fails the way a kernel without markers always
has, with that reason in front.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltui.core.backends import spec_of

MARKERS, PROTON, IKET = "kerneltui", "proton", "iket"
LABELS = {MARKERS: "kerneltui's markers", PROTON: "Proton (Triton's instrumentation mode)",
          IKET: "IKET (CuTe DSL's in-kernel event tracing)"}


@dataclass(frozen=True)
class SourceChoice:
    source: str  # MARKERS, PROTON or IKET: what the rung runs
    wanted: str  # what the kernel's source asks for
    reason: str = ""  # when source != wanted: why the wanted tracer cannot run

    @property
    def fell_back(self) -> bool:
        return self.source != self.wanted

    def note(self) -> str:
        """The sentence the rung shows when it did not use the tracer the kernel asked for."""
        if not self.fell_back:
            return ""
        return f"{LABELS[self.wanted]} cannot trace this kernel here: {self.reason}; traced with {LABELS[MARKERS]}"


def wanted_source(backend: str, kernel_source: str) -> str:
    """The tracer the kernel's own source asks for."""
    tracer = spec_of(backend).tracer
    return tracer.source if tracer is not None and tracer.wanted_by(kernel_source) else MARKERS


def choose(backend: str, kernel_source: str, *, iket_problem: str | None = None) -> SourceChoice:
    """The source for a run on a GPU. ``iket_problem``: why IKET cannot run from this process
    (``iket_run.unavailable()``); Proton is checked in the worker, which knows its Triton."""
    wanted = wanted_source(backend, kernel_source)
    if wanted == IKET and iket_problem:
        return SourceChoice(MARKERS, IKET, iket_problem)
    return SourceChoice(wanted, wanted)


def no_gpu_reason(backend: str, kernel_source: str) -> str:
    """Why the rung is skipped without a GPU, naming the tracer the kernel asked for."""
    wanted = wanted_source(backend, kernel_source)
    if wanted == MARKERS:
        return "no GPU: the region markers read the GPU's own timers"
    return (f"no GPU: {LABELS[wanted]} records on the GPU and cannot run here; neither can {LABELS[MARKERS]}, "
            "which read the GPU's own timers")
