"""Region markers for kerneltui's ``trace`` rung, on the kernel's side (runs in the worker).

A kernel traced by kerneltui takes one extra pointer argument, a buffer this module hands out::

    from kerneltui import ktrace

    REGIONS = ("load", "compute", "store")

    def custom_kernel(a, b):
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        trace = ktrace.buffer("matmul", REGIONS, grid)    # a dummy unless kerneltui is tracing
        kernel[grid](a, b, c, ..., trace.tensor, TRACE=trace.enabled)

When the harness traces (the trace rung), ``buffer`` allocates a zero-filled int64 buffer of
``ctas × len(regions) × WORDS`` words on the GPU and remembers it; otherwise it returns a one-record
dummy and ``enabled`` is False, so the kernel compiles its markers away (Triton: a constexpr; CUDA
C++: build without ``-DKTRACE``, see ``defines()``). Device helpers: ``kerneltui.ktrace.triton``
for Triton and ``kerneltui/data/kerneltui_trace.cuh`` (``include_dir()``) for CUDA C++.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

WORDS = 8  # must match kerneltui/core/trace/buffer.py and kerneltui_trace.cuh


@dataclass
class Buffer:
    kernel: str
    regions: tuple[str, ...]
    grid: tuple[int, int, int]
    tensor: Any  # torch int64 tensor on the GPU
    enabled: bool

    @property
    def ctas(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


class _Session:
    """Buffers handed out while tracing, reused call after call so that allocating and zeroing
    them stays outside the timed calls (the harness re-arms them between calls)."""

    def __init__(self) -> None:
        self.pool: dict[tuple[Any, ...], list[Buffer]] = {}
        self.cursor: dict[tuple[Any, ...], int] = {}
        self.used: list[Buffer] = []


_session: _Session | None = None
_dummies: dict[Any, Any] = {}


def active() -> bool:
    """True while kerneltui is tracing the kernel (choose the traced build then)."""
    return _session is not None


def include_dir() -> Path:
    """The folder holding ``kerneltui_trace.cuh``, for ``kerneltui.cuda.load(include_dirs=...)``."""
    return Path(__file__).resolve().parent.parent / "data"


def defines() -> dict[str, object]:
    """``{"KTRACE": 1}`` while tracing, else ``{}``: pass to ``kerneltui.cuda.load(defines=...)``."""
    return {"KTRACE": 1} if active() else {}


def _grid(grid: Any) -> tuple[int, int, int]:
    dims = (grid,) if isinstance(grid, int) else tuple(grid)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and d >= 1 for d in dims):
        raise ValueError(f"ktrace.buffer: grid must be 1 to 3 positive ints (the launch grid), got {grid!r}")
    full = (*dims, 1, 1)[:3]
    return int(full[0]), int(full[1]), int(full[2])


def buffer(kernel: str, regions: tuple[str, ...] | list[str], grid: Any, device: Any = None) -> Buffer:
    """The trace buffer for one launch of ``kernel`` over ``grid`` with the named ``regions``
    (region ``i`` is index ``i`` in the kernel's markers)."""
    import torch

    names = tuple(str(r) for r in regions)
    if not names:
        raise ValueError(f"ktrace.buffer({kernel!r}): name at least one region")
    if len(set(names)) != len(names):
        raise ValueError(f"ktrace.buffer({kernel!r}): region names repeat: {', '.join(names)}")
    dims = _grid(grid)
    if device is not None:
        dev = torch.device(device)
    elif torch.cuda.is_available():
        dev = torch.device("cuda", torch.cuda.current_device())
    else:  # compile-only checks without a GPU: the launch is recorded, never run
        dev = torch.device("cpu")
    if _session is None:
        dummy = _dummies.get(dev)
        if dummy is None:
            dummy = _dummies[dev] = torch.zeros(WORDS, dtype=torch.int64, device=dev)
        return Buffer(kernel, names, dims, dummy, False)
    key = (kernel, names, dims, str(dev))
    pool = _session.pool.setdefault(key, [])
    index = _session.cursor.get(key, 0)
    _session.cursor[key] = index + 1
    if index < len(pool):
        buf = pool[index]
    else:
        tensor = torch.zeros(dims[0] * dims[1] * dims[2] * len(names) * WORDS, dtype=torch.int64, device=dev)
        buf = Buffer(kernel, names, dims, tensor, True)
        pool.append(buf)
    _session.used.append(buf)
    return buf


# -- the harness's side (kerneltui.core.worker.child.ops_trace) ----------------------------------------


def start() -> None:
    global _session
    _session = _Session()


def rearm() -> None:
    """Zero every buffer handed out so far and forget which were used: the next call starts clean."""
    if _session is None:
        return
    for pool in _session.pool.values():
        for buf in pool:
            buf.tensor.zero_()
    _session.cursor.clear()
    _session.used = []


def used() -> list[Buffer]:
    """The buffers handed out since the last ``rearm()``, in launch order."""
    return list(_session.used) if _session is not None else []


def stop() -> None:
    global _session
    _session = None
