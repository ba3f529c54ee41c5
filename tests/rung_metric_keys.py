"""The keys a rung's metrics hold that its TypedDict (``core.rungs.rung_metrics``) does not declare.

mypy checks the keys where a rung builds its metrics from literals; where they come from a cast
(a worker's reply, the dump's index, the trace's files) only a real run can tell, which these
helpers let the end-to-end tests check.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kerneltui.core.rungs import rung_metrics

DECLARED: dict[str, type] = {
    "prechecks": rung_metrics.PrechecksMetrics, "compile": rung_metrics.CompileMetrics,
    "run": rung_metrics.RunMetrics, "correctness": rung_metrics.CorrectnessMetrics,
    "benchmark": rung_metrics.BenchmarkMetrics, "roofline": rung_metrics.RooflineMetrics,
    "dump": rung_metrics.DumpMetrics, "profile": rung_metrics.ProfileMetrics, "trace": rung_metrics.TraceMetrics,
}
# The trace rung names the tracer's own files at run time.
RUN_TIME_KEYS = {"trace": re.compile(r"^\w+_file_\d+$")}


def keys_of(typed: Any) -> frozenset[str]:
    """Every key a TypedDict class declares, required or not."""
    return frozenset(typed.__required_keys__) | frozenset(typed.__optional_keys__)


def undeclared(rung: str, metrics: Mapping[str, object]) -> set[str]:
    named = RUN_TIME_KEYS.get(rung)
    return {k for k in metrics if k not in keys_of(DECLARED[rung]) and not (named and named.match(k))}


def undeclared_in_cases(typed: Any, cases: list[Mapping[str, object]]) -> set[str]:
    return {k for case in cases for k in case if k not in keys_of(typed)}
