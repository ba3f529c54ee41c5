"""Plain PyTorch candidates (e.g. torch.compile of a rewrite): no DSL, no launch requirement."""

from __future__ import annotations

import os
from typing import Any

from kerneltui.core.backends.base import BaseBackend
from kerneltui.core.backends.spec import BackendSpec, CacheHome, CompileCache


def _inductor_cache(home: CacheHome) -> str:
    return os.path.join(home.temp, f"torchinductor_{home.safe_user}")


SPEC = BackendSpec(
    name="torch",
    label="PyTorch",
    kernel_file="kernel.py",
    torch_is_the_kernel=True,
    requires_launch=False,
    dumps=False,
    # torch.compile's cache: the baseline's compiles, whatever the task's backend.
    caches=(CompileCache("TORCHINDUCTOR_CACHE_DIR", "torch.compile (Inductor) cache", _inductor_cache, "torch",
                         holds_candidate_kernels=False),),
    env_prefixes=("TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "PYTORCH_"),
)


class Backend(BaseBackend):
    spec = SPEC

    def is_compile_error(self, exc: BaseException) -> bool:
        # torch.compile failures (Dynamo/Inductor) are compile errors of this backend.
        mod = type(exc).__module__
        return mod.startswith(("torch._dynamo", "torch._inductor"))

    def kernels(self, state: Any) -> list[str]:
        return []
