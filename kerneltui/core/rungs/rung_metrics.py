"""What each rung puts in ``RungResult.metrics``, typed, and the typed view of a result's metrics.

Each rung writes one of these (a TypedDict: the metrics stay plain JSON in reports, history rows and
``--json``); a reader outside the rung reads them through ``<rung>_metrics(result)`` so that mypy
checks the keys. Every key is optional (``total=False``): a failed rung carries only ``failure``, and a
result read back from an older history row may lack keys added since. The types live here, beside
``result.py``, rather than in the rung modules: the UI, history and export read them without
importing the rungs (which pull in the worker pool and the dump's and profiler's parsers). A view
is a cast: the caller picks the result by its rung's name, as it did before; the end-to-end tests
check that what the rungs write stays within these keys (``tests/rung_metric_keys.py``). Beside the
metrics are the other records rungs hand on (``RunData``'s run, correctness and benchmark parts).

Not to be confused with ``core/metrics.py``: the error metrics between a kernel's output and the
reference's.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict, cast

from kerneltui.core.case_params import CaseParams
from kerneltui.core.metrics import ErrorMetrics
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.trace.stats import TraceReportData
from kerneltui.core.worker.contract.replies import (
    OutputVerdict,
    PoolFacts,
    RecheckCounts,
    SanityReport,
    SeriesReply,
)


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


class RunOutcome(TypedDict):
    """What the run rung found of the first call (``RunData.run``)."""

    outputs: list[str]  # each output as shape and dtype
    problems: list[str]  # what is wrong with the outputs' structure
    launches: dict[str, int]
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


class CheckRecord(TypedDict):
    """One checked call of the correctness rung: the case, the seed, and the judge's verdict."""

    case: dict[str, Any]  # the case's parameters and seed (Case.to_dict)
    seed: int
    hidden: bool  # the run's hidden seed
    ok: bool
    reason: str
    outputs: list[OutputVerdict] | None


class DeterminismNote(TypedDict):
    """A case called again on the same inputs: bitwise the same, or what it means that it was not."""

    case: str
    identical: bool
    fail: NotRequired[str]
    warn: NotRequired[str]


class CorrectnessOutcome(TypedDict):
    """Everything the correctness checks found (``RunData.correctness``); its metrics are a summary."""

    ok: bool
    checks: int
    passed: int
    cases: int
    seeds: int
    problems: list[str]
    warnings: list[str]
    worst: ErrorMetrics
    launches: int
    determinism: list[DeterminismNote]
    sanity: list[SanityReport]  # the judge's checker-sanity probes per case
    details: list[CheckRecord]


class BaselineProvenance(TypedDict):
    """Where a baseline's times came from (``rungs.baselines.Provenance.to_dict``)."""

    kept: bool  # kept from an earlier run rather than measured now
    kept_at: str | None  # when the kept series was measured (ISO 8601)
    note: str  # what a person reads: why it was (not) kept, or what the keep matched


class BaselineNotes(TypedDict):
    """Where each baseline's times came from."""

    reference: BaselineProvenance
    torch_compile: BaselineProvenance


class SeriesStats(TypedDict, total=False):
    """One target's timed calls on one case (``bench.report.series_summary``), in milliseconds; only
    ``error`` when the series failed."""

    # bench.stats.TimingStats:
    runs: int
    median_ms: float
    q1_ms: float
    q3_ms: float
    mean_ms: float
    stderr_ms: float
    min_ms: float
    max_ms: float
    total_ms: float
    iqr_ms: float
    rel_stderr: float | None
    # The series':
    converged: bool
    stopped: str  # why the timed calls stopped (converged, the cap, the wall-time bound …)
    warmup_runs: int
    wall_s: float | None
    warmup_s: float | None
    host_us: float  # median host time of a call
    pool: PoolFacts
    spent_s: dict[str, float]  # the kernel's: where the case's wall time went, by part
    error: str


