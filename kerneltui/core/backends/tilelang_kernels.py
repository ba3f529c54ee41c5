"""What a compiled TileLang kernel is called and how it launches, read off the kernel object.

Shared by the backend (``tilelang.py``: kernel names for the compile rung, error messages) and its
dump (``tilelang_dump.py``: which ``__global__`` function of the generated source is which kernel).
"""

from __future__ import annotations

import re
from typing import Any

GLOBAL_KERNEL = re.compile(r'__global__\s+void\s+(?:__launch_bounds__\((?P<bounds>[^)]*)\)\s+)?(?P<name>\w+)\s*\(')


def describe_kernel(kernel: Any) -> tuple[str, str, list[int] | None]:
    """(name, device symbol, block) of a compiled kernel: the prim_func's name (``gemm``), the
    ``__global__`` function TileLang generated for it (``gemm_kernel``) and its launch bounds."""
    func = getattr(kernel, "prim_func", None)
    attrs = getattr(func, "attrs", None)
    name = str(attrs["global_symbol"]) if attrs is not None and "global_symbol" in attrs else "tilelang_kernel"
    try:
        source = kernel.get_kernel_source()
    except Exception:
        source = ""
    # The first match may be a forward declaration, which carries no launch bounds.
    matches = list(GLOBAL_KERNEL.finditer(source or ""))
    if not matches:
        return name, "", None
    match = next((m for m in matches if m.group("bounds")), matches[0])
    bounds = (match.group("bounds") or "").split(",")[0].strip()
    return name, match.group("name"), [int(bounds), 1, 1] if bounds.isdigit() else None
