"""``[benchmark]``: how long and how carefully the benchmark measures (``BenchSettings``).

Read by the config at load, by the rungs in the parent and by the timing code in the workers, so it
imports nothing of kerneltui but the schema's words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from kerneltui.settings.schema import FALSE_WORDS, TRUE_WORDS

GRAPH_MODES = ("off", "on", "auto")
FLUSH_MODES = ("write", "write_read", "read")
FRESH_MODES = ("derive", "generate")


@dataclass(frozen=True)
class BenchSettings:
    """How long and how carefully to measure (``[benchmark]`` in the config, or RunOptions.benchmark)."""

    min_runs: int = 10  # timed calls, at least
    min_kernel_ms: float = 100.0  # summed kernel time of the timed calls, at least
    rel_stderr: float = 0.005  # stop once the standard error of the mean is below this fraction
    max_seconds: float = 10.0  # wall-clock cap of the timed phase, per case and per measured function
    max_runs: int = 100_000
    warmup_runs: int = 3  # warm-up calls, at least (same code path as the timed ones)
    warmup_ms: float = 25.0  # and at least this much wall time of warm-up
    graph: str = "auto"  # CUDA-graph mode: off | on | auto (auto: when the kernel looks launch-bound)
    graph_below_ms: float = 0.02  # auto: a median under this is launch-bound territory
    torch_compile: bool = True  # time torch.compile of the reference as a second baseline
    # Reuse the baselines (reference, torch.compile) measured before for the same reference files,
    # cases, device, versions and method (core.rungs.baselines): a second check times only the kernel.
    baseline_cache: bool = True
    pool_fraction: float = 0.25  # share of free device memory the input pool may use
    max_pool: int = 16  # input sets generated ahead per batch
    straggle_us: float = 20.0  # side-work detector: minimum threshold (calibrated upwards per device)
    # How the L2 is emptied before each call: read a clean buffer of 2× L2 (L2 left holding clean
    # lines, as after ncu's --cache-control all), or write one (L2 left dirty: the timed call pays the
    # write-back), or both. On the H200 (bench/l2_flush_study.py, bench/RESULTS.md) read gives
    # +0.8–0.9% against ncu where write gives +3.8–4.1%.
    flush: str = "read"
    # Each timed call's inputs: "derive" (made on the device from a few sets the task generated,
    # core.worker.child.fresh_inputs) or "generate" (the task's generate_input for every set: slow when it
    # runs on the host; for inputs whose meaning a relative jitter breaks).
    fresh_inputs: str = "derive"
    # The benchmark rung's wall-time bound in seconds (baselines measured now and the kernel's
    # series share it); a series cut short by it says so and is not a failure.
    max_wall_s: float = 20.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_mapping(cls, *layers: Mapping[str, Any] | None) -> BenchSettings:
        """Defaults overridden by each mapping in turn; a wrong key or type raises ValueError."""
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for layer in layers:
            for key, raw in (layer or {}).items():
                if key not in known:
                    raise ValueError(f"unknown [benchmark] setting {key!r}; known: {', '.join(sorted(known))}")
                values[key] = _coerce(key, raw, getattr(cls, key))
        settings = cls(**values)
        if settings.flush not in FLUSH_MODES:
            raise ValueError(f"[benchmark] flush must be one of {', '.join(FLUSH_MODES)}, not {settings.flush!r}")
        if settings.graph not in GRAPH_MODES:
            raise ValueError(f"[benchmark] graph must be one of {', '.join(GRAPH_MODES)}, not {settings.graph!r}")
        if settings.min_runs < 1 or settings.max_runs < settings.min_runs:
            raise ValueError("[benchmark] needs 1 <= min_runs <= max_runs")
        if settings.fresh_inputs not in FRESH_MODES:
            raise ValueError(f"[benchmark] fresh_inputs must be one of {', '.join(FRESH_MODES)}, "
                             f"not {settings.fresh_inputs!r}")
        if not settings.max_wall_s > 0:
            raise ValueError(f"[benchmark] max_wall_s must be a positive number of seconds, not {settings.max_wall_s!r}")
        if not 0 < settings.pool_fraction <= 0.9:
            raise ValueError("[benchmark] pool_fraction must be in (0, 0.9]")
        return settings


def _coerce(key: str, raw: Any, default: Any) -> Any:
    kind = type(default)
    try:
        if kind is bool:
            if isinstance(raw, str):
                if raw.lower() in TRUE_WORDS:
                    return True
                if raw.lower() in FALSE_WORDS:
                    return False
                raise ValueError(raw)
            return bool(raw)
        if kind is int:
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError(raw)
            return int(raw)
        if kind is float:
            return float(raw)
        return str(raw)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"[benchmark] {key} must be a {kind.__name__}, not {raw!r}") from exc
