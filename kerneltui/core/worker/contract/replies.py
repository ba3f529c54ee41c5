"""Replies of the worker ops the parent reads field by field, as typed dicts.

The protocol carries JSON (``core/worker/contract/protocol.py``); these say which keys a reply has, so that a
rung reading ``load``'s reply is checked by mypy like any other seam. An op adds a key here when it
adds one to its reply.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from kerneltui.core.case_params import CaseParams
from kerneltui.core.metrics import ErrorMetrics
from kerneltui.core.trace.buffer import TraceBufferData


class DeviceInfo(TypedDict, total=False):
    """What a worker says of its device when it is ready (``worker.device_info.describe_device``):
    the run's ``device`` in reports, events, history and sessions."""

    gpu: bool
    host: str
    python: str
    torch: str
    cuda_runtime: str | None
    triton: str | None
    cutlass_dsl: str | None
    cpu_threads: int  # torch's intra-op threads
    name: str  # the GPU's name, or "CPU (no GPU)"
    capability: str
    arch: str | None  # sm_90a …; None without a GPU
    sm_count: int
    memory_bytes: int
    l2_bytes: int
    interpreter: bool  # no GPU: Triton runs under its interpreter
    # From nvidia-smi, when it is there (its text, as it printed it):
    driver: str
    sm_clock_max_mhz: str
    mem_clock_max_mhz: str
    smi_name: str
    # Added by the worker:
    backend: str  # the backend it imported, or "judge"
    warm_up_s: float


class PingReply(TypedDict):
    """``ping`` (``ops_device.op_ping``): the worker's process and what it said of its device."""

    pid: int
    info: DeviceInfo


class WorkerError(TypedDict, total=False):
    """An exception in the worker (``core.worker.child.errors.describe_exception``)."""

    type: str
    message: str
    traceback: str  # the task's frames only, paths relative to the task
    file: str | None  # the failing line of a task file, where there is one
    line: int | None
    cuda_fatal: bool  # the CUDA context is poisoned: the worker is not reused
    task_error: bool  # the task cannot run here (a TaskProblem), not a fault of the kernel


class LoadReply(TypedDict, total=False):
    """``load`` (``ops_candidate.op_load``): the kernel imported and compiled on the first test case."""

    import_s: float
    compile_s: float
    total_s: float
    first_call_s: float
    launch_count: int
    kernels: list[str]
    notes: list[str]
    can_run: bool  # False: compile only (no GPU for this backend); run_skipped_reason says why
    run_skipped_reason: str
    first_call_error: WorkerError  # the first call raised: the run rung fails with it


class CompareLoadReply(LoadReply, total=False):
    """``compare_load`` (``ops_compare.op_compare_load``): ``load`` for kernel A, then B imported beside it."""

    second_module: str  # the module name kernel B was imported as


class JudgeLoadReply(TypedDict):
    """``judge_load`` (``ops_judge.op_judge_load``): the reference imported in the judge."""

    setup: Any  # what the candidate's build needs from the reference (a wire value), or None
    has_check: bool  # the task has its own check_implementation
    input_names: list[str] | None  # None: the reference does not name them
    load_s: float


class JudgeInputsReply(TypedDict):
    """``judge_inputs`` (``ops_judge.op_judge_inputs``): the candidate's copy of one case's inputs."""

    inputs: Any  # a wire value (``core.worker.contract.wire``)


class Released(TypedDict):
    """``release`` and ``judge_release``: nothing to say once the memory is let go."""


class OutputEvidence(TypedDict):
    """What wrote one output of a call (``core.worker.child.evidence.describe``)."""

    copy: bool  # a copy of an input that no kernel wrote
    writer: str  # the op or kernel that wrote it last, "input" or "unknown"
    taints: list[list[str | int]]  # each [writer, elements, serial] its data came through
    numel: int


