"""Reading the CSV pages of ``ncu --import REPORT --csv --page raw|details|source``.

ncu writes its own log lines (``==PROF==``, ``==WARNING==``) around the CSV; they are dropped.
Numbers may carry thousands separators (``"1,048,576"``); :func:`number` reads them. The raw page
has one row per profiled kernel launch, one column per metric, and a second header row of units;
the details page has one row per (kernel, section, metric) and the rule results of each section.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from typing import Any

IDENTITY_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
                    "Block Size", "Grid Size", "Device", "CC")


def csv_rows(text: str) -> list[list[str]]:
    """The CSV records of an ncu page, without ncu's own log lines."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("==")]
    return [row for row in csv.reader(io.StringIO("\n".join(lines))) if row]


def csv_dicts(text: str) -> list[dict[str, str]]:
    rows = csv_rows(text)
    if not rows:
        return []
    header = rows[0]
    return [dict(zip(header, row, strict=False)) for row in rows[1:]]


_NUMBER = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][+-]?\d+)?$|^[+-]?\.\d+([eE][+-]?\d+)?$")


def number(value: Any) -> float | None:
    """A metric value as a float (``"1,234.5"`` → 1234.5); None for ``n/a``, text or empty."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().strip('"')
    if not text or not _NUMBER.match(text):
        return None
    return float(text.replace(",", ""))


_TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}
_PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_SCALED = re.compile(r"^([KMGT])(byte|hz|inst|cycle|warp|sector|thread|request|branches)(/.*)?$", re.IGNORECASE)


def unit_scale(unit: str) -> float:
    """Factor from a printed unit to kerneltui's base (``Mbyte`` → 1e6, ``us`` → 1e3 ns).

    Pages printed with ``--print-units base`` need none; without it ncu scales each metric to a
    readable magnitude and the units row says how.
    """
    unit = unit.strip()
    if unit in _TIME_NS:
        return _TIME_NS[unit]
    m = _SCALED.match(unit)
    return _PREFIX[m.group(1).upper()] if m else 1.0


@dataclass
class RawKernel:
    """One profiled kernel launch from the raw page."""

    id: int
    name: str
    block: str = ""
    grid: str = ""
    values: dict[str, str] = field(default_factory=dict)  # metric name -> value as printed
    units: dict[str, str] = field(default_factory=dict)

    def get(self, metric: str) -> float | None:
        """The value in base units (bytes, ns, cycles, hz), whatever units the page was printed in."""
        value = number(self.values.get(metric))
        if value is None:
            return None
        return value * unit_scale(self.units.get(metric, ""))

    def text(self, metric: str) -> str | None:
        value = self.values.get(metric)
        return None if value is None else value.strip()

    def matching(self, pattern: re.Pattern[str]) -> dict[str, float]:
        """Numeric metrics whose name matches ``pattern`` (first group = the key)."""
        out: dict[str, float] = {}
        for name, raw in self.values.items():
            m = pattern.fullmatch(name)
            if m is None:
                continue
            value = number(raw)
            if value is not None:
                out[m.group(1)] = value
        return out


def parse_raw(text: str) -> list[RawKernel]:
    rows = csv_rows(text)
    if not rows:
        return []
    header = rows[0]
    kernels: list[RawKernel] = []
    units: dict[str, str] = {}
    for row in rows[1:]:
        record = dict(zip(header, row, strict=False))
        ident = number(record.get("ID"))
        if ident is None:
            # The units row: no ID, a unit under each metric.
            units = {k: v for k, v in record.items() if v and _is_metric(k)}
            continue
        values = {k: v for k, v in record.items() if _is_metric(k)}
        kernels.append(RawKernel(
            id=int(ident), name=record.get("Kernel Name", ""), block=record.get("Block Size", ""),
            grid=record.get("Grid Size", ""), values=values, units=units,
        ))
    return kernels


def _is_metric(column: str) -> bool:
    # Besides the identity columns, ncu adds one column per NVTX range kind ("thread Domain:Push/Pop_Range:…").
    return column not in IDENTITY_COLUMNS and ":" not in column


@dataclass(frozen=True)
class DetailMetric:
    section: str
    name: str
    unit: str
    value: str
    label: str = ""  # the table or chart inside the section ("Warp State (All Cycles)")

    @property
    def number(self) -> float | None:
        return number(self.value)


@dataclass(frozen=True)
class RuleResult:
    """A message from one of ncu's analysis rules (what the GUI shows under a section)."""

    section: str
    name: str
    kind: str  # OPT (an optimisation opportunity), WRN, INF, ERR …
    text: str
    speedup: float | None = None  # ncu's estimated speedup in %, where it gives one
    speedup_kind: str = ""  # "global" or "local" (of that section's part of the runtime)


@dataclass
class DetailKernel:
    id: int
    name: str
    metrics: list[DetailMetric] = field(default_factory=list)
    rules: list[RuleResult] = field(default_factory=list)

    def metric(self, section: str, name: str) -> DetailMetric | None:
        return next((m for m in self.metrics if m.section == section and m.name == name), None)


def parse_details(text: str) -> list[DetailKernel]:
    kernels: dict[int, DetailKernel] = {}
    for record in csv_dicts(text):
        ident = number(record.get("ID"))
        if ident is None:
            continue
        k = kernels.setdefault(int(ident), DetailKernel(id=int(ident), name=record.get("Kernel Name", "")))
        section = record.get("Section Name", "")
        rule_name = (record.get("Rule Name") or "").strip()
        if rule_name:
            k.rules.append(RuleResult(
                section=section, name=rule_name, kind=(record.get("Rule Type") or "").strip(),
                text=_clean(record.get("Rule Description") or ""),
                speedup=number(record.get("Estimated Speedup")),
                speedup_kind=(record.get("Estimated Speedup Type") or "").strip().lower(),
            ))
            continue
        name = (record.get("Metric Name") or "").strip()
        if name:
            k.metrics.append(DetailMetric(section=section, name=name, unit=(record.get("Metric Unit") or "").strip(),
                                          value=(record.get("Metric Value") or "").strip(),
                                          label=(record.get("Body Item Label") or "").strip()))
    return [kernels[i] for i in sorted(kernels)]


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
