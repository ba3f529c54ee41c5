"""Per-DSL knowledge used inside worker processes: warm imports, launch hooks, compile, dump.

``backend_for(name)`` returns the :class:`~kerneltui.core.backends.base.Backend` for a task's
backend. These modules run in workers only (they import torch and the DSLs).
"""

from __future__ import annotations

import importlib
from typing import Any

_MODULES = {"triton": "triton", "cute": "cute", "cuda": "cuda", "torch": "torch", "tilelang": "tilelang"}


def backend_for(name: str) -> Any:
    if name not in _MODULES:
        raise ValueError(f"unknown backend {name!r}; expected one of {', '.join(_MODULES)}")
    module = importlib.import_module(f"kerneltui.core.backends.{_MODULES[name]}")
    return module.Backend()
