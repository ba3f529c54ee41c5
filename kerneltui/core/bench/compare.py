"""Is B faster than A? The statistics of an interleaved comparison (pure Python, parent side).

Method (docs/compare.md says why):

1. **ABBA blocks.** The two kernels' calls are interleaved in blocks of four, ABBA or BAAB (drawn
   at random per block), on one GPU in one process, each call timed with the benchmark's protocol
   (``core.worker.child.timing``). Each block gives one number, the log of its time ratio
   ``r = log((b1 + b2) / (a1 + a2))``. Within a block, A and B have the same mean position in time,
   so a drift that is linear over the block (clocks, temperature, another process warming up)
   cancels; across blocks, a drift moves both kernels alike and leaves ``r`` alone. The random
   orientation turns anything tied to a position (the first call after a pause for the judge's
   recheck, or after a side-work control) into noise shared by both kernels, not a bias of one.
2. **The interval.** Blocks are treated as independent (fresh inputs and an L2 flush before every
   call, no state carried between them). The estimate is the 20 % trimmed mean of the blocks' ``r``,
   its 95 % interval Yuen's: the winsorised standard deviation over ``(1 - 2·0.2)·√n``, with a t
   quantile of ``n - 2g - 1`` degrees of freedom (``g`` blocks trimmed at each end). Trimming keeps
   a few stalled calls (a 10× call spoils one block) from moving the verdict; on normal data it
   costs about 6 % of the efficiency of a plain mean. With A and B equal, a block's ``r`` is
   symmetric about zero (A and B can swap places), so the trimmed mean estimates zero exactly then.
3. **The stopping rule, in two stages.** The first PILOT_BLOCKS blocks are the pilot: their
   interval's width says how many blocks an interval of ±``target`` (default 0.5 %) needs, and the
   comparison stops there (or at the time cap). The plan is made once: stopping whenever the
   interval looks narrow enough would stop on the moments its spread happens to be underestimated
   (in simulation that said "no difference" for equal kernels in 92 % of trials, not 95 %). The
   interval reported is the wider of the whole series' and the pilot's scaled to the series' length
   (Stein's two-stage interval), so a pilot that saw too little noise cannot make it too narrow.
   The rule never looks at where the interval lies, only at its width.
4. **The verdict.** The interval of B/A − 1 entirely below zero: B is faster; entirely above: B is
   slower; else "no difference found" with the interval. Over cases, the geometric mean of the
   ratios, with an interval from the cases' standard errors (cases measured independently).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, TypedDict

# The two orders of a block's four calls; the parent draws one per block and the worker obeys.
BLOCKS = (("a", "b", "b", "a"), ("b", "a", "a", "b"))
BLOCK_CALLS = 4
KERNELS_NAMED = ("a", "b")
TRIM = 0.2  # share of the blocks trimmed at each end
MIN_BLOCKS = 10  # blocks before any interval is trusted (the t quantile needs degrees of freedom too)
PILOT_BLOCKS = 30  # the first stage: its interval plans how many blocks the target width needs
DEFAULT_TARGET = 0.005  # stop once the ratio's 95 % interval is narrower than ±0.5 %
DEFAULT_MAX_SECONDS = 10.0  # per case
LEVEL = 0.95  # the intervals' confidence level

Direction = Literal["faster", "slower", "same", "unknown"]


class BlockOrder:
    """Which kernel each call of a case runs: blocks of four, each ABBA or BAAB at random (0-based
    call index, warm-up included). ``seed`` makes the order repeatable (tests, the bench script)."""

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)
        self._blocks: list[tuple[str, ...]] = []

    def kernel(self, index: int) -> str:
        block = index // BLOCK_CALLS
        while len(self._blocks) <= block:
            self._blocks.append(BLOCKS[self._rng.getrandbits(1)])
        return self._blocks[block][index % BLOCK_CALLS]

    def kernels(self, first: int, count: int) -> list[str]:
        return [self.kernel(first + i) for i in range(count)]


def blocks_from_calls(kernels: Sequence[str], times_ms: Sequence[float]) -> list[float]:
    """The per-block log ratios ``log((b1 + b2) / (a1 + a2))`` of calls timed in blocks of four.

    ``kernels`` says which kernel each call ran (``a`` or ``b``); a trailing incomplete block is
    left out. A block that is neither ABBA nor BAAB is an error: the worker must obey the parent.
    """
    if len(kernels) != len(times_ms):
        raise ValueError(f"{len(kernels)} kernel labels for {len(times_ms)} times")
    out: list[float] = []
    for start in range(0, len(kernels) - BLOCK_CALLS + 1, BLOCK_CALLS):
        labels = tuple(kernels[start : start + BLOCK_CALLS])
        if labels not in BLOCKS:
            raise ValueError(f"calls {start}–{start + 3} ran {''.join(labels).upper()}, not ABBA or BAAB")
        times = times_ms[start : start + BLOCK_CALLS]
        if min(times) <= 0:
            raise ValueError(f"a call of block {start // BLOCK_CALLS} took no time ({', '.join(map(str, times))} ms)")
        a = sum(t for t, k in zip(times, labels, strict=True) if k == "a")
        b = sum(t for t, k in zip(times, labels, strict=True) if k == "b")
        out.append(math.log(b / a))
    return out


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (Cornish–Fisher expansion in
    1/df; for p = 0.975 within 3e-4 of the exact value from df = 5, which MIN_BLOCKS guarantees)."""
    if df <= 0:
        return math.inf
    z = NormalDist().inv_cdf(p)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


