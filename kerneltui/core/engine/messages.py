"""What a command and the engine say to each other, as typed data.

Client → engine, one request per connection: ``{"op": "status"}``, ``{"op": "stop"}`` or
``{"op": "run", "run": RunRequest}``; during a run the client may send ``{"cancel": true}`` (or hang
up, which cancels too). Engine → client during a run: ``{"event": <core.events dict>}`` for every
event the loop emits, then ``{"report": <RunReport>}`` or ``{"error": {"kind", "message"}}``
(kinds: ``task``: the task could not be loaded, exit 2; ``request``: the engine refused the request,
nothing ran; ``engine``: the engine could not run it).

A request is read strictly: a field this version does not know, or one it needs that is missing, is
refused with what to do (a command and an engine of different kerneltui versions), never ignored: a
dropped load option would run another problem than the command line named.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from kerneltui.core.events import VerdictReached, event_from_dict, event_to_dict
from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.task import LoadOptions

REQUEST_FIELDS = ("task", "kernel", "load", "options")
VERSION_SKEW = ("a command and an engine of different kerneltui versions: stop the engine (`kerneltui engine stop`) "
                "and run the command again")


@dataclass(frozen=True)
class RunRequest:
    """One verification run: the task as the command named and loaded it, and the run's options."""

    task: str  # absolute path: a task folder, a KernelBench file or a GPU MODE folder
    kernel: str | None = None  # absolute path of a kernel file other than the task's own
    load: LoadOptions = field(default_factory=LoadOptions)  # --backend, --set, --scale: the engine loads with them
    options: dict[str, Any] = field(default_factory=dict)  # RunOptions' fields

    @classmethod
    def make(cls, task: str | Path, kernel: str | Path | None, load: LoadOptions, options: RunOptions) -> RunRequest:
        """The request of a run as this command would do it here: with its ``[benchmark]`` settings (the
        config file and ``KERNELTUI_BENCHMARK_*`` as this process sees them) unless the run has its own,
        so an engine started from another shell's settings times it as this command would. Those
        variables therefore do not make an engine of their own (``settings.CLIENT_ONLY``)."""
        options = options.with_configured_benchmark()
        return cls(task=str(Path(task).resolve()), kernel=str(Path(kernel).resolve()) if kernel else None,
                   load=load, options=json_clean(options.to_dict()))

    def run_options(self) -> RunOptions:
        return RunOptions.from_dict(self.options)

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "kernel": self.kernel, "load": self.load.to_dict(), "options": self.options}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRequest:
        """The request ``to_dict`` wrote; ValueError says what is wrong with any other."""
        unknown = sorted(set(data) - set(REQUEST_FIELDS))
        if unknown:
            raise ValueError(f"the run request has field(s) this engine does not know ({', '.join(unknown)}): "
                             + VERSION_SKEW)
        if not isinstance(data.get("task"), str):
            raise ValueError("a run request names its task (a path)")
        if "load" not in data:
            raise ValueError("the run request carries no load options (--backend, --set, --scale): " + VERSION_SKEW)
        try:
            load = LoadOptions.from_dict(data["load"])
        except ValueError as exc:
            raise ValueError(f"the run request's {exc}") from exc
        options = data.get("options") or {}
        if not isinstance(options, dict):
            raise ValueError(f"the run request's options must be an object, not {type(options).__name__}")
        unknown = sorted(set(options) - {f.name for f in fields(RunOptions)})
        if unknown:
            raise ValueError(f"the run request has run option(s) this engine does not know ({', '.join(unknown)}): "
                             + VERSION_SKEW)
        try:  # the values' types too, so that a bad one is refused before any work starts
            RunOptions.from_dict(options)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"the run request's {exc}") from exc
        kernel = data.get("kernel")
        return cls(task=data["task"], kernel=str(kernel) if kernel else None, load=load, options=dict(options))


def json_clean(value: Any) -> Any:
    """The value as plain JSON types (anything else as its text), so it crosses the socket."""
    return json.loads(json.dumps(value, default=str))


def report_to_dict(report: RunReport) -> dict[str, Any]:
    data = {f.name: getattr(report, f.name) for f in dataclasses.fields(report) if f.name not in ("results", "verdicts")}
    data["results"] = [r.to_dict() for r in report.results]
    data["verdicts"] = [event_to_dict(v) for v in report.verdicts]
    return json_clean(data)


def report_from_dict(data: dict[str, Any]) -> RunReport:
    names = {f.name for f in dataclasses.fields(RunReport)}
    fields = {k: v for k, v in data.items() if k in names and k not in ("results", "verdicts")}
    verdicts = [event_from_dict(v) for v in data.get("verdicts") or []]
    return RunReport(results=[RungResult.from_dict(r) for r in data.get("results") or []],
                     verdicts=[v for v in verdicts if isinstance(v, VerdictReached)], **fields)