class CallEvidence(TypedDict):
    """The evidence of one call (``core.worker.child.evidence.describe``), which the judge reads
    (``core.worker.child.verdicts.evidence_problems``)."""

    outputs: dict[str, OutputEvidence]
    ops: dict[str, int]  # torch op → calls on the output path
    launches: dict[str, int]  # kernel name → launches
    left_mode: list[str]  # the recording switched off or replaced: by what
    gpu_kernels: list[str]  # the kernels the GPU ran (its trace)
    gpu_trace_note: str | None  # why the GPU trace did not run


class CallReply(TypedDict, total=False):
    """``call`` (``ops_candidate.op_call``): one call of the kernel; its outputs stay in shared memory."""

    outputs: Any  # the outputs' descriptors (``core.worker.contract.wire``), for the judge
    evidence: CallEvidence  # what wrote each output
    launches: dict[str, int]  # kernel name → launches during the call
    aliases: list[list[Any]]  # [output name, index of the input it shares memory with]
    subclasses: list[str]  # outputs that are tensor subclasses
    previous_changed: bool  # the previous call's output changed during this one
    call_s: float
    # Set by the parent from the call's sealed report, never by the reply: each host-memory output's
    # digest at the moment the kernel returned (``ops_candidate.returned_digests``).
    returned_digests: dict[str, str]


class OutputVerdict(TypedDict):
    """One output's verdict (``worker.verdicts.compare_all``): right or wrong, why, and its error metrics."""

    name: str
    verdict_ok: bool
    reason: str
    metrics: ErrorMetrics  # empty for a non-tensor output (compared by equality)
    note: NotRequired[str]  # why the float64 golden could not be brought in


class OutputJudgement(TypedDict):
    """``worker.verdicts.judge_output``: one call's outputs right or wrong, and each output's verdict."""

    ok: bool
    reason: str
    outputs: NotRequired[list[OutputVerdict]]


class SanityReport(TypedDict):
    """``worker.verdicts.checker_sanity``: the wrong outputs (zeros, a constant, noise, an input copy)
    that the case's check let pass; none should."""

    case: str
    passed: list[str]  # the probes the check let pass
    probes: NotRequired[list[str]]  # the probes tried
    skipped: NotRequired[str]  # why none were tried


class VerdictReply(TypedDict, total=False):
    """``judge_verdict`` (``ops_judge.op_judge_verdict``): the judge's decision on one call's output."""

    key: str
    ok: bool
    reason: str
    problems: list[str]  # tampering, aliasing, evidence of another backend: the check fails at once
    outputs: list[OutputVerdict]
    structure: list[str]  # mode "run": what is wrong with the outputs' structure
    described: list[str]  # mode "run": each output as shape and dtype
    identical: bool  # mode "again": bitwise the first call's output
    sanity: SanityReport
    warnings: list[str]  # what the judge could not look at (the GPU trace did not start, say)


class DumpReply(TypedDict):
    """``dump`` (``ops_dump.op_dump``): the compiler's output of every kernel the cases launched."""

    arch: str
    backend: str
    artifacts: list[dict[str, Any]]  # each read by ``core.asm.artifact.KernelArtifact.from_json``
    notes: list[str]
    source_roots: list[str]  # the task folder as given and resolved: source lines are matched under them
    on_gpu: bool


class TraceReply(TypedDict, total=False):
    """A trace of one case: the ``trace`` op's reply (kerneltui's markers, or Proton's), or IKET's
    run (``core.trace.iket_run``); read by ``core.rungs.trace.build_result``."""

    case: int
    case_kind: str  # "benchmark" or "test"
    params: CaseParams
    device: str | None
    untraced_ms: list[float] | None  # None: the tracer times nothing untraced (IKET)
    traced_ms: list[float] | None
    buffers: list[TraceBufferData]  # per kernel
    source: str  # which tracer (``core.trace.sources``)
    source_note: str | None  # why the DSL's own tracer could not run (the markers traced instead)
    source_files: list[str]  # the tracer's own files, kept in the version folder
    traced_output_matches: bool | None  # tracing changed nothing the kernel computes (None: not compared)


