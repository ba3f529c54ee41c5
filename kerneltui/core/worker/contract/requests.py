"""What each worker op takes, as typed dicts: the ``args`` of a request frame.

The parent writes these (``core.rungs``), the child's ops read them (``core.worker.child.ops_*``);
the protocol carries them as JSON (``core/worker/contract/protocol.py``). Wire values (the shared-memory
descriptors of ``core.worker.contract.wire``) are ``Any`` here as in ``replies``: their shape is the
exchange's business. An op adds a key here when it reads a new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from kerneltui.core.case_params import CaseParams
from kerneltui.core.task import TaskData
from kerneltui.core.worker.contract.replies import CallEvidence


class LoadArgs(TypedDict):
    """``load`` (``ops_candidate.op_load``); ``compare_load`` with ``second``; ``judge_load`` reads
    ``task``, ``files`` and ``exchange`` alone."""

    task: TaskData
    files: dict[str, str]  # the task's files: without the reference (candidate), the kernel (judge)
    setup: NotRequired[Any]  # the wire value the judge says the candidate's build needs
    first_inputs: NotRequired[Any]  # the first test case's inputs, on the exchange
    exchange: NotRequired[str]  # the exchange's folder; without it, the worker's own
    override: NotRequired[str]  # a folder of hand-edited compiler output (core.override)
    second: NotRequired[str]  # compare_load: kernel B's source


class CallArgs(TypedDict, total=False):
    """``call`` (``ops_candidate.op_call``): one call of the kernel on a check's inputs."""

    inputs: Any  # the check's inputs, on the exchange
    lot: str  # the exchange lot its outputs go back as (the check's key)
    fill: str  # "poison" or "garbage": what fresh allocations hold while the kernel runs
    garbage_seed: int
    gpu_trace: bool
    release: list[str]  # lots the worker may drop first


class ReleaseArgs(TypedDict, total=False):
    """``release``: drop these lots (all of them when none are named)."""

    lots: list[str]


class JudgeInputsArgs(TypedDict, total=False):
    """``judge_inputs`` (``ops_judge.op_judge_inputs``): make one case's inputs for check ``key``."""

    key: str
    params: CaseParams
    seed: int
    label: str
    reference: bool  # run the reference on a clone (a check); False: inputs only
    release: list[str]  # checks the judge may drop first


class JudgeVerdictArgs(TypedDict, total=False):
    """``judge_verdict`` (``ops_judge.op_judge_verdict``): the kernel's output for check ``key``, with
    what the candidate's worker said of the call (``replies.CallReply``)."""

    key: str
    outputs: Any  # the call's outputs, on the exchange
    lot: str
    mode: str  # "check", "run" or "again"
    first: str | None  # mode "again": the first call's check key
    sanity: bool  # also try the check on wrong outputs (``replies.SanityReport``)
    evidence: CallEvidence | None  # CallReply's evidence
    aliases: list[list[Any]]  # CallReply's aliases: [output name, input index]
    subclasses: list[str]
    backend_label: str
    returned: dict[str, str] | None  # CallReply's returned_digests


class JudgeReleaseArgs(TypedDict, total=False):
    """``judge_release``: drop these checks (all of them when none are named)."""

    keys: list[str]


class DevicePeaksArgs(TypedDict, total=False):
    """``device_peaks`` (``ops_bench.op_device_peaks``)."""

    dtypes: list[str]  # the matmul dtypes to measure; the default set without it


class BenchmarkArgs(TypedDict):
    """``judge_benchmark`` (``ops_judge_bench.op_judge_benchmark``): time a baseline on every case."""

    target: str  # "reference" or "torch_compile"
    secret: int
    # ``BenchSettings.to_dict()``; ``BenchSettings.from_mapping`` checks every key and type on arrival.
    settings: Mapping[str, object]


class PoolArgs(TypedDict):
    """``judge_pool`` (``ops_judge_bench.op_judge_pool``): one case's input slots for the kernel."""

    case: int
    secret: int
    settings: Mapping[str, object]  # ``BenchSettings.to_dict()``, checked by ``from_mapping``


class BenchBeginArgs(TypedDict):
    """``bench_begin`` (``ops_bench.op_bench_begin``): map the slots ``judge_pool`` made."""

    case: int
    slots: list[Any]  # PoolReply's slots
    settings: Mapping[str, object]  # ``BenchSettings.to_dict()``, checked by ``from_mapping``


class BenchCallsArgs(TypedDict, total=False):
    """``bench_calls`` and ``bench_graph`` (``ops_bench``); ``compare_calls`` with ``kernels``."""

    order: list[int]  # the slots, one timed call each, in this order
    lot: str  # the exchange lot the outputs go back as
    release: list[str]  # lots the worker may drop first
    remap: dict[str, object]  # slot → its renewed inputs as a wire value (RecheckReply's moved)
    controls_every: int  # an honest control every this many calls (0: none)
    kernels: list[str]  # compare_calls: "a" or "b" for each call in ``order``


class BenchEndArgs(TypedDict, total=False):
    """``bench_end`` (``ops_bench.op_bench_end``)."""

    median_ms: float  # the series' median: the busy calibration's length
    release: list[str]


class RecheckArgs(TypedDict, total=False):
    """``judge_recheck`` (``ops_judge_bench.op_judge_recheck``): a batch of timed outputs to check."""

    case: int
    slots: list[int]  # the slots used, in the calls' order
    outputs: list[Any]  # BenchCallsReply's outputs
    lot: str
    first_call: int  # the batch's first call's number in the series, from 0
    renew: bool  # renew the slots after (default True)


class DumpArgs(TypedDict, total=False):
    """``dump`` (``ops_dump.op_dump``)."""

    arch: str | None  # the target architecture; the device's without it
    cases: dict[str, object]  # case index (as JSON writes it) → that case's inputs as a wire value


class TraceArgs(TypedDict, total=False):
    """``trace`` (``ops_trace.op_trace``): trace one case."""

    case: int | None  # an index into the benchmark cases (the test cases without any); 0 without it
    reps: int
    inputs: Any  # the case's inputs, made by the judge, on the exchange
    source: str  # "markers" or "proton"


class NoArgs(TypedDict):
    """An op that takes nothing (``ping``, ``judge_bench_setup``, ``judge_estimate_work``)."""