@dataclass(frozen=True)
class Interval:
    """A log ratio's estimate and its ``level`` interval (``se``: the estimate's standard error)."""

    estimate: float
    low: float
    high: float
    se: float
    blocks: int
    level: float = LEVEL


def trimmed_interval(
    log_ratios: Sequence[float], trim: float = TRIM, level: float = LEVEL
) -> Interval | None:
    """Yuen's ``level`` interval for the trimmed mean of ``log_ratios`` (None with fewer than MIN_BLOCKS)."""
    n = len(log_ratios)
    if n < MIN_BLOCKS:
        return None
    xs = sorted(log_ratios)
    g = int(math.floor(trim * n))
    kept = xs[g : n - g]
    estimate = sum(kept) / len(kept)
    winsorised = [xs[g]] * g + kept + [xs[n - g - 1]] * g
    w_mean = sum(winsorised) / n
    w_var = sum((x - w_mean) ** 2 for x in winsorised) / (n - 1)
    se = math.sqrt(w_var) / ((1 - 2 * g / n) * math.sqrt(n))
    half = t_quantile((1 + level) / 2, n - 2 * g - 1) * se
    return Interval(estimate, estimate - half, estimate + half, se, n, level)


def half_width(interval: Interval) -> float:
    """Half the width of the ratio's interval, as a fraction (0.005: ±0.5 %)."""
    return (math.exp(interval.high) - math.exp(interval.low)) / 2


def final_interval(log_ratios: Sequence[float], level: float = LEVEL) -> Interval | None:
    """The interval a comparison reports: Yuen's over all blocks, widened where the pilot's, scaled
    to the series' length (Stein's two-stage interval), is wider (None with fewer than MIN_BLOCKS)."""
    whole = trimmed_interval(log_ratios, level=level)
    n = len(log_ratios)
    if whole is None or n < PILOT_BLOCKS:
        return whole
    pilot = trimmed_interval(log_ratios[:PILOT_BLOCKS], level=level)
    assert pilot is not None
    shrink = math.sqrt(PILOT_BLOCKS / n)
    half = max((whole.high - whole.low) / 2, (pilot.high - pilot.low) / 2 * shrink)
    return Interval(whole.estimate, whole.estimate - half, whole.estimate + half, max(whole.se, pilot.se * shrink),
                    n, level)