# ---- the benchmark's ops (``ops_judge_bench`` in the judge, ``ops_bench`` in the candidate's worker),
# read by ``core.rungs.bench_series`` and ``core.rungs.benchmark``.


class BenchSetupCase(TypedDict, total=False):
    """One benchmark case as the reference's ``flops()`` / ``bytes_moved()`` describe it."""

    index: int
    label: str
    params: CaseParams
    flops: float | None
    bytes: float | None
    flops_error: str  # the reference's flops() raised or returned nonsense: the message names the file
    bytes_error: str
    work_estimated: str  # added by the parent: the work is judge_estimate_work's (its method)
    work_note: str  # added by the parent: why there is no estimate either


class InputFacts(TypedDict):
    """Where a timed call's inputs came from (``core.worker.child.fresh_inputs.FreshInputs.facts``)."""

    fresh_inputs: str  # "derive" or "generate"
    base_sets: int
    derived: int
    task_generated: int
    note: str  # why sets are generated although deriving was asked for
    generate_ms: float


class PoolFacts(TypedDict):
    """An input pool's facts (``core.worker.child.timing.pool_facts``), with its inputs' source's."""

    sets: int
    set_bytes: int
    generated: int
    in_place: bool
    generate_ms: float
    fresh_inputs: str
    base_sets: int
    derived: int
    task_generated: int
    note: str


class SeriesData(TypedDict):
    """One target's calls on one case (``timing.Series.to_dict``, ``bench_series.KernelSeries.to_dict``)."""

    times_ms: list[float]
    host_us: list[float]
    straggle_us: list[float]
    control_straggle_us: list[float]
    warmup_ms: list[float]
    stopped: str
    warmup_s: float
    wall_s: float
    failure: SeriesFailure | None
    threads_left: int
    confirm_straggle_us: NotRequired[list[float] | None]  # the kernel's: measured again after a side-work flag
    confirm_control_us: NotRequired[list[float] | None]


class GraphSeries(TypedDict, total=False):
    """The kernel's CUDA-graph replays on one case (``bench_series._graph_series``); only ``error``
    when the call cannot be captured."""

    total_ms: list[float]
    flush_ms: list[float]
    warmup_runs: int
    stopped: str
    failure: SeriesFailure | None
    wall_s: float
    error: str


class RecheckCounts(TypedDict, total=False):
    """How many of the timed calls' outputs the judge rechecked, and how (none for a baseline)."""

    checked: int
    quick: int
    full: int
    one_pass: int


class CaseSeries(TypedDict, total=False):
    """One case of a ``SeriesReply``: a baseline's (``timing.benchmark_case``) or the kernel's
    (``bench_series.time_kernel``); read by ``core.bench.report.build``. A failed baseline has
    ``error`` and its case's names alone."""

    index: int
    label: str
    params: CaseParams
    target: str
    error: str
    idle_straggle_us: list[float]
    busy_straggle_us: list[float]
    stream_changes: int
    pool: PoolFacts
    dtypes: list[str]
    dtype: str | None
    out_bytes: int
    # the series (SeriesData):
    times_ms: list[float]
    host_us: list[float]
    straggle_us: list[float]
    control_straggle_us: list[float]
    warmup_ms: list[float]
    stopped: str
    warmup_s: float
    wall_s: float
    failure: SeriesFailure | None
    threads_left: int
    confirm_straggle_us: list[float] | None
    confirm_control_us: list[float] | None
    # the kernel's alone:
    graph: GraphSeries
    spent_s: dict[str, float]  # where the case's wall time went, by part (``core.bench.part_times``)
    recheck: RecheckCounts


class SeriesReply(TypedDict, total=False):
    """A target's timed series on every case: ``judge_benchmark`` for a baseline (the reference,
    torch.compile), ``core.rungs.bench_series.time_kernel`` for the kernel; what the benchmark's
    report (``core.bench.report.build``) and the baseline cache read. A cached baseline is one of
    these as it was stored."""

    target: str  # "reference", "torch_compile" or "candidate"
    cases: list[CaseSeries]
    flush_bytes: int
    l2_bytes: int
    persisting_l2: str
    threads_started_by_kernel: list[str]  # the kernel's series only
    seconds: float


