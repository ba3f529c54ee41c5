"""Instruction mix: what a kernel's code is made of, in the categories kernel work turns on.

Tensor-core ops (HMMA on Ampere, HGMMA/wgmma on Hopper, UTC*MMA/tcgen05 on Blackwell), global
loads and stores with their widths (LDG.E.128 is a 16-byte vector load), asynchronous copies
(LDGSTS = cp.async, UTMALDG = TMA), shared-memory traffic, local memory (spills), barriers and
branches. Counted from the SASS when there is one (the truth), else from the PTX.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TypedDict

from kerneltui.core.asm.ptx import PtxInstruction
from kerneltui.core.asm.sass import SassInstruction

SASS_TENSOR = ("HMMA", "HGMMA", "IMMA", "IGMMA", "QGMMA", "BGMMA", "DMMA", "OMMA", "QMMA",
               "UTCHMMA", "UTCQMMA", "UTCIMMA", "UTCOMMA", "UTCMMA")
SASS_GLOBAL_LOAD = ("LDG",)
SASS_GLOBAL_STORE = ("STG",)
SASS_ASYNC_COPY = ("LDGSTS", "UTMALDG", "UTMASTG", "UTMAPF", "UBLKCP", "UBLKPF", "UBLKRED", "UTMAREDG")
SASS_SHARED = ("LDS", "STS", "LDSM", "STSM", "ATOMS", "LDTM", "STTM")
SASS_LOCAL = ("LDL", "STL")
SASS_BARRIER = ("BAR", "BARRIER", "SYNCS", "MEMBAR", "DEPBAR", "LDGDEPBAR", "WARPGROUP", "WARPSYNC", "ERRBAR", "FENCE")
SASS_BRANCH = ("BRA", "BRX", "JMP", "JMX", "CALL", "RET", "BREAK", "BSSY", "BSYNC")
SASS_ATOMIC = ("ATOM", "ATOMG", "RED", "REDG")
SASS_SPECIAL_MATH = ("MUFU",)

_WIDTHS = {"128": 128, "64": 64, "U8": 8, "S8": 8, "U16": 16, "S16": 16, "32": 32}


class InstructionMixData(TypedDict):
    """``InstructionMix.to_dict()``, as the dump's ``resources.json`` keeps it."""

    source: str
    total: int
    opcodes: dict[str, int]
    tensor: dict[str, int]
    global_loads: dict[str, int]
    global_stores: dict[str, int]
    async_copies: dict[str, int]
    shared: dict[str, int]
    local: dict[str, int]
    barriers: dict[str, int]
    branches: dict[str, int]
    atomics: dict[str, int]
    special_math: int


@dataclass
class InstructionMix:
    source: str  # "sass" or "ptx"
    total: int = 0
    opcodes: dict[str, int] = field(default_factory=dict)  # mnemonic -> count
    tensor: dict[str, int] = field(default_factory=dict)  # full opcode -> count
    global_loads: dict[str, int] = field(default_factory=dict)
    global_stores: dict[str, int] = field(default_factory=dict)
    async_copies: dict[str, int] = field(default_factory=dict)
    shared: dict[str, int] = field(default_factory=dict)
    local: dict[str, int] = field(default_factory=dict)
    barriers: dict[str, int] = field(default_factory=dict)
    branches: dict[str, int] = field(default_factory=dict)
    atomics: dict[str, int] = field(default_factory=dict)
    special_math: int = 0

    def to_dict(self) -> InstructionMixData:
        return {"source": self.source, "total": self.total, "opcodes": dict(self.opcodes), "tensor": dict(self.tensor),
                "global_loads": dict(self.global_loads), "global_stores": dict(self.global_stores),
                "async_copies": dict(self.async_copies), "shared": dict(self.shared), "local": dict(self.local),
                "barriers": dict(self.barriers), "branches": dict(self.branches), "atomics": dict(self.atomics),
                "special_math": self.special_math}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InstructionMix:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    @property
    def tensor_ops(self) -> int:
        return sum(self.tensor.values())

    def tensor_label(self) -> str:
        """``4 HGMMA`` (the family of the commonest tensor op), or '' when there is none."""
        if not self.tensor:
            return ""
        families: Counter[str] = Counter()
        for op, n in self.tensor.items():
            families[_family(op)] += n
        family, _ = families.most_common(1)[0]
        return f"{self.tensor_ops} {family}"

    def widest_global_load(self) -> str:
        """The widest global load form (``LDG.E.128``, ``ld.global.v4.b32``), the commonest among equals."""
        return _widest(self.global_loads, self.source)

    def widest_global_store(self) -> str:
        return _widest(self.global_stores, self.source)

    def load_widths(self) -> dict[int, int]:
        """Bits per access -> count, over global loads (async copies included)."""
        out: Counter[int] = Counter()
        for op, n in {**self.global_loads, **{k: v for k, v in self.async_copies.items() if k.startswith(("LDGSTS", "cp.async"))}}.items():
            out[access_bits(op, self.source)] += n
        return dict(out)