def planned_blocks(log_ratios: Sequence[float], target: float = DEFAULT_TARGET, level: float = LEVEL) -> int | None:
    """How many blocks the pilot says an interval of ±``target`` needs (None before the pilot is done)."""
    if len(log_ratios) < PILOT_BLOCKS:
        return None
    pilot = trimmed_interval(log_ratios[:PILOT_BLOCKS], level=level)
    assert pilot is not None
    half = (pilot.high - pilot.low) / 2
    return max(PILOT_BLOCKS, math.ceil(PILOT_BLOCKS * (half / math.log1p(target)) ** 2))


STOP_PLANNED = "planned blocks done"
STOP_TIME_CAP = "time cap"


def stop_reason(
    log_ratios: Sequence[float],
    wall_s: float,
    target: float = DEFAULT_TARGET,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    level: float = LEVEL,
) -> str | None:
    """Why a case's comparison can stop now (None: go on)."""
    planned = planned_blocks(log_ratios, target, level)
    if planned is not None and len(log_ratios) >= planned:
        return STOP_PLANNED
    if wall_s >= max_seconds:
        return STOP_TIME_CAP
    return None


class VerdictData(TypedDict):
    """``Verdict.to_dict()``: a comparison's verdict in the compare report, a trial's record and its card."""

    direction: Direction
    change: float | None
    low: float | None
    high: float | None
    calls_each: int
    text: str


class CaseComparisonData(VerdictData):
    """``CaseComparison.to_dict()``: one case's verdict and how it was reached."""

    label: str
    blocks: int
    stopped: str
    wall_s: float
    ratio: dict[str, float] | None


@dataclass(frozen=True)
class Verdict:
    """What one comparison (a case, or the geometric mean over cases) says about B against A.

    ``change``/``low``/``high``: B's time relative to A's, minus one (−0.031: B takes 3.1 % less time).
    """

    direction: Direction
    change: float | None
    low: float | None
    high: float | None
    calls_each: int
    text: str

    def to_dict(self) -> VerdictData:
        return {"direction": self.direction, "change": self.change, "low": self.low, "high": self.high,
                "calls_each": self.calls_each, "text": self.text}


def _pct(x: float) -> str:
    return f"{abs(x) * 100:.1f}"


def _signed_pct(x: float) -> str:
    value = round(x * 100, 1)
    if value == 0:
        return "0.0 %"
    return f"{'+' if value > 0 else '−'}{abs(value):.1f} %"


def _level(interval: Interval) -> str:
    return f"{interval.level * 100:g} %"


def _count(n: int) -> str:
    return f"{n:,}"


def verdict(interval: Interval | None, calls_each: int, a_name: str = "A", b_name: str = "B") -> Verdict:
    """The verdict and its sentence from one interval of log(B/A)."""
    if interval is None:
        return Verdict(
            "unknown",
            None,
            None,
            None,
            calls_each,
            f"too few calls to compare ({_count(calls_each)} each; at least {MIN_BLOCKS * 2} are needed)",
        )
    change, low, high = (math.expm1(interval.estimate), math.expm1(interval.low), math.expm1(interval.high))
    calls = (f"{_count(calls_each)} calls each" if calls_each
             else f"{interval.blocks} case{'s' if interval.blocks != 1 else ''}")
    if high < 0:
        return Verdict(
            "faster",
            change,
            low,
            high,
            calls_each,
            f"{b_name} is {_pct(change)} % faster than {a_name} "
            f"({_level(interval)} CI {_pct(high)}–{_pct(low)} %, {calls})",
        )
    if low > 0:
        return Verdict(
            "slower",
            change,
            low,
            high,
            calls_each,
            f"{b_name} is {_pct(change)} % slower than {a_name} "
            f"({_level(interval)} CI {_pct(low)}–{_pct(high)} %, {calls})",
        )
    return Verdict(
        "same",
        change,
        low,
        high,
        calls_each,
        f"no difference found ({_signed_pct(low)} to {_signed_pct(high)}, {calls})",
    )


