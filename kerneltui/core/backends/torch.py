"""Plain PyTorch candidates (e.g. torch.compile of a rewrite): no DSL, no launch requirement."""

from __future__ import annotations

from typing import Any

from kerneltui.core.backends.base import BaseBackend


class Backend(BaseBackend):
    name = "torch"
    label = "PyTorch"
    requires_launch = False

    def is_compile_error(self, exc: BaseException) -> bool:
        # torch.compile failures (Dynamo/Inductor) are compile errors of this backend.
        mod = type(exc).__module__
        return mod.startswith(("torch._dynamo", "torch._inductor"))

    def kernels(self, state: Any) -> list[str]:
        return []
