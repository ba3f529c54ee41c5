"""What each rung puts in ``RungResult.metrics``, typed, and the typed view of a result's metrics.

Each rung writes one of these (a TypedDict: the metrics stay plain JSON in reports, history rows and
``--json``); a reader outside the rung reads them through ``<rung>_metrics(result)`` so that mypy
checks the keys. Every key is optional (``total=False``): a failed rung carries only ``failure``, and a
result read back from an older history row may lack keys added since. The types live here, beside
``result.py``, rather than in the rung modules: the UI, history and export read them without
importing the rungs (which pull in the worker pool and the dump's and profiler's parsers).

Not to be confused with ``core/metrics.py``: the error metrics between a kernel's output and the
reference's.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from kerneltui.core.rungs.result import RungResult


class FailureMetrics(TypedDict, total=False):
    """Any rung's metrics when it failed for a reason the loop or a command acts on."""

    # The kind of failure: "task" (the task's own files), "error", "reference", "connection" (a remote
    # worker), "profiler", a worker's failure kind ("timeout", "crash", …).
    failure: str


class PrechecksMetrics(FailureMetrics, total=False):
    strict: int  # findings that fail the rung
    warnings: int
    waived: int  # findings the task's allow list waives
    files: list[str]  # the files checked


class CompileMetrics(FailureMetrics, total=False):
    import_s: float
    compile_s: float
    first_call_s: float | None
    launch_count: int
    kernels: list[str]
    sandbox: dict[str, object] | None  # SandboxSupport.to_dict() of the candidate's worker


class RunMetrics(FailureMetrics, total=False):
    outputs: list[str]  # each output as shape and dtype
    launches: dict[str, int]  # kernel name → launches in the call
    call_s: float | None


class CorrectnessMetrics(FailureMetrics, total=False):
    checks: int
    passed: int
    cases: int
    seeds: int
    launches: int
    # The worst error metrics over every output of every check (core.metrics.compare's keys):
    worst_max_abs: float
    worst_max_rel: float
    worst_rel_l2: float
    worst_psnr_db: float
    worst_cosine: float
    worst_rmse: float
    worst_exact: bool


class BaselineNotes(TypedDict):
    """Where each baseline's times came from: "measured now" or "cached from <when> …"."""

    reference: str
    torch_compile: str


class BenchMetrics(FailureMetrics, total=False):
    """What ``bench.report.build`` makes of the workers' answers (the benchmark rung adds to it)."""

    cases: list[dict[str, Any]]  # per case: label, params, candidate/reference/torch_compile/graph statistics
    runs: int
    flush_bytes: int | None
    l2_bytes: int | None
    persisting_l2: str | None
    torch_compile_note: str
    threads_started_by_kernel: list[str]
    # Over the timed cases (one case: its own; several: geometric means after the speed-of-light clamp):
    median_ms: float | None
    speedup_vs_reference: float | None
    speedup_vs_compile: float | None
    # One timed case only: its statistics.
    q1_ms: float
    q3_ms: float
    mean_ms: float
    stderr_ms: float
    min_ms: float


class BenchmarkMetrics(BenchMetrics, total=False):
    # Seconds the rung spent on each target and in all (rounded to ms):
    reference_s: float
    torch_compile_s: float
    candidate_s: float
    total_s: float
    device_peaks: str | None  # the key of the device peaks the floors used
    baselines: BaselineNotes


class RooflinePeaks(TypedDict):
    copy_gbps: float
    matmul_tflops: dict[str, float]
    l2_bytes: int
    device: str
    key: str


class RooflineMargins(TypedDict):
    memory: float
    compute: float


class RooflineMetrics(FailureMetrics, total=False):
    pct_roofline: float | None
    cases: list[dict[str, Any]]  # per case: label, the RooflinePoint's fields, its CUDA-graph point as "graph"
    peaks: RooflinePeaks
    floor_ms: float | None  # the one case's floor (several cases: None)
    no_work_declared: list[str]  # the cases whose work the task does not declare
    margins: RooflineMargins


class DumpMetrics(FailureMetrics, total=False):
    # From the dump's index (core.asm.writer.summarise):
    kernels: int
    variants: int
    primary: dict[str, str]  # the kernel and variant the summary describes
    registers: int | None
    spill_store_bytes: int
    occupancy: float
    occupancy_limited_by: str | None
    tensor_ops: int
    tensor_op: str | None
    global_load_bits: int
    per_kernel: dict[str, Any]
    # The rung's own:
    arch: str | None
    dump_dir: str
    on_gpu: bool


class ProfileTableData(TypedDict, total=False):
    """A table made elsewhere, which the profile screen shows as it is (``ProfileMetrics.table``)."""

    title: str
    columns: list[str]
    rows: list[list[object]]
    notes: list[str]


class ProfileMetrics(FailureMetrics, total=False):
    problem: str  # a failed or skipped profile: the kind of problem (core.profile.errors)
    kernel: str
    case: str  # the case's label
    bound: str
    duration_ns: float | None
    compute_pct: float | None
    memory_pct: float | None
    dram_pct: float | None
    occupancy_achieved_pct: float | None
    occupancy_theoretical_pct: float | None
    occupancy_limiter: str | None
    l1_hit_pct: float | None
    l2_hit_pct: float | None
    dram_bytes: float | None
    dram_vs_task: float | None
    top_stalls: list[str]
    kernels_profiled: int
    report: str | None  # the Nsight Compute report's path
    summary_file: str | None  # the profile's outcome as JSON, for the profile screen
    table: ProfileTableData  # a ready table instead of summary_file (shown when there is no summary file)


class TraceMetrics(FailureMetrics, total=False):
    untraced_ms: float | None
    traced_ms: float | None
    overhead_pct: float | None
    case: int | None
    case_kind: str | None
    kernels: list[dict[str, Any]]  # core.trace.regions' report of each kernel, as a dict
    timelines: list[str]
    # The files written under <version>/trace/ (and "<source>_file_<n>": the tracer's own files):
    buffers: str
    chrome_trace: str
    error: str  # why the files could not be written
    traced_output_matches: bool | None
    source: str
    source_fallback: str | None


def failure_of(result: RungResult) -> str | None:
    """The kind of failure any rung recorded (``FailureMetrics``), None when it names none."""
    return cast(FailureMetrics, result.metrics).get("failure")


def prechecks_metrics(result: RungResult) -> PrechecksMetrics:
    return cast(PrechecksMetrics, result.metrics)


def compile_metrics(result: RungResult) -> CompileMetrics:
    return cast(CompileMetrics, result.metrics)


def run_metrics(result: RungResult) -> RunMetrics:
    return cast(RunMetrics, result.metrics)


def correctness_metrics(result: RungResult) -> CorrectnessMetrics:
    return cast(CorrectnessMetrics, result.metrics)


def benchmark_metrics(result: RungResult) -> BenchmarkMetrics:
    return cast(BenchmarkMetrics, result.metrics)


def roofline_metrics(result: RungResult) -> RooflineMetrics:
    return cast(RooflineMetrics, result.metrics)


def dump_metrics(result: RungResult) -> DumpMetrics:
    return cast(DumpMetrics, result.metrics)


def profile_metrics(result: RungResult) -> ProfileMetrics:
    return cast(ProfileMetrics, result.metrics)


def trace_metrics(result: RungResult) -> TraceMetrics:
    return cast(TraceMetrics, result.metrics)