@dataclass(frozen=True)
class CaseComparison:
    """One benchmark case compared: its blocks' log ratios, the interval, why it stopped."""

    label: str
    log_ratios: list[float]
    stopped: str
    wall_s: float
    interval: Interval | None
    verdict: Verdict

    @property
    def calls_each(self) -> int:
        return len(self.log_ratios) * 2

    def to_dict(self) -> CaseComparisonData:
        return {
            "label": self.label,
            "blocks": len(self.log_ratios),
            "calls_each": self.calls_each,
            "stopped": self.stopped,
            "wall_s": round(self.wall_s, 3),
            "ratio": _ratio(self.interval),
            **self.verdict.to_dict(),
        }


def _ratio(interval: Interval | None) -> dict[str, float] | None:
    if interval is None:
        return None
    return {
        "estimate": math.exp(interval.estimate),
        "low": math.exp(interval.low),
        "high": math.exp(interval.high),
    }


def compare_case(
    label: str,
    log_ratios: Sequence[float],
    stopped: str = "",
    wall_s: float = 0.0,
    a_name: str = "A",
    b_name: str = "B",
    level: float = LEVEL,
) -> CaseComparison:
    interval = final_interval(log_ratios, level=level)
    return CaseComparison(
        label,
        list(log_ratios),
        stopped,
        wall_s,
        interval,
        verdict(interval, len(log_ratios) * 2, a_name, b_name),
    )


def geometric_mean(
    cases: Sequence[CaseComparison], a_name: str = "A", b_name: str = "B", level: float = LEVEL
) -> Verdict:
    """The geometric mean of B/A over cases, with a normal interval from the cases' standard errors
    (each case is measured on its own, so their errors are independent)."""
    intervals = [c.interval for c in cases if c.interval is not None]
    if not intervals or len(intervals) < len(cases):
        missing = len(cases) - len(intervals)
        return Verdict(
            "unknown",
            None,
            None,
            None,
            0,
            f"no geometric mean: {missing} of {len(cases)} cases had too few calls to compare",
        )
    k = len(intervals)
    estimate = sum(i.estimate for i in intervals) / k
    se = math.sqrt(sum(i.se**2 for i in intervals)) / k
    z = NormalDist().inv_cdf((1 + level) / 2)
    combined = Interval(estimate, estimate - z * se, estimate + z * se, se, k, level)
    calls = sum(c.calls_each for c in cases)
    out = verdict(combined, 0, a_name, b_name)
    return Verdict(out.direction, out.change, out.low, out.high, calls, out.text)


def separate_medians_change(a_ms: Sequence[float], b_ms: Sequence[float]) -> float:
    """B's median over A's, minus one: what two series measured one after the other would claim
    (kept to show, in the tests and docs, what interleaving removes)."""
    from kerneltui.core.bench.stats import median

    return median(b_ms) / median(a_ms) - 1


# ----------------------------------------------------------------------------------------------
# where decisions are made: auto mode's keep rule, the agent's feedback
# ----------------------------------------------------------------------------------------------


def keeps_change(found: Verdict, at_least: float = 0.0) -> bool:
    """Auto mode's keep rule: keep B only when it is faster by more than its interval allows doubt
    about (the whole interval below zero) and, with ``at_least``, by at least that fraction at the
    interval's slow end. A median that moved, or an interval that straddles zero, keeps nothing."""
    return found.direction == "faster" and found.high is not None and found.high <= -at_least


def feedback_word(found: Verdict) -> str:
    """What the agent's feedback calls a comparison: "significant" (the interval excludes zero),
    "within noise" (it does not), or "not measured" (too few calls, a failure)."""
    if found.direction in ("faster", "slower"):
        return "significant"
    return "within noise" if found.direction == "same" else "not measured"
