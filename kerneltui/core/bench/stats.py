"""Statistics of benchmark samples and the adaptive stopping rule (the settings: ``kerneltui.settings.bench``).

Pure Python: the parent process computes every number it reports from the raw event times a worker
sends back (a candidate running in the worker cannot patch them), and the worker imports the same
stopping rule to decide when it has measured enough.

Quantiles use linear interpolation between order statistics (numpy's default, "type 7").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypedDict

from kerneltui.settings.bench import BenchSettings

# ----------------------------------------------------------------------------------------------
# statistics
# ----------------------------------------------------------------------------------------------


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile of already sorted values, linear interpolation between order statistics."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def median(values: Iterable[float]) -> float:
    return quantile(sorted(values), 0.5)


class TimingStatsData(TypedDict):
    """``TimingStats`` as JSON: its fields, the IQR, and the relative standard error (None when infinite)."""

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


@dataclass(frozen=True)
class TimingStats:
    """What the benchmark reports for one series of timed calls (milliseconds)."""

    runs: int
    median_ms: float
    q1_ms: float
    q3_ms: float
    mean_ms: float
    stderr_ms: float
    min_ms: float
    max_ms: float
    total_ms: float

    @property
    def iqr_ms(self) -> float:
        return self.q3_ms - self.q1_ms

    @property
    def rel_stderr(self) -> float:
        return self.stderr_ms / self.mean_ms if self.mean_ms > 0 else math.inf

    @property
    def rel_iqr(self) -> float:
        return self.iqr_ms / self.median_ms if self.median_ms > 0 else math.inf

    def to_dict(self) -> TimingStatsData:
        return {"runs": self.runs, "median_ms": self.median_ms, "q1_ms": self.q1_ms, "q3_ms": self.q3_ms,
                "mean_ms": self.mean_ms, "stderr_ms": self.stderr_ms, "min_ms": self.min_ms, "max_ms": self.max_ms,
                "total_ms": self.total_ms, "iqr_ms": self.iqr_ms,
                "rel_stderr": self.rel_stderr if math.isfinite(self.rel_stderr) else None}


def summarize(samples_ms: Sequence[float]) -> TimingStats:
    """Median, quartiles, mean ± standard error, min/max of raw per-call times."""
    if not samples_ms:
        raise ValueError("no timed calls to summarise")
    for x in samples_ms:
        if not math.isfinite(x):
            raise ValueError(f"a timed call has a non-finite time ({x!r})")
    values = sorted(float(x) for x in samples_ms)
    n = len(values)
    mean = math.fsum(values) / n
    if n > 1:
        var = math.fsum((x - mean) ** 2 for x in values) / (n - 1)
        stderr = math.sqrt(var / n)
    else:
        stderr = math.inf
    return TimingStats(
        runs=n, median_ms=quantile(values, 0.5), q1_ms=quantile(values, 0.25), q3_ms=quantile(values, 0.75),
        mean_ms=mean, stderr_ms=stderr, min_ms=values[0], max_ms=values[-1], total_ms=math.fsum(values),
    )


class RunningStats:
    """Welford's running mean and variance: the worker's cheap view for the stopping rule."""

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self._m2 = 0.0
        self.total = 0.0

    def add(self, x: float) -> None:
        self.n += 1
        self.total += x
        delta = x - self.mean
        self.mean += delta / self.n
        self._m2 += delta * (x - self.mean)

    @property
    def stderr(self) -> float:
        if self.n < 2:
            return math.inf
        return math.sqrt(self._m2 / (self.n - 1) / self.n)


# Why a series stopped, as the worker and the parent name it.
STOP_CONVERGED = "converged"
STOP_TIME_CAP = "time cap"
STOP_MAX_RUNS = "max runs"
STOP_WALL_BOUND = "the benchmark's wall-time bound, [benchmark] max_wall_s"


def stop_reason(n: int, total_ms: float, mean_ms: float, stderr_ms: float, wall_s: float,
                settings: BenchSettings) -> str | None:
    """The adaptive stopping rule: None means "keep measuring".

    Enough is at least ``min_runs`` calls AND ``min_kernel_ms`` of summed kernel time AND a standard
    error under ``rel_stderr`` of the mean. The wall-clock cap and the run cap end a series that
    cannot get there (a slow kernel or a noisy machine); the report then says so.
    """
    if n >= settings.max_runs:
        return STOP_MAX_RUNS
    if (n >= settings.min_runs and total_ms >= settings.min_kernel_ms and mean_ms > 0
            and stderr_ms <= settings.rel_stderr * mean_ms):
        return STOP_CONVERGED
    if wall_s >= settings.max_seconds and n >= 1:
        return STOP_TIME_CAP
    return None


def converged(stats: TimingStats, settings: BenchSettings) -> bool:
    """Whether a finished series meets the rule on its own numbers (the parent's re-check)."""
    return (stats.runs >= settings.min_runs and stats.total_ms >= settings.min_kernel_ms
            and stats.rel_stderr <= settings.rel_stderr)


def geomean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(math.fsum(math.log(v) for v in vals) / len(vals))


# ----------------------------------------------------------------------------------------------
# CUDA-graph mode and the side-work detector
# ----------------------------------------------------------------------------------------------


def wants_graph(settings: BenchSettings, times_ms: list[float], host_us: list[float]) -> bool:
    """Whether the kernel's series is timed again in CUDA-graph mode (the parent decides, from the
    kernel's first series)."""
    if settings.graph == "on":
        return True
    if settings.graph == "off":
        return False
    med_ms = median(times_ms)
    # Launch-bound: short kernels, or a host call that takes a good share of the kernel's time.
    return med_ms < settings.graph_below_ms or median(host_us) * 1e-3 > 0.5 * med_ms


def graph_kernel_samples(total_ms: Sequence[float], flush_ms: Sequence[float]) -> list[float]:
    """Kernel times from graph replays: each (flush + kernel) replay minus the median flush-only replay.

    Subtracting the median (not the paired sample) keeps the flush graph's own noise from doubling
    into every sample. Differences below zero are kept as they are so the caller can see them.
    """
    if not total_ms or not flush_ms:
        raise ValueError("graph mode produced no samples")
    base = median(flush_ms)
    return [t - base for t in total_ms]


@dataclass(frozen=True)
class StraggleVerdict:
    """Whether work kept the device busy after the timed stream had finished."""

    threshold_us: float
    median_us: float
    over: int  # calls over the threshold
    runs: int
    flagged: bool
    idle_p90_us: float = 0.0  # the gap on an idle device
    busy_p90_us: float = 0.0  # the gap after an honest spin kernel as long as the call
    control_median_us: float | None = None  # the same, interleaved with the timed calls
    excess_us: float | None = None  # median gap of the calls minus CONTROL_RATIO times that of the controls
    effect_us: float = 0.0  # the least hidden work the check is built to see beyond the honest allowance
    p_value: float | None = None  # one-sided: the calls' gaps exceed CONTROL_RATIO × the controls' by effect_us
    control_ratio: float = 1.0  # how many times the controls' gaps an honest call's may be

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


STRAGGLE_FACTOR = 3.0  # threshold (reported): this many times the calibration's 90th percentile
BUSY_SHARE_CAP = 0.25  # the busy calibration raises the threshold to at most this share of the kernel time
EFFECT_FLOOR_US, EFFECT_SHARE = 10.0, 0.1  # hidden work shorter than the larger of these is not looked for
STRAGGLE_ALPHA = 1e-4  # the test's false-alarm rate per measurement (a flag is then measured again)
MIN_CONTROLS = 8
CONTROL_EVERY = 4  # timed calls per interleaved side-work control measurement (the parent asks for it)
# An honest call's gap is a multiple of its controls', not the controls' plus a constant: on the H200
# (bench/RESULTS.md, 102 honest measurements on two days, 13 kernels) the median call gap was 1.5–2.5×
# (median 1.96×) the median control gap, whatever the host's mood; a slow spell that tripled the
# controls' gaps doubled the calls' excess over them and failed two honest kernels of 70 when the
# null was "the same as the controls". Side work adds its own length instead, whatever the scale.
CONTROL_RATIO = 3.0


def straggle_verdict(straggle_us: Sequence[float], idle_us: Sequence[float], floor_us: float,
                     busy_us: Sequence[float] = (), kernel_us: float | None = None,
                     control_us: Sequence[float] = (), control_ratio: float = CONTROL_RATIO) -> StraggleVerdict:
    """Judge the host-side gap between "the timed stream finished" and "the whole device is idle".

    The null is measured, not assumed: ``control_us`` holds the same gap after an honest spin
    kernel as long as the call, measured between the timed calls under the host's conditions of
    that moment. Honest work's gaps scale with the controls' (about twice them on the H200: the
    call's path does more on the host than the spin kernel's); work left running on another stream
    or thread adds its length to (nearly) every call's gap. The verdict is a one-sided Mann–Whitney
    test that the calls' gaps exceed ``CONTROL_RATIO`` times the controls' by more than
    ``effect_us`` (the larger of 10 µs and a tenth of the kernel's median), at ``STRAGGLE_ALPHA``,
    and the benchmark measures again before it fails anything (``confirmed``). Hidden work shorter
    than ``effect_us`` plus ``(CONTROL_RATIO - 2)`` control medians is its blind spot (where honest
    calls run at twice the controls). The idle and busy calibrations give the reported threshold
    and the count of calls over it; without enough controls they decide alone (a quarter of the
    calls over the threshold).
    """
    idle_p90 = quantile(sorted(idle_us), 0.9) if idle_us else 0.0
    busy_p90 = quantile(sorted(busy_us), 0.9) if busy_us else 0.0
    busy_part = STRAGGLE_FACTOR * busy_p90
    if kernel_us is not None:
        busy_part = min(busy_part, BUSY_SHARE_CAP * kernel_us)
    threshold = max(floor_us, STRAGGLE_FACTOR * idle_p90, busy_part)
    effect = max(EFFECT_FLOOR_US, EFFECT_SHARE * (kernel_us or 0.0))
    if not straggle_us:
        return StraggleVerdict(threshold, 0.0, 0, 0, False, idle_p90, busy_p90, effect_us=effect)
    over = sum(1 for s in straggle_us if s > threshold)
    control_median = excess = p = None
    if len(control_us) >= MIN_CONTROLS:
        control_median = median(control_us)
        excess = median(straggle_us) - control_ratio * control_median
        p = mann_whitney_greater(straggle_us, [control_ratio * c for c in control_us], shift=effect)
        flagged = excess > effect and p < STRAGGLE_ALPHA
    else:
        flagged = over > 0.25 * len(straggle_us)
    return StraggleVerdict(
        threshold_us=threshold, median_us=median(straggle_us), over=over, runs=len(straggle_us),
        flagged=flagged, idle_p90_us=idle_p90, busy_p90_us=busy_p90, control_median_us=control_median,
        excess_us=excess, effect_us=effect, p_value=p, control_ratio=control_ratio,
    )


@dataclass(frozen=True)
class SideWorkFinding:
    """The side-work check of one case: the first verdict, and the confirmation measured after a flag."""

    first: StraggleVerdict
    again: StraggleVerdict | None  # None: not flagged, or the confirmation could not be measured

    @property
    def failed(self) -> bool:
        """Flagged, and flagged again when measured a second time (where it was)."""
        return self.first.flagged and (self.again is None or self.again.flagged)


def side_work_finding(raw: Mapping[str, Any], floor_us: float, kernel_us: float | None,
                      control_ratio: float = CONTROL_RATIO) -> SideWorkFinding:
    """The side-work check on a case's raw series (``straggle_us``, ``control_straggle_us``, the idle
    and busy calibrations and, after a flag, ``confirm_straggle_us``/``confirm_control_us``)."""
    first = straggle_verdict(raw.get("straggle_us") or [], raw.get("idle_straggle_us") or [], floor_us,
                             busy_us=raw.get("busy_straggle_us") or [], kernel_us=kernel_us,
                             control_us=raw.get("control_straggle_us") or [], control_ratio=control_ratio)
    again = None
    if first.flagged and raw.get("confirm_straggle_us") is not None:
        again = straggle_verdict(raw["confirm_straggle_us"], [], floor_us, kernel_us=kernel_us,
                                 control_us=raw.get("confirm_control_us") or [], control_ratio=control_ratio)
    return SideWorkFinding(first, again)


def mann_whitney_greater(x: Sequence[float], y: Sequence[float], shift: float = 0.0) -> float:
    """One-sided p-value that ``x`` is stochastically greater than ``y + shift`` (normal
    approximation with ties corrected; fine for the tens to thousands of samples here)."""
    xs = [v - shift for v in x]
    n1, n2 = len(xs), len(y)
    if not n1 or not n2:
        return 1.0
    pooled = sorted([(v, 0) for v in xs] + [(v, 1) for v in y])
    ranks = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[k] = rank
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, (_, who) in zip(ranks, pooled, strict=True) if who == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))) if n > 1 else 0.0
    if var <= 0:
        return 0.5
    z = (u1 - n1 * n2 / 2 - 0.5) / math.sqrt(var)  # continuity correction
    return 0.5 * math.erfc(z / math.sqrt(2))


def format_ms(ms: float | None) -> str:
    """A time with a unit that keeps three or four significant digits (``182.4 µs``, ``1.234 ms``)."""
    if ms is None or not math.isfinite(ms):
        return "—"
    if ms < 0:
        return "-" + format_ms(-ms)
    if ms < 1e-3:
        return f"{ms * 1e6:.0f} ns"
    if ms < 1:
        us = ms * 1e3
        return f"{us:.2f} µs" if us < 10 else f"{us:.1f} µs"
    if ms < 1000:
        return f"{ms:.3f} ms" if ms < 10 else f"{ms:.2f} ms"
    return f"{ms / 1000:.3f} s"
