"""What a command and the engine say to each other, as typed data.

Client → engine, one request per connection: ``{"op": "status"}``, ``{"op": "stop"}`` or
``{"op": "run", "run": RunRequest}``; during a run the client may send ``{"cancel": true}`` (or hang
up, which cancels too). Engine → client during a run: ``{"event": <core.events dict>}`` for every
event the loop emits, then ``{"report": <RunReport>}`` or ``{"error": {"kind", "message"}}``
(kinds: ``task``: the task could not be loaded, exit 2; ``engine``: the engine could not run it).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.rungs.result import RungResult


@dataclass(frozen=True)
class RunRequest:
    """One verification run: the task as the command named it and the run's options."""

    task: str  # absolute path: a task folder, a KernelBench file or a GPU MODE folder
    kernel: str | None = None  # absolute path of a kernel file other than the task's own
    options: dict[str, Any] = field(default_factory=dict)  # RunOptions' fields

    @classmethod
    def make(cls, task: str | Path, kernel: str | Path | None, options: RunOptions) -> RunRequest:
        return cls(task=str(Path(task).resolve()), kernel=str(Path(kernel).resolve()) if kernel else None,
                   options=json_clean(options.to_dict()))

    def run_options(self) -> RunOptions:
        return RunOptions.from_dict(self.options)

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "kernel": self.kernel, "options": self.options}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRequest:
        if not isinstance(data.get("task"), str):
            raise ValueError("a run request names its task (a path)")
        kernel = data.get("kernel")
        return cls(task=data["task"], kernel=str(kernel) if kernel else None, options=dict(data.get("options") or {}))


def json_clean(value: Any) -> Any:
    """The value as plain JSON types (anything else as its text), so it crosses the socket."""
    return json.loads(json.dumps(value, default=str))


def report_to_dict(report: RunReport) -> dict[str, Any]:
    data = {f.name: getattr(report, f.name) for f in dataclasses.fields(report) if f.name != "results"}
    data["results"] = [r.to_dict() for r in report.results]
    return json_clean(data)


def report_from_dict(data: dict[str, Any]) -> RunReport:
    names = {f.name for f in dataclasses.fields(RunReport)}
    fields = {k: v for k, v in data.items() if k in names and k != "results"}
    return RunReport(results=[RungResult.from_dict(r) for r in data.get("results") or []], **fields)