class GraphStats(TypedDict, total=False):
    """The kernel replayed in a CUDA graph (``bench.report.graph_summary``); only ``error`` when unavailable."""

    runs: int
    median_ms: float
    q1_ms: float
    q3_ms: float
    mean_ms: float
    stderr_ms: float
    min_ms: float
    max_ms: float
    total_ms: float
    iqr_ms: float
    rel_stderr: float | None
    flush_median_ms: float
    replay_median_ms: float
    stopped: str | None
    warmup_runs: int | None
    note: str
    error: str


class BenchCase(TypedDict, total=False):
    """One benchmark case in the benchmark rung's metrics (``bench.report.build``)."""

    index: int
    label: str
    params: CaseParams  # the task's parameters of the case, as written
    dtype: str | None
    dtypes: list[str]
    flops: float | None
    bytes: float | None
    out_bytes: int | None
    flops_error: str
    bytes_error: str
    work_estimated: str
    work_note: str
    candidate: SeriesStats
    recheck: RecheckCounts
    straggle: dict[str, object]  # bench.stats.StraggleVerdict, as a dict
    straggle_confirmation: dict[str, object]
    graph: GraphStats
    reference: SeriesStats
    torch_compile: SeriesStats
    floor_ms: float | None  # the case's speed-of-light time
    clamped_ms: float  # the kernel's median, clamped at the floor
    speedup_vs_reference: float
    speedup_vs_compile: float


class BenchMetrics(FailureMetrics, total=False):
    """What ``bench.report.build`` makes of the workers' answers (the benchmark rung adds to it)."""

    cases: list[BenchCase]
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


class BenchmarkRaw(TypedDict):
    """The workers' raw series the benchmark rung's metrics were made from (``RunData.benchmark_raw``)."""

    reference: SeriesReply
    torch_compile: SeriesReply | None  # None when torch.compile was not timed
    candidate: SeriesReply


class RooflinePointData(TypedDict):
    """``bench.roofline.RooflinePoint`` as JSON (an infinite number as None)."""

    flops: float | None
    bytes: float | None
    time_ms: float
    intensity: float | None
    ridge: float | None
    bound: str
    memory_ms: float | None
    compute_ms: float | None
    floor_ms: float | None
    physical_floor_ms: float | None
    achieved_tflops: float | None
    achieved_gbps: float | None
    pct_roofline: float | None
    impossible: bool
    clamped_ms: float
    peak_name: str | None
    bandwidth_gbps: float | None
    peak_tflops: float | None


class RooflineCase(RooflinePointData):
    """One case in the roofline rung's metrics: its point, and its CUDA-graph point when timed."""

    label: str
    graph: NotRequired[RooflinePointData]
    work_estimated: NotRequired[str]  # how the work was estimated, for a task that declares none


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
    cases: list[RooflineCase]
    peaks: RooflinePeaks
    floor_ms: float | None  # the one case's floor (several cases: None)
    no_work_declared: list[str]  # the cases whose work the task does not declare
    margins: RooflineMargins


class DumpPrimary(TypedDict):
    kernel: str
    variant: str


class DumpKernelLine(TypedDict):
    """One compiled variant in the dump's metrics (``per_kernel``, keyed "<kernel> [<variant>]")."""

    registers: int | None
    spills: int | None
    tensor_ops: int
    global_load: str | None


class DumpMetrics(FailureMetrics, total=False):
    # From the dump's index (core.asm.writer.summarise): the primary variant's resources and
    # instruction mix, and one line per variant.
    kernels: int
    variants: int
    primary: DumpPrimary  # the kernel and variant the summary describes
    registers: int | None
    spill_store_bytes: int | None
    spill_load_bytes: int | None
    stack_frame_bytes: int | None
    shared_bytes: int | None
    static_shared_bytes: int | None
    dynamic_shared_bytes: int | None
    threads_per_block: int | None
    local_loads: int | None
    local_stores: int | None
    occupancy: float
    occupancy_limited_by: str | None
    tensor_ops: int
    tensor_op: str | None
    global_load: str | None  # the widest global load instruction (LDG.E.128 …)
    global_store: str | None
    mix_source: str  # "sass" or "ptx": what the instruction mix was counted in
    global_load_bits: int
    per_kernel: dict[str, DumpKernelLine]
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
    kernels: list[TraceReportData]  # each kernel's regions (core.trace.stats)
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
