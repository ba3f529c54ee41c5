"""The rungs of the verification loop, in order. Each module has ``async def run(ctx) -> RungResult``.

To add a rung: write ``core/rungs/<name>.py`` and list it in ``RUNG_SPECS`` with its dependencies.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # context imports events, which imports rungs.result: keep this package light
    from kerneltui.core.rungs.context import RungSpec

# name, title, requires, needs_gpu, on_demand, own_worker
_TABLE: list[tuple[str, str, tuple[str, ...], bool, bool, bool]] = [
    ("prechecks", "static checks of the kernel source", (), False, False, False),
    ("compile", "import and compile the kernels", (), False, False, False),
    ("run", "one call on the first test case", ("compile",), False, False, False),
    ("correctness", "every case × seeds against the reference", ("run",), False, False, False),
    ("benchmark", "time the kernel, the reference and torch.compile", ("correctness",), True, False, True),
    ("roofline", "the times against the device's measured peaks", ("benchmark",), True, False, False),
    ("dump", "IR, PTX and SASS of every kernel, linked to the source", ("compile",), False, False, False),
    ("profile", "Nsight Compute on one benchmark case, summarised", ("correctness",), True, True, False),
    ("trace", "time named regions inside the kernel, traced vs untraced", ("correctness",), True, True, True),
]


# Rungs that describe a version once its verdict is in (compiler output, a profile, a trace): the
# verdict is known when the others end (core.verdict), and the loop announces it (VerdictReached)
# without waiting for these.
AFTER_VERDICT = frozenset({"dump", "profile", "trace"})


@cache
def rung_specs() -> tuple[RungSpec, ...]:
    from kerneltui.core.rungs.context import RungSpec

    specs = []
    for name, title, requires, needs_gpu, on_demand, own_worker in _TABLE:
        module = importlib.import_module(f"kerneltui.core.rungs.{name}")
        specs.append(RungSpec(name=name, title=title, run=module.run, requires=requires,
                              needs_gpu=needs_gpu, on_demand=on_demand, own_worker=own_worker,
                              no_gpu_reason=getattr(module, "no_gpu_reason", None)))
    return tuple(specs)


def rung_rows() -> list[tuple[str, str, bool, bool]]:
    """(name, title, needs_gpu, on_demand) of every rung, in order, without importing any rung
    module (the TUI draws these in its first frame; the modules pull in the dump's and the
    profiler's parsers)."""
    return [(name, title, needs_gpu, on_demand) for name, title, _, needs_gpu, on_demand, _ in _TABLE]


def rung_names() -> list[str]:
    return [name for name, *_ in _TABLE]


def default_rungs() -> list[str]:
    return [row[0] for row in _TABLE if not row[4]]


def spec(name: str) -> RungSpec:
    for s in rung_specs():
        if s.name == name:
            return s
    raise KeyError(name)


def resolve(requested: list[str] | None) -> list[str]:
    """The rungs to run, in loop order, with their prerequisites added."""
    names = rung_names()
    wanted = set(requested if requested is not None else default_rungs())
    unknown = wanted - set(names)
    if unknown:
        raise ValueError(f"unknown rung(s) {', '.join(sorted(unknown))}; known: {', '.join(names)}")
    changed = True
    while changed:
        changed = False
        for name in list(wanted):
            for dep in spec(name).requires:
                if dep not in wanted:
                    wanted.add(dep)
                    changed = True
    if "compile" not in wanted and wanted - {"prechecks"}:
        wanted.add("compile")
    return [n for n in names if n in wanted]
