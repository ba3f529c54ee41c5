"""The contract between a backend's ``collect_artifacts`` (worker side) and the dump (parent side).

A backend returns, per compiled kernel and specialisation, one JSON object::

    {"kernel": "add_kernel",                 # the kernel's name (symbol in the cubin if it differs: metadata.symbol)
     "variant": "n%16 BLOCK=1024 w4 s3",     # short label of this specialisation
     "stages": {"cuda" | "ttir" | "ttgir" | "llir" | "ptx" | "mlir": text,
                "cubin": {"base64": "..."}},
     "metadata": {"num_warps": 4, "num_stages": 3, "shared": 0, "maxnreg": None,
                  "threads_per_block": 128, "arch": "sm_90a", "cases": ["test n=65536"], ...},
     "source_file": "kernel.py"}              # task-relative path of the kernel's source

Every stage is optional (a backend gives what its compiler produced); SASS is made here from the
cubin for every backend. ``metadata.shared`` (or ``dynamic_shared_bytes``) is the dynamic shared
memory of a launch, ``threads_per_block`` (or ``block`` [x, y, z], or ``num_warps``) its block size
(taken from a recorded launch with the same ``symbol`` when missing), ``ptxas`` the path of the
ptxas that built the cubin, ``ptxas_options`` what else it was given, ``file_map`` absolute paths
in the stages -> task-relative names, ``primary`` marks the specialisation the benchmark runs.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

TEXT_STAGES = ("cuda", "ttir", "ttgir", "mlir", "llir", "ptx")  # cuda: C++ a DSL generated (TileLang)
BINARY_STAGES = ("cubin",)
DERIVED_STAGES = ("sass",)
# The order stages are listed and shown in: from the source down to the machine.
STAGE_ORDER = ("cuda", "ttir", "ttgir", "mlir", "llir", "ptx", "sass")
STAGE_SUFFIX = {"cuda": ".cu", "ttir": ".ttir", "ttgir": ".ttgir", "mlir": ".mlir", "llir": ".ll", "ptx": ".ptx", "sass": ".sass",
                "cubin": ".cubin"}


class ArtifactError(ValueError):
    """A backend returned an artifact that does not follow the contract."""


@dataclass
class KernelArtifact:
    kernel: str
    variant: str
    texts: dict[str, str] = field(default_factory=dict)
    cubin: bytes | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    source_file: str | None = None

    @property
    def symbol(self) -> str:
        return str(self.metadata.get("symbol") or self.kernel)

    @classmethod
    def from_json(cls, data: dict[str, Any], backend: str = "backend") -> KernelArtifact:
        if not isinstance(data, dict):
            raise ArtifactError(f"the {backend} dump returned {type(data).__name__}, expected an object per kernel")
        kernel = data.get("kernel")
        if not isinstance(kernel, str) or not kernel:
            raise ArtifactError(f"the {backend} dump returned an artifact without a kernel name")
        stages = data.get("stages") or {}
        if not isinstance(stages, dict):
            raise ArtifactError(f"{kernel}: 'stages' must be an object of stage name to text")
        texts: dict[str, str] = {}
        cubin: bytes | None = None
        for name, value in stages.items():
            if name == "cubin":
                cubin = _decode_cubin(kernel, value)
            elif name in TEXT_STAGES:
                if not isinstance(value, str):
                    raise ArtifactError(f"{kernel}: stage {name} must be text, got {type(value).__name__}")
                texts[name] = value
            elif name == "source":
                continue  # the source is the version's own file
            else:
                raise ArtifactError(f"{kernel}: unknown stage {name!r} (known: {', '.join((*TEXT_STAGES, 'cubin'))})")
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ArtifactError(f"{kernel}: 'metadata' must be an object")
        variant = data.get("variant") or "default"
        source_file = data.get("source_file")
        return cls(kernel=kernel, variant=str(variant), texts=texts, cubin=cubin, metadata=dict(metadata),
                   source_file=str(source_file) if source_file else None)


def _decode_cubin(kernel: str, value: Any) -> bytes:
    if isinstance(value, dict) and isinstance(value.get("base64"), str):
        try:
            return base64.b64decode(value["base64"], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ArtifactError(f"{kernel}: the cubin is not valid base64: {exc}") from exc
    raise ArtifactError(f"{kernel}: stage cubin must be {{'base64': ...}}")


def encode_cubin(data: bytes) -> dict[str, str]:
    return {"base64": base64.b64encode(data).decode("ascii")}
