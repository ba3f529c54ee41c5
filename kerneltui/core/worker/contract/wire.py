"""Values across the judge/candidate boundary: JSON for the structure, shared memory for tensors.

The judge (reference, expected outputs, verdict) and the candidate's worker (the kernel) are two
processes that never share Python objects. What crosses between them is a *wire value*: the
structure as JSON, and each tensor as a descriptor of memory both processes can map:

* on a GPU, a CUDA IPC handle of a torch storage (``UntypedStorage._share_cuda_``), so no tensor
  ever goes through the host;
* on the CPU, a file in the run's exchange folder (``/dev/shm`` where it exists), mapped shared
  by both sides with ``torch.from_file``.

A descriptor keeps the exact layout (dtype, shape, stride, storage offset), so a candidate sees
the strides the reference's ``generate_input`` made. Descriptors coming from the other side are
validated before anything is mapped: the judge treats what the candidate sends as untrusted data
(names are plain file names inside the exchange folder, every view lies inside its storage, dtypes
come from a fixed list). Nothing is ever unpickled.

Structure: tensors ``{"$tensor": {...}}``, tuples ``{"$tuple": [...]}``, dicts ``{"$dict": [[k, v],
…]}`` (keys encoded too), dtypes ``{"$dtype": "float16"}``, devices ``{"$device": "cuda:0"}``, lists,
numbers, strings, booleans and None as themselves.
"""

from __future__ import annotations

import base64
import itertools
import math
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict

MAX_STORAGE_BYTES = 1 << 40
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,120}$")
DTYPES = (
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
)


class TensorDescriptor(TypedDict):
    """A tensor's memory as the other side maps it (``{"$tensor": …}`` in a wire value)."""

    dtype: str  # one of DTYPES
    shape: list[int]
    stride: list[int]
    offset: int  # the view's storage offset, in elements
    nbytes: int  # the storage's size
    device: str  # "cuda" or "cpu"
    copied: NotRequired[bool]  # CUDA: mapped from a third process, so copied before it was shared
    ipc: NotRequired[list[int | str | bool]]  # CUDA: ``_share_cuda_``'s handle, its bytes in base64
    file: NotRequired[str]  # CPU: the file's name in the exchange folder


class WireError(ValueError):
    """A value that cannot cross the boundary, or a descriptor that does not describe valid memory."""

    harness_message = True


def exchange_root(create: bool = False) -> Path:
    """Where every run's exchange folder lives: in RAM (``/dev/shm``) where the system has it, one
    folder per user. Workers are started before their run exists, so their sandbox is given this
    root as writable by name (never listable), and each run makes its own folder inside it, named by
    ``new_run_folder``."""
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else Path(
        os.environ.get("TMPDIR") or "/tmp")
    root = base / f"kerneltui-exchange-{os.getuid()}"
    if create:
        root.mkdir(mode=0o700, exist_ok=True)
    return root


def new_run_folder() -> Path:
    """A name for one run's CPU exchange folder that no other worker can guess: boxed workers may
    open files beneath the exchange root by name but not list it (``sandbox.filesystem``), so another
    run's folder, the kernel's inputs and outputs of another task, stays out of reach."""
    return exchange_root() / secrets.token_hex(16)