def _family(op: str) -> str:
    if op.startswith("wgmma"):
        return "wgmma"
    if op.startswith("tcgen05"):
        return "tcgen05.mma"
    if op.startswith(("mma", "wmma")):
        return op.split(".")[0]
    return op.split(".")[0]


def _widest(table: dict[str, int], source: str) -> str:
    if not table:
        return ""
    return max(table.items(), key=lambda kv: (access_bits(kv[0], source), kv[1]))[0]


_PTX_VEC = re.compile(r"\.v(\d)")
_PTX_TYPE = re.compile(r"\.[bufs](8|16|32|64|128)\b")


def access_bits(op: str, source: str) -> int:
    """Bits moved per thread by one load/store form."""
    if source == "sass":
        bits = 32
        for mod in op.split(".")[1:]:
            if mod in _WIDTHS:
                bits = _WIDTHS[mod]
        return bits
    vec = _PTX_VEC.search(op)
    typ = _PTX_TYPE.findall(op)
    return (int(vec.group(1)) if vec else 1) * (int(typ[-1]) if typ else 32)


def sass_mix(instructions: list[SassInstruction]) -> InstructionMix:
    mix = InstructionMix(source="sass")
    ops: Counter[str] = Counter()
    for inst in instructions:
        if inst.mnemonic == "NOP":
            continue
        mix.total += 1
        ops[inst.mnemonic] += 1
        name, op = inst.mnemonic, inst.opcode
        for table, family in ((mix.tensor, SASS_TENSOR), (mix.global_loads, SASS_GLOBAL_LOAD),
                              (mix.global_stores, SASS_GLOBAL_STORE), (mix.async_copies, SASS_ASYNC_COPY),
                              (mix.shared, SASS_SHARED), (mix.local, SASS_LOCAL), (mix.barriers, SASS_BARRIER),
                              (mix.branches, SASS_BRANCH), (mix.atomics, SASS_ATOMIC)):
            if name in family:
                table[op] = table.get(op, 0) + 1
                break
        if name in SASS_SPECIAL_MATH:
            mix.special_math += 1
    mix.opcodes = dict(ops.most_common())
    return mix


def ptx_mix(instructions: list[PtxInstruction]) -> InstructionMix:
    mix = InstructionMix(source="ptx")
    ops: Counter[str] = Counter()
    for inst in instructions:
        op = inst.opcode
        head = op.split(".")[0]
        mix.total += 1
        ops[head] += 1
        table: dict[str, int] | None = None
        if op.startswith(("wgmma.mma_async", "mma.", "wmma.mma", "tcgen05.mma")):
            table = mix.tensor
        elif op.startswith(("cp.async", "cp.reduce.async")):
            table = mix.async_copies
        elif op.startswith(("ld.global", "ldu.global")):
            table = mix.global_loads
        elif op.startswith(("st.global",)):
            table = mix.global_stores
        elif op.startswith(("ld.shared", "st.shared", "ldmatrix", "stmatrix", "atom.shared")):
            table = mix.shared
        elif op.startswith(("ld.local", "st.local")):
            table = mix.local
        elif op.startswith(("bar.", "barrier.", "mbarrier.", "fence", "membar", "wgmma.fence", "wgmma.commit",
                            "wgmma.wait")) or op == "bar":
            table = mix.barriers
        elif head in ("bra", "call", "ret", "brx"):
            table = mix.branches
        elif head in ("atom", "red"):
            table = mix.atomics
        if table is not None:
            table[op] = table.get(op, 0) + 1
        if head in ("ex2", "lg2", "rsqrt", "sqrt", "rcp", "sin", "cos", "tanh") and ".approx" in op:
            mix.special_math += 1
    mix.opcodes = dict(ops.most_common())
    return mix
