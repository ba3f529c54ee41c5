"""IKET's decoded trace (``run-iket profile --postprocess json``) read into kerneltui's buffers.

A CuTe DSL kernel marks ranges with ``cute.experimental.iket``::

    from cutlass.cute.experimental import iket

    token = iket.range_start("load")
    ...
    iket.range_end(token)

``run-iket`` runs the program twice (a tracker pass, then the instrumented one, with its CUDA
injection library patching the marks into timestamp stores) and decodes the capture into
``iket_pid_<pid>.trace.json``. The decoder is compiled code and its JSON layout is not documented;
what this reader relies on are the names nvidia-cutlass-dsl 4.8's decoder uses: launches that hold
``ranges`` (``startTs``, ``endTs``, a name or ``rangeNameIdx`` into a table of names, the warps as
``warpLocIdxs``/``locIdx`` into a table of locations with ``smId``, ``ctaId``, ``warpId``) under a
launch with ``kernelName`` and ``gridDimX/Y/Z``. The tables are found by shape, not by key, so that a
renamed table still reads; anything else fails with the keys that were found, and the rung keeps
IKET's own Perfetto trace for the person to open.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kerneltui.core.trace.buffer import TraceBuffer, TraceFormatError
from kerneltui.core.trace.regions import RegionEvent, fold, linear_cta

SOURCE = "iket"


def read_decoded(doc: Any) -> list[TraceBuffer]:
    """One buffer per kernel (its last traced launch) from IKET's decoded JSON."""
    launches = list(_launches(doc))
    if not launches:
        keys = sorted(doc) if isinstance(doc, dict) else type(doc).__name__
        raise TraceFormatError(f"IKET's trace holds no ranges (top-level keys: {keys}): did the kernel call "
                               "iket.range_start/range_end, and was it compiled with IKET on?")
    names = _table(doc, lambda v: isinstance(v, str))
    locations = _table(doc, lambda v: isinstance(v, dict) and ("ctaId" in v or "cta_id" in v))
    last: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for launch, owner in launches:
        kernel = _kernel_name(owner, names)
        last[kernel] = (launch, owner)  # warm-up launches first: the last one is the traced call
    buffers = []
    for kernel, (launch, owner) in last.items():
        grid = _grid(owner)
        events = []
        for rng in launch["ranges"]:
            name = _range_name(rng, names)
            start, end = _int(rng, "startTs", "start_ts"), _int(rng, "endTs", "end_ts")
            for loc in _locations_of(rng, launch, locations):
                cta = _cta(loc, grid)
                events.append(RegionEvent(region=name, cta=cta, smid=_int(loc, "smId", "sm_id"),
                                          warp=_int(loc, "warpId", "warp_id", default=0), start_ns=start, end_ns=end))
        notes = ("times from IKET's decoded trace (per warp or warp group), folded per CTA",)
        buffers.append(fold(events, kernel=kernel, source=SOURCE, grid=grid, notes=notes))
    return buffers


def _launches(doc: Any, owner: dict[str, Any] | None = None) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(holder of ``ranges``, the nearest object naming the kernel) for every traced launch."""
    if isinstance(doc, dict):
        here = doc if ("kernelName" in doc or "kernel_name" in doc) else owner
        ranges = doc.get("ranges")
        if isinstance(ranges, list) and ranges and all(isinstance(r, dict) for r in ranges):
            yield doc, here or doc
        for key, value in doc.items():
            if key != "ranges":
                yield from _launches(value, here)
    elif isinstance(doc, list):
        for item in doc:
            yield from _launches(item, owner)


def _table(doc: Any, accept: Any) -> list[Any]:
    """The largest list anywhere in ``doc`` whose items all pass ``accept``."""
    best: list[Any] = []
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            if node and len(node) > len(best) and all(accept(v) for v in node):
                best = node
            stack.extend(v for v in node if isinstance(v, (dict, list)))
    return best


def _kernel_name(owner: dict[str, Any], names: list[Any]) -> str:
    value = owner.get("kernelName", owner.get("kernel_name"))
    if isinstance(value, int) and 0 <= value < len(names):
        return str(names[value])
    return str(value) if value else "kernel"


def _range_name(rng: dict[str, Any], names: list[Any]) -> str:
    for key in ("rangeName", "range_name", "name"):
        if isinstance(rng.get(key), str):
            return str(rng[key])
    index = rng.get("rangeNameIdx", rng.get("range_name_idx"))
    if isinstance(index, int) and 0 <= index < len(names):
        return str(names[index])
    raise TraceFormatError(f"an IKET range without a name it can be read by (keys: {sorted(rng)})")


def _locations_of(rng: dict[str, Any], launch: dict[str, Any], table: list[Any]) -> list[dict[str, Any]]:
    for key in ("warpLocs", "warp_locs", "locations"):
        if isinstance(rng.get(key), list):
            return [loc for loc in rng[key] if isinstance(loc, dict)]
    indices = rng.get("warpLocIdxs", rng.get("locIdx", rng.get("warp_loc_idxs")))
    if isinstance(indices, int):
        indices = [indices]
    if isinstance(indices, list):
        own = launch.get("locations")
        local: list[Any] = own if isinstance(own, list) else table
        try:
            return [local[i] for i in indices]
        except (IndexError, TypeError) as exc:
            raise TraceFormatError(f"an IKET range names warp location {indices}, not in its table "
                                   f"of {len(local)}") from exc
    raise TraceFormatError(f"an IKET range without warp locations (keys: {sorted(rng)})")


def _grid(owner: dict[str, Any]) -> tuple[int, int, int] | None:
    x, y, z = (owner.get(k) for k in ("gridDimX", "gridDimY", "gridDimZ"))
    if isinstance(x, int) and isinstance(y, int) and isinstance(z, int) and min(x, y, z) > 0:
        return (x, y, z)
    return None


def _cta(loc: dict[str, Any], grid: tuple[int, int, int] | None) -> int:
    value = loc.get("ctaId", loc.get("cta_id"))
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        value = [value.get("x", 0), value.get("y", 0), value.get("z", 0)]
    if isinstance(value, list) and len(value) == 3 and all(isinstance(v, int) for v in value):
        if grid is None:
            if value[1] or value[2]:
                raise TraceFormatError("a 2D/3D CTA index in an IKET trace whose launch gives no grid size")
            return int(value[0])
        return linear_cta(int(value[0]), int(value[1]), int(value[2]), grid)
    raise TraceFormatError(f"an IKET warp location without a CTA index it can read (keys: {sorted(loc)})")


def _int(obj: dict[str, Any], *keys: str, default: int | None = None) -> int:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    if default is not None:
        return default
    raise TraceFormatError(f"an IKET record without {keys[0]} (keys: {sorted(obj)})")