@dataclass
class Exchange:
    """One process's side of the exchange: exports it made (kept alive until released) and imports
    it mapped, grouped in *lots* (one lot per message, released together)."""

    torch: Any
    folder: Path | None  # CPU exchange folder (made by the parent); None where only CUDA IPC is used
    prefix: str  # file-name prefix of this side ("j" judge, "c" candidate), so names never collide
    _lots: dict[str, list[Any]] = field(default_factory=dict)
    _files: dict[str, list[Path]] = field(default_factory=dict)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    # -- export ---------------------------------------------------------------------------------

    def export(self, value: Any, lot: str, *, share_storage: bool = False) -> Any:
        """The wire form of ``value``. Tensors are copied into fresh shared memory, except that with
        ``share_storage`` a CUDA tensor's own storage is shared (zero copy) where CUDA allows it."""
        return self._encode(value, lot, share_storage)[0]

    def export_with_view(self, value: Any, lot: str) -> tuple[Any, Any]:
        """The wire form of a copy of ``value`` in shared memory, and that copy as this process sees
        it (the judge watches the candidate's copy of the inputs through it)."""
        return self._encode(value, lot, False)

    def _encode(self, value: Any, lot: str, share: bool) -> tuple[Any, Any]:
        torch = self.torch
        if isinstance(value, torch.Tensor):
            desc, view = self._export_tensor(value, lot, share)
            return {"$tensor": desc}, view
        if isinstance(value, torch.dtype):
            return {"$dtype": str(value).replace("torch.", "")}, value
        if isinstance(value, torch.device):
            return {"$device": str(value)}, value
        if isinstance(value, bool) or value is None or isinstance(value, (int, str, float)):
            return value, value
        if isinstance(value, torch.Size):
            return {"$tuple": [int(x) for x in value]}, value
        if isinstance(value, (tuple, list)):
            pairs = [self._encode(x, lot, share) for x in value]
            wires, views = [w for w, _ in pairs], [v for _, v in pairs]
            if isinstance(value, tuple):
                return {"$tuple": wires}, tuple(views)
            return wires, views
        if isinstance(value, dict):
            items = [(self._encode(k, lot, share), self._encode(v, lot, share)) for k, v in value.items()]
            return {"$dict": [[k[0], v[0]] for k, v in items]}, {k[1]: v[1] for k, v in items}
        if hasattr(value, "item") and callable(value.item) and type(value).__module__ == "numpy":
            return value.item(), value
        raise WireError(
            f"a {type(value).__module__}.{type(value).__qualname__} cannot be passed between the reference and the "
            "kernel: inputs and outputs must be tensors, numbers, strings, dtypes and tuples, lists or dicts of them"
        )

    def _export_tensor(self, t: Any, lot: str, share: bool) -> tuple[TensorDescriptor, Any]:
        torch = self.torch
        t = t.detach()
        storage = t.untyped_storage()
        desc: TensorDescriptor = {
            "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "stride": list(t.stride()),
            "offset": int(t.storage_offset()), "nbytes": int(storage.nbytes()), "device": t.device.type,
        }
        if t.device.type == "cuda":
            own = storage
            if not share:
                own = self._cuda_copy(storage, t.device)
            try:
                handle = own._share_cuda_()
            except RuntimeError:
                # Memory this process mapped from another one cannot be shared again: copy it.
                own = self._cuda_copy(storage, t.device)
                handle = own._share_cuda_()
                desc["copied"] = True
            self._lots.setdefault(lot, []).append(own)
            desc["ipc"] = [int(handle[0]), _b64(handle[1]), int(handle[2]), int(handle[3]), _b64(handle[4]),
                           int(handle[5]), _b64(handle[6]), bool(handle[7])]
            view = torch.empty(0, dtype=t.dtype, device=t.device).set_(own, t.storage_offset(), t.shape, t.stride())
            return desc, view
        if t.device.type != "cpu":
            raise WireError(f"tensors on {t.device} cannot be passed between the reference and the kernel")
        if self.folder is None:
            raise WireError("no exchange folder for CPU tensors in this run")
        name = f"{self.prefix}{next(self._ids)}-{lot}"
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # on a remote host it is not there yet
        path = self.folder / name
        nbytes = max(int(storage.nbytes()), 1)
        mapped = torch.from_file(str(path), shared=True, size=nbytes, dtype=torch.uint8)
        if storage.nbytes():
            mapped.untyped_storage().copy_(storage)
        self._lots.setdefault(lot, []).append(mapped)
        self._files.setdefault(lot, []).append(path)
        desc["file"] = name
        view = torch.empty(0, dtype=t.dtype).set_(mapped.untyped_storage(), t.storage_offset(), t.shape, t.stride())
        return desc, view

    def _cuda_copy(self, storage: Any, device: Any) -> Any:
        own = self.torch.empty(max(storage.nbytes(), 1), dtype=self.torch.uint8, device=device).untyped_storage()
        if storage.nbytes():
            own.copy_(storage)
        return own

    # -- import ---------------------------------------------------------------------------------

    def load(self, wire: Any, lot: str) -> Any:
        """The value a wire form describes; its tensors map the other side's memory (kept in ``lot``)."""
        return self._decode(wire, lot)

    def _decode(self, wire: Any, lot: str) -> Any:
        torch = self.torch
        if isinstance(wire, dict):
            if "$tensor" in wire:
                return self._import_tensor(wire["$tensor"], lot)
            if "$tuple" in wire:
                return tuple(self._decode(x, lot) for x in _list(wire["$tuple"]))
            if "$dict" in wire:
                return {self._decode(k, lot): self._decode(v, lot) for k, v in (_pair(p) for p in _list(wire["$dict"]))}
            if "$dtype" in wire:
                return _dtype(torch, wire["$dtype"])
            if "$device" in wire:
                return torch.device(str(wire["$device"]))
            raise WireError(f"unknown wire value with keys {sorted(wire)[:4]}")
        if isinstance(wire, list):
            return [self._decode(x, lot) for x in wire]
        if wire is None or isinstance(wire, (bool, int, float, str)):
            return wire
        raise WireError(f"unknown wire value {type(wire).__name__}")

    def _import_tensor(self, desc: Any, lot: str) -> Any:
        torch = self.torch
        if not isinstance(desc, dict):
            raise WireError("a tensor descriptor must be an object")
        dtype = _dtype(torch, desc.get("dtype"))
        shape = _ints(desc.get("shape"), "shape", minimum=0)
        stride = _ints(desc.get("stride"), "stride", minimum=0)
        offset = _int(desc.get("offset"), "offset", minimum=0)
        nbytes = _int(desc.get("nbytes"), "nbytes", minimum=0)
        if len(shape) != len(stride):
            raise WireError("a tensor descriptor's shape and stride differ in length")
        if nbytes > MAX_STORAGE_BYTES:
            raise WireError(f"a tensor descriptor claims {nbytes} bytes")
        itemsize = torch.empty((), dtype=dtype).element_size()
        if math.prod(shape) > 0:
            last = offset + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
            if (last + 1) * itemsize > nbytes:
                raise WireError("a tensor descriptor's view reaches past the end of its memory")
        device = desc.get("device")
        if device == "cuda":
            h = desc.get("ipc")
            if not isinstance(h, list) or len(h) != 8:
                raise WireError("a CUDA tensor descriptor without a valid IPC handle")
            storage = torch.UntypedStorage._new_shared_cuda(
                _int(h[0], "device", minimum=0), _unb64(h[1]), _int(h[2], "size", minimum=0),
                _int(h[3], "offset", minimum=0), _unb64(h[4]), _int(h[5], "counter offset", minimum=0), _unb64(h[6]),
                bool(h[7]))
            if storage.nbytes() < nbytes:
                raise WireError("a CUDA tensor descriptor claims more memory than its handle maps")
            t = torch.empty(0, dtype=dtype, device="cuda").set_(storage, offset, shape, stride)
        elif device == "cpu":
            name = desc.get("file")
            if not isinstance(name, str) or not _NAME.match(name) or self.folder is None:
                raise WireError("a CPU tensor descriptor must name a file of the run's exchange folder")
            path = self.folder / name
            try:
                size = path.stat().st_size
            except OSError as exc:
                raise WireError(f"the exchange file {name} is missing: {exc.strerror}") from exc
            if size < max(nbytes, 1):
                raise WireError(f"the exchange file {name} holds {size} bytes, less than its descriptor claims")
            mapped = torch.from_file(str(path), shared=True, size=max(nbytes, 1), dtype=torch.uint8)
            t = torch.empty(0, dtype=dtype).set_(mapped.untyped_storage(), offset, shape, stride)
        else:
            raise WireError(f"tensors on {device!r} cannot be received")
        self._lots.setdefault(lot, []).append(t)
        return t

    # -- lifetime -------------------------------------------------------------------------------

    def release(self, lots: list[str] | None = None) -> None:
        """Drop the exports and imports of ``lots`` (all when None); remove this side's files."""
        names = list(self._lots) if lots is None else [str(x) for x in lots]
        cuda = any(getattr(x, "is_cuda", False) or getattr(x, "device", None) is not None and
                   getattr(x.device, "type", "") == "cuda" for lot in names for x in self._lots.get(lot, []))
        for lot in names:
            self._lots.pop(lot, None)
            for path in self._files.pop(lot, []):
                try:
                    path.unlink()
                except OSError:
                    pass
        if lots is None:
            for lot in list(self._files):
                for path in self._files.pop(lot):
                    try:
                        path.unlink()
                    except OSError:
                        pass
        if cuda:
            # Shared CUDA blocks wait in torch's limbo until the other side lets go of them.
            self.torch.cuda.ipc_collect()

    def lots(self) -> list[str]:
        return list(self._lots)


def _b64(data: Any) -> str:
    return base64.b64encode(bytes(data or b"")).decode("ascii")


def _unb64(text: Any) -> bytes:
    if not isinstance(text, str):
        raise WireError("an IPC handle part must be base64 text")
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as exc:
        raise WireError("an IPC handle part is not base64") from exc


def _dtype(torch: Any, name: Any) -> Any:
    if not isinstance(name, str) or name not in DTYPES or not hasattr(torch, name):
        raise WireError(f"unknown dtype {name!r}")
    return getattr(torch, name)


def _int(value: Any, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise WireError(f"a tensor descriptor's {what} must be an integer ≥ {minimum}")
    return value


def _ints(value: Any, what: str, minimum: int) -> list[int]:
    if not isinstance(value, list) or len(value) > 64:
        raise WireError(f"a tensor descriptor's {what} must be a list of integers")
    return [_int(v, what, minimum) for v in value]


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise WireError("a wire container must hold a list")
    return value


def _pair(value: Any) -> tuple[Any, Any]:
    if not isinstance(value, list) or len(value) != 2:
        raise WireError("a wire dict entry must be a [key, value] pair")
    return value[0], value[1]
