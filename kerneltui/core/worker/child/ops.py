"""The table of operations a worker serves, gathered from the op modules."""

from __future__ import annotations

import importlib
from typing import Any

# Each module exposes OPS: dict[str, callable(state, args, progress) -> dict].
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

OPS: dict[str, Any] = {}
for _name in OP_MODULES:
    OPS.update(importlib.import_module(_name).OPS)