class BenchSetupReply(TypedDict):
    """``judge_bench_setup``: every benchmark case's work, as the reference module counts it."""

    cases: list[BenchSetupCase]
    format: str | None


class WorkEstimateCase(TypedDict, total=False):
    """One case's work as counted by running the reference (``core.worker.child.work_estimate``)."""

    index: int
    flops: float | None
    bytes: float
    method: str
    error: str  # the counter could not follow the reference


class WorkEstimateReply(TypedDict):
    """``judge_estimate_work``: the work of every benchmark case, for tasks that declare none."""

    cases: list[WorkEstimateCase]


class PoolReply(TypedDict):
    """``judge_pool``: the input slots of one case, made by the judge, for the candidate to map."""

    case: int
    label: str
    params: CaseParams
    slots: list[Any]  # shared-memory descriptors (``core.worker.contract.wire``)
    sets: int
    set_bytes: int
    out_bytes: int
    dtypes: list[str]
    dtype: str | None
    in_place: bool


class PeaksReply(TypedDict):
    """``device_peaks`` (``ops_bench.op_device_peaks``, ``core.worker.child.peaks.measure_peaks``):
    the device's measured bandwidth and matmul rates, read by ``core.bench.device_peaks.from_measurement``."""

    name: str
    l2_bytes: int
    sm_count: int
    copy_gbps: float
    read_gbps: float
    write_gbps: float
    matmul_tflops: dict[str, float]  # dtype → rate
    unsupported: dict[str, str]  # dtype → why it was not measured
    methods: dict[str, str]  # what each number is: the method, for the report
    seconds: float


class BenchBeginReply(TypedDict):
    """``bench_begin``: the case's slots mapped and the side-work check calibrated while idle."""

    idle_straggle_us: list[float]
    flush_bytes: int
    l2_bytes: int
    persisting_l2: str


class BenchCallsReply(TypedDict):
    """``bench_calls``: one timed call per slot asked for, each output kept for the recheck."""

    samples: list[list[float]]  # per call: [kernel ms, host µs, side-work gap µs]
    controls: list[float]  # honest controls' gaps (µs), when asked for
    outputs: list[Any]
    threads_left: int
    stream_changes: int
    spent_s: dict[str, float]  # this worker's time on the batch by part: "calls", "export", "controls"


class BenchGraphReply(TypedDict, total=False):
    """``bench_graph``: replays of the captured call and of the L2 flush alone (or why not)."""

    total_ms: list[float]
    flush_ms: list[float]
    outputs: list[Any]
    error: str  # the call cannot be captured, or its inputs change shape: no graph series


class BenchEndReply(TypedDict):
    """``bench_end``: the busy calibration at the series' median and the guards after the timed calls."""

    busy_straggle_us: list[float]
    stream_changes: int
    threads_started_by_kernel: list[str]


class RecheckFailure(TypedDict):
    call: int  # the call's number in the series, from 1
    seed: int
    reason: str


class SeriesFailure(TypedDict):
    """A timed series' wrong output: which call (in the warm-up or the timed calls), on which seed, why."""

    phase: str  # "warm-up" or "timed" (a graph replay's: "graph")
    call: int
    seed: int
    reason: str


class RecheckReply(TypedDict, total=False):
    """``judge_recheck``: a batch of the kernel's timed outputs checked, then those slots renewed."""

    failure: RecheckFailure | None
    checked: int
    quick: int
    one_pass: int  # output tensors the one-pass kernel compared (the rest: torch, several passes)
    full: int
    renewed: int
    moved: dict[str, object]  # slot → the renewed inputs as a wire value, when a slot moved
    generate_ms: float
    in_place: bool
    pool: PoolFacts
    spent_s: dict[str, float]  # the judge's time on the batch by part: "load", "verify", "renew"
