"""Preparing a suite: load every problem with its candidate (at the suite's sizes, or a problem's own),
fingerprint what would be verified, and take verdicts an earlier run of the same items already made.

A problem that cannot be loaded (a task error: bad metadata, a missing function) or has no
candidate gets its row here and the suite goes on; it still counts in the denominator of fast_p.
``core.suite.run`` verifies what is left.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from kerneltui.core.suite import record
from kerneltui.core.suite.discover import Suite, SuiteItem, kernelbench_level
from kerneltui.core.suite.environment import Environment, differences
from kerneltui.core.suite.record import ItemResult, ResultsFile
from kerneltui.core.task import LoadOptions, Task, TaskError
from kerneltui.core.task_loaders.load import load_task


@dataclass
class Prepared:
    """A suite item ready to verify (``task``), or its verdict already known (``done``)."""

    item: SuiteItem
    fingerprint: str
    task: Task | None = None
    source: str = ""
    done: ItemResult | None = None


@dataclass(frozen=True)
class ProblemSizes:
    """One problem's own sizes (``--set PROBLEM:NAME=VALUE``, ``--scale PROBLEM:F``), over the suite's."""

    constants: tuple[tuple[str, str], ...] = ()
    scale: float | None = None


def load_options_for(item: SuiteItem, options: LoadOptions, own: ProblemSizes | None = None) -> LoadOptions:
    """``--set`` applies to the problems that define the constant; the others keep theirs. A
    problem's own sizes come on top: its value of a name wins, its factor replaces the suite's. Its
    own names are not filtered: one the problem lacks is its task error, as with ``check --set``."""
    common = _defined_here(item, options)
    if own is None:
        return common
    mine = {name for name, _ in own.constants}
    constants = tuple(pair for pair in common.constants if pair[0] not in mine) + own.constants
    return replace(common, constants=constants, scale=common.scale if own.scale is None else own.scale)


def _defined_here(item: SuiteItem, options: LoadOptions) -> LoadOptions:
    if not options.constants or item.path.suffix != ".py":
        return options
    from kerneltui.core.task_loaders.constants import module_constants
    from kerneltui.core.task_loaders.pysource import parse_python

    try:
        names = module_constants(parse_python(item.path))
    except TaskError:
        return options  # loading will report the problem
    return replace(options, constants=tuple((n, v) for n, v in options.constants if n in names))


def prepare(suite: Suite, load: LoadOptions, settings: dict[str, Any],
            sizes: dict[str, ProblemSizes] | None = None) -> list[Prepared]:
    """Load every item's task (with its candidate, at the suite's sizes or the problem's own in
    ``sizes``, by problem name) and compute its fingerprint."""
    sizes = sizes or {}
    out: list[Prepared] = []
    for item in suite.items:
        if item.candidate is None:
            fp = record.fingerprint({"problem": item.path.as_posix()}, settings)
            result = ItemResult(key=item.key, problem=item.problem, candidate=item.label, status="no candidate",
                                failure=_no_candidate(suite, item), fingerprint=fp)
            out.append(Prepared(item, fp, done=result))
            continue
        options = load_options_for(item, load, sizes.get(item.problem))
        try:
            task = load_task(item.path, item.candidate, options)
            files = task.read_sources()
        except TaskError as exc:
            fp = record.fingerprint(_raw_sources(item), {**settings, "load": repr(options)})
            result = ItemResult(key=item.key, problem=item.problem, candidate=item.label, status="task error",
                                failure=f"task error: {exc}", fingerprint=fp)
            out.append(Prepared(item, fp, done=result))
            continue
        fp = record.fingerprint(files, {**settings, "backend": task.backend, "task": task.to_dict()})
        out.append(Prepared(item, fp, task=task, source=files[task.kernel_file]))
    return out


def _raw_sources(item: SuiteItem) -> dict[str, str]:
    files = {}
    for path in (item.path if item.path.is_file() else item.path / "task.yml", item.candidate):
        if path is not None and path.is_file():
            files[path.name] = path.read_text(encoding="utf-8", errors="replace")
    return files


def _no_candidate(suite: Suite, item: SuiteItem) -> str:
    if suite.candidates is not None:
        if suite.format == "kernelbench":
            level = kernelbench_level(suite.root)
            number = item.problem.split("_", 1)[0]
            layout = f"level_{level if level is not None else '<L>'}_problem_{number}_sample_<s>_kernel.py, "
            return (f"no candidate in {suite.candidates}: none of its files is named for this problem ({layout}"
                    f"{item.problem}_new.py or {item.problem}.py)")
        return (f"no candidate in {suite.candidates}: no folder {item.problem}/ with a kernel file, and no "
                f"{item.problem}.py")
    if suite.format == "kernelbench":
        return (f"no candidate: put {item.problem}_new.py beside the problem, or pass --candidates with "
                f"level_<L>_problem_<id>_sample_<s>_kernel.py files")
    return "no candidate: the folder has no kernel file (see `kerneltui suite --help`)"


@dataclass
class Reuse:
    """What a resumed suite took from the results file, and what it verifies again despite an earlier
    verdict, with why (``reverify``: key, why)."""

    reused: int = 0
    reverify: list[tuple[str, str]] = field(default_factory=list)


def reuse(prepared: list[Prepared], results: ResultsFile, environment: Environment | None = None) -> Reuse:
    """Take verdicts from an earlier run of the same items made in the same ``environment`` (None:
    any, for callers that compare it themselves)."""
    earlier = results.load()
    out = Reuse()
    for p in prepared:
        old = earlier.get(p.item.key)
        if p.done is not None or old is None:
            continue
        if old.status == "environment":  # the machine stopped it: no verdict to take
            out.reverify.append((p.item.key, "the machine stopped its run last time"))
            continue
        if old.fingerprint != p.fingerprint:
            out.reverify.append((p.item.key, "its sources or options changed"))
            continue
        changed = differences(old.environment, environment) if environment is not None else ""
        if changed:
            out.reverify.append((p.item.key, f"made on another machine or versions ({changed})"))
            continue
        p.done = old
        out.reused += 1
    return out
