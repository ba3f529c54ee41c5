"""A case's parameters: the one type the task, the worker's wire contract and the runtimes share.

Kept apart from ``core.task`` so that the wire contract can name it without importing the task's
loaders and the backend registry (which reach the worker side).
"""

from __future__ import annotations

# A case's keyword parameters for the input generator, as the task wrote them (task.toml, a
# KernelBench header): TOML or JSON values the task's own code reads, never kerneltui.
CaseParams = dict[str, object]
