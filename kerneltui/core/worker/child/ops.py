"""The table of operations a worker serves, gathered from the op modules."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

# Each module exposes OPS: op name → op(state, args, progress) -> its reply. Each op declares its own
# args and reply (``core.worker.contract.requests`` / ``replies``); the table is where a request's
# JSON is taken to be that op's args, hence ``...``.
OP_MODULES = (
    "kerneltui.core.worker.child.ops_candidate",
    "kerneltui.core.worker.child.ops_judge",
    "kerneltui.core.worker.child.ops_judge_bench",
    "kerneltui.core.worker.child.ops_device",
    "kerneltui.core.worker.child.ops_bench",
    "kerneltui.core.worker.child.ops_compare",
    "kerneltui.core.worker.child.ops_dump",
    "kerneltui.core.worker.child.ops_trace",
    "kerneltui.core.worker.child.ops_work",
)

OPS: dict[str, Callable[..., Mapping[str, object]]] = {}
for _name in OP_MODULES:
    OPS.update(importlib.import_module(_name).OPS)
