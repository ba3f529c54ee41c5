"""Walking inputs and outputs: nested tuples, lists and dicts with tensors inside (both sides).

The judge names, clones and compares them; the candidate's worker finds the tensors of what it was
given and what it returned, and keeps what it returned (``contents``) to see it change later.
Names are paths such as ``out[1]`` or ``input[0]['w']``.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


def flatten(value: Any, prefix: str, torch: Any) -> list[tuple[str, Any]]:
    """(name, leaf) for every leaf of ``value``, tensors and other values, depth first."""
    if value is None:
        return []
    if isinstance(value, torch.Tensor):
        return [(prefix, value)]
    if isinstance(value, (tuple, list)):
        items: list[tuple[str, Any]] = []
        for i, v in enumerate(value):
            items.extend(flatten(v, f"{prefix}[{i}]", torch))
        return items
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            items.extend(flatten(v, f"{prefix}[{k!r}]", torch))
        return items
    return [(prefix, value)]


def tensors(value: Any, prefix: str, torch: Any) -> Iterator[tuple[str, Any]]:
    """(name, tensor) for every tensor inside ``value``, depth first."""
    for name, leaf in flatten(value, prefix, torch):
        if isinstance(leaf, torch.Tensor):
            yield name, leaf


def rebuild(value: Any, replacement: dict[str, Any], prefix: str, torch: Any) -> Any:
    """``value`` with the tensors named in ``replacement`` swapped in."""
    if isinstance(value, torch.Tensor):
        return replacement.get(prefix, value)
    if isinstance(value, tuple):
        return tuple(rebuild(v, replacement, f"{prefix}[{i}]", torch) for i, v in enumerate(value))
    if isinstance(value, list):
        return [rebuild(v, replacement, f"{prefix}[{i}]", torch) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: rebuild(v, replacement, f"{prefix}[{k!r}]", torch) for k, v in value.items()}
    return value


def clone(value: Any, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, tuple):
        return tuple(clone(x, torch) for x in value)
    if isinstance(value, list):
        return [clone(x, torch) for x in value]
    if isinstance(value, dict):
        return {k: clone(v, torch) for k, v in value.items()}
    return copy.deepcopy(value)


def upcast(value: Any, torch: Any) -> Any:
    """Floating-point tensors in float64 (new memory), everything else cloned."""
    if isinstance(value, torch.Tensor):
        return value.to(torch.float64) if value.is_floating_point() else value.clone()
    if isinstance(value, tuple):
        return tuple(upcast(x, torch) for x in value)
    if isinstance(value, list):
        return [upcast(x, torch) for x in value]
    if isinstance(value, dict):
        return {k: upcast(v, torch) for k, v in value.items()}
    return value


def to_device(value: Any, device: str, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value if value.device.type == device else value.to(device)
    if isinstance(value, tuple):
        return tuple(to_device(x, device, torch) for x in value)
    if isinstance(value, list):
        return [to_device(x, device, torch) for x in value]
    if isinstance(value, dict):
        return {k: to_device(v, device, torch) for k, v in value.items()}
    return value


def describe_structure(value: Any, torch: Any) -> str:
    if isinstance(value, torch.Tensor):
        return "a tensor"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


def tensor_digest(t: Any) -> str:
    """Contents, shape and dtype of one tensor as a short hash (its bytes, on the host)."""
    import torch

    x = t.detach()
    if not x.is_contiguous():
        x = x.contiguous()
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    raw = x.reshape(-1).view(torch.uint8) if x.numel() else x.reshape(-1)
    h = hashlib.blake2b(raw.cpu().numpy().tobytes(), digest_size=16)
    h.update(str((tuple(t.shape), str(t.dtype))).encode())
    return h.hexdigest()


@dataclass(frozen=True)
class Contents:
    """What a value held at one moment, to ask later whether it still holds it: per leaf, a copy of
    each tensor where its device has room for one (compared byte for byte where it lies: no copy to
    the host), else the tensor's digest on the host; the repr of any other leaf."""

    leaves: tuple[tuple[str, str, Any], ...]  # (name, "copy" | "digest" | "value", what was kept)

    def same(self, value: Any, torch: Any) -> bool:
        now = flatten(value, "out", torch)
        if [n for n, _ in now] != [n for n, _, _ in self.leaves]:
            return False
        for (_, leaf), (_, kind, kept) in zip(now, self.leaves, strict=True):
            if kind == "copy":
                if not (isinstance(leaf, torch.Tensor) and same_bits(leaf, kept, torch)):
                    return False
            elif kind == "digest":
                if not (isinstance(leaf, torch.Tensor) and tensor_digest(leaf) == kept):
                    return False
            elif isinstance(leaf, torch.Tensor) or repr(leaf) != kept:
                return False
        return True


def contents(value: Any, torch: Any) -> Contents:
    """``value``'s contents now (``Contents``). Copies where they take at most a quarter of their
    device's free memory (they are held until the next call is checked, while it runs: a kernel that
    needs most of the device must not lose it to them); hashed on the host otherwise."""
    leaves = flatten(value, "out", torch)
    need: dict[Any, int] = {}
    for _, leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            need[leaf.device] = need.get(leaf.device, 0) + leaf.numel() * leaf.element_size()
    room = {device: 4 * size <= _free_bytes(device, torch) for device, size in need.items()}
    kept: list[tuple[str, str, Any]] = []
    for name, leaf in leaves:
        if not isinstance(leaf, torch.Tensor):
            kept.append((name, "value", repr(leaf)))
        elif room[leaf.device]:
            kept.append((name, "copy", leaf.detach().clone()))
        else:
            kept.append((name, "digest", tensor_digest(leaf)))
    return Contents(tuple(kept))


def _free_bytes(device: Any, torch: Any) -> int:
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    if device.type == "cpu":
        try:
            with open("/proc/meminfo") as meminfo:
                for line in meminfo:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
    return 0  # unknown: hashed on the host, as before copies


def bitwise_equal(a: Any, b: Any, torch: Any) -> bool:
    pa, pb = flatten(a, "out", torch), flatten(b, "out", torch)
    if [n for n, _ in pa] != [n for n, _ in pb]:
        return False
    for (_, x), (_, y) in zip(pa, pb, strict=True):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            if not same_bits(x, y, torch):
                return False
        elif x != y:
            return False
    return True


def same_bits(x: Any, y: Any, torch: Any) -> bool:
    """Whether two tensors hold the same bytes (NaNs with the same bits are equal), compared where
    they are: on a GPU without a copy to the host."""
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if not x.numel():
        return True
    if x.device != y.device:
        y = y.to(x.device)
    return bool(torch.equal(x.detach().contiguous().reshape(-1).view(torch.uint8),
                            y.detach().contiguous().reshape(-1).view(torch.uint8)))


def overlaps(a: Any, b: Any) -> bool:
    """Whether two tensors' storages share any memory."""
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    pa, pb = sa.data_ptr(), sb.data_ptr()
    return pa < pb + sb.nbytes() and pb < pa + sa.nbytes()


def nbytes(value: Any, torch: Any) -> int:
    return sum(t.numel() * t.element_size() for _, t in tensors(value, "x", torch))
