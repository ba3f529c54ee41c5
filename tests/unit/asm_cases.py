"""The recorded compiler and disassembler output in tests/data/asm (see generate.py there)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kerneltui.core.asm.artifact import KernelArtifact

ASM_DATA = Path(__file__).resolve().parent.parent / "data" / "asm"
# Where generate.py put the sources before compiling: the paths inside the recorded output.
TASK_ROOT = "/tmp/kerneltui-asm-data/task"
TRITON_CASES = sorted(p.name for p in ASM_DATA.iterdir() if p.name.startswith("triton_"))
CUDA_CASES = sorted(p.name for p in ASM_DATA.iterdir() if p.name.startswith("cuda_"))
ALL_CASES = TRITON_CASES + CUDA_CASES


def case_dir(name: str) -> Path:
    return ASM_DATA / name


def read(name: str, file: str) -> str:
    return (ASM_DATA / name / file).read_text(encoding="utf-8")


def cubin(name: str) -> bytes:
    return (ASM_DATA / name / "kernel.cubin").read_bytes()


def meta(name: str) -> dict[str, Any]:
    return json.loads(read(name, "case.json"))


def res_usage(name: str) -> dict[str, dict[str, int]]:
    """cuobjdump -res-usage: per function, REG/STACK/SHARED/LOCAL/CONSTANT[0]."""
    out: dict[str, dict[str, int]] = {}
    current = None
    for line in read(name, "res_usage.txt").splitlines():
        line = line.strip()
        if line.startswith("Function "):
            current = line[len("Function "):].rstrip(":")
        elif current and line.startswith("REG:"):
            out[current] = {k: int(v) for k, v in (item.split(":") for item in line.split())}
    return out


def artifact(name: str, kernel: str | None = None, variant: str | None = None, **metadata: Any) -> KernelArtifact:
    """A backend's artifact for a recorded case, as the worker would hand it over."""
    folder = ASM_DATA / name
    texts = {}
    for stage, suffix in (("ttir", ".ttir"), ("ttgir", ".ttgir"), ("llir", ".ll"), ("ptx", ".ptx")):
        path = folder / f"kernel{suffix}"
        if path.exists():
            texts[stage] = path.read_text(encoding="utf-8")
    info = meta(name)
    md = dict(info.get("metadata") or {})
    if md.get("num_warps"):
        md["threads_per_block"] = md["num_warps"] * 32
    md.update(metadata)
    source = Path(info["source"]).name
    return KernelArtifact(kernel=kernel or info.get("kernel") or name, variant=variant or info.get("variant") or name,
                          texts=texts, cubin=cubin(name), metadata=md, source_file=source)
