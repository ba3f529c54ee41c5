"""What a cubin says about its kernels, read straight from the ELF file (no CUDA tool needed).

A cubin is a 64-bit little-endian ELF. Per kernel it has a ``.text.<name>`` section (the code; its
flags carry the number of named barriers), a ``.nv.shared.<name>`` NOBITS section (static shared
memory), ``.nv.constant0.<name>`` (parameters and driver constants) and ``.nv.info.<name>`` plus
the global ``.nv.info`` holding attribute records (EIATTR_*): register count, stack frame size,
parameter sizes, ``__launch_bounds__``. An attribute record is a format byte, an attribute byte
and a 16-bit field that is the payload size for EIFMT_SVAL and the value itself otherwise.
``.nv_debug_ptx_txt`` holds the PTX ptxas was given when it was built with line info.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

ELF_MAGIC = b"\x7fELF"
SHT_SYMTAB = 2
SHT_NOBITS = 8

EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4
EIATTR_MAX_THREADS = 0x05
EIATTR_PARAM_CBANK = 0x0A
EIATTR_REQNTID = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_KPARAM_INFO = 0x17
EIATTR_CBANK_PARAM_SIZE = 0x19
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_CRS_STACK_SIZE = 0x1E
EIATTR_MAX_STACK_SIZE = 0x23
EIATTR_REGCOUNT = 0x2F
EIATTR_CUDA_API_VERSION = 0x37
EIATTR_NUM_BARRIERS = 0x4C  # newer cubins (ELF ABI 8) count barriers here instead of in the section flags

# Bits 20..26 of a .text section's flags count the named barriers it uses (nvdisasm's SHF_BARRIERS).
_BARRIER_SHIFT, _BARRIER_MASK = 20, 0x7F


class CubinError(ValueError):
    """The bytes are not a cubin this reader understands."""


@dataclass
class Section:
    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int

    @property
    def nobits(self) -> bool:
        return self.type == SHT_NOBITS


@dataclass
class KernelResources:
    """Per-kernel facts recorded in the cubin by ptxas."""

    name: str
    registers: int | None = None
    frame_bytes: int = 0  # stack frame per thread: local memory for spills and local arrays
    min_stack_bytes: int = 0
    max_stack_bytes: int | None = None
    static_shared_bytes: int = 0
    constant0_bytes: int = 0
    param_bytes: int | None = None
    barriers: int = 0
    max_threads: list[int] | None = None  # __launch_bounds__ / .maxntid
    required_threads: list[int] | None = None  # .reqntid
    max_registers: int | None = None  # .maxnreg / --maxrregcount
    code_bytes: int = 0

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass
class CubinInfo:
    arch: str  # "sm_90a"
    elf_flags: int
    sections: list[Section] = field(default_factory=list)
    kernels: dict[str, KernelResources] = field(default_factory=dict)
    embedded_ptx: str | None = None  # .nv_debug_ptx_txt when ptxas kept it (line info builds)


def read_cubin(data: bytes) -> CubinInfo:
    if len(data) < 64 or data[:4] != ELF_MAGIC:
        raise CubinError("not an ELF file (a cubin starts with \\x7fELF)")
    if data[4] != 2 or data[5] != 1:
        raise CubinError("only 64-bit little-endian cubins are supported")
    e_flags = struct.unpack_from("<I", data, 0x30)[0]
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shoff == 0 or shoff + shnum * shentsize > len(data):
        raise CubinError("the section table lies outside the file (truncated cubin?)")
    raw = []
    for i in range(shnum):
        name_off, sh_type, flags, _addr, offset, size, link, info = struct.unpack_from(
            "<IIQQQQII", data, shoff + i * shentsize)
        raw.append((name_off, sh_type, flags, offset, size, link, info))
    strtab = raw[shstrndx]
    names = data[strtab[3]:strtab[3] + strtab[4]]
    sections = [Section(i, _cstr(names, r[0]), r[1], r[2], r[3], r[4], r[5], r[6]) for i, r in enumerate(raw)]
    info = CubinInfo(arch=_arch_from_flags(e_flags, data), elf_flags=e_flags, sections=sections)

    symbols = _symbols(data, sections)
    by_name = {s.name: s for s in sections}
    for sec in sections:
        if sec.name.startswith(".text."):
            kname = sec.name[len(".text."):]
            k = KernelResources(name=kname, code_bytes=sec.size)
            k.barriers = (sec.flags >> _BARRIER_SHIFT) & _BARRIER_MASK
            shared = by_name.get(f".nv.shared.{kname}")
            if shared is not None:
                k.static_shared_bytes = shared.size
            const0 = by_name.get(f".nv.constant0.{kname}")
            if const0 is not None:
                k.constant0_bytes = const0.size
            info.kernels[kname] = k
    for sec in sections:
        if sec.name == ".nv.info" or sec.name.startswith(".nv.info."):
            own = sec.name[len(".nv.info."):] if sec.name.startswith(".nv.info.") else None
            for fmt, attr, payload in _attributes(data[sec.offset:sec.offset + sec.size]):
                _apply_attribute(info.kernels, symbols, own, fmt, attr, payload)
    ptx_sec = by_name.get(".nv_debug_ptx_txt")
    if ptx_sec is not None and not ptx_sec.nobits:
        text = data[ptx_sec.offset:ptx_sec.offset + ptx_sec.size].rstrip(b"\x00")
        info.embedded_ptx = text.decode("utf-8", errors="replace")
    return info


# ptxas writes the source file's modification time into the DWARF line table, so two builds of one
# PTX differ there when the source file was touched or is gone; nothing else depends on it.
_VOLATILE_SECTIONS = frozenset({".debug_line", ".rela.debug_line"})


def same_code(a: bytes, b: bytes) -> bool:
    """Whether two cubins hold the same code, resources and metadata (line-table timestamps aside)."""
    if a == b:
        return True
    try:
        ia, ib = read_cubin(a), read_cubin(b)
    except CubinError:
        return False
    if [s.name for s in ia.sections] != [s.name for s in ib.sections]:
        return False
    for sa, sb in zip(ia.sections, ib.sections, strict=True):
        if sa.name in _VOLATILE_SECTIONS:
            continue
        if sa.size != sb.size or (not sa.nobits and a[sa.offset:sa.offset + sa.size] != b[sb.offset:sb.offset + sb.size]):
            return False
    return True


def _cstr(blob: bytes, offset: int) -> str:
    end = blob.find(b"\x00", offset)
    return blob[offset:end if end >= 0 else len(blob)].decode("utf-8", errors="replace")


def _symbols(data: bytes, sections: list[Section]) -> dict[int, str]:
    """Symbol index -> name (EIATTR records name kernels by symbol index)."""
    out: dict[int, str] = {}
    for sec in sections:
        if sec.type != SHT_SYMTAB:
            continue
        strtab = sections[sec.link]
        names = data[strtab.offset:strtab.offset + strtab.size]
        for i in range(sec.size // 24):
            st_name = struct.unpack_from("<I", data, sec.offset + i * 24)[0]
            out[i] = _cstr(names, st_name)
    return out


def _attributes(blob: bytes) -> list[tuple[int, int, bytes]]:
    out = []
    pos = 0
    while pos + 4 <= len(blob):
        fmt, attr, field16 = struct.unpack_from("<BBH", blob, pos)
        pos += 4
        if fmt == EIFMT_SVAL:
            payload = blob[pos:pos + field16]
            pos += field16
        else:
            payload = struct.pack("<H", field16)
        out.append((fmt, attr, payload))
    return out


def _apply_attribute(kernels: dict[str, KernelResources], symbols: dict[int, str], own: str | None,
                     fmt: int, attr: int, payload: bytes) -> None:
    def words() -> list[int]:
        return list(struct.unpack_from(f"<{len(payload) // 4}I", payload)) if len(payload) >= 4 else []

    if attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE, EIATTR_MIN_STACK_SIZE, EIATTR_MAX_STACK_SIZE) and fmt == EIFMT_SVAL:
        w = words()
        if len(w) < 2:
            return
        kernel = kernels.get(symbols.get(w[0], ""))
        if kernel is None:
            return
        if attr == EIATTR_REGCOUNT:
            kernel.registers = w[1]
        elif attr == EIATTR_FRAME_SIZE:
            kernel.frame_bytes = w[1]
        elif attr == EIATTR_MIN_STACK_SIZE:
            kernel.min_stack_bytes = w[1]
        else:
            kernel.max_stack_bytes = w[1]
        return
    kernel = kernels.get(own or "")
    if kernel is None:
        return
    if attr == EIATTR_CBANK_PARAM_SIZE:
        kernel.param_bytes = struct.unpack("<H", payload[:2])[0]
    elif attr == EIATTR_MAX_THREADS and fmt == EIFMT_SVAL:
        kernel.max_threads = words()[:3]
    elif attr == EIATTR_REQNTID and fmt == EIFMT_SVAL:
        kernel.required_threads = words()[:3]
    elif attr == EIATTR_MAXREG_COUNT:
        kernel.max_registers = struct.unpack("<H", payload[:2])[0]
    elif attr == EIATTR_NUM_BARRIERS:
        kernel.barriers = payload[0] if payload else 0


def _arch_from_flags(e_flags: int, data: bytes) -> str:
    """sm_XY[a] from the ELF header.

    Cubins of ELF ABI version 7 (ptxas up to 12.x for sm_90 and older) keep the SM number in bits
    0..7 and EF_CUDA_ACCELERATORS (the 'a' targets) in bit 11; later cubins (ABI 8) keep the SM
    number in bits 8..15 and do not mark the 'a' suffix in the flags, so it is left off there.
    """
    abi_version = data[8]
    if abi_version < 8:
        sm = e_flags & 0xFF
        return f"sm_{sm}" + ("a" if e_flags & 0x800 else "") if sm else "unknown"
    sm = (e_flags >> 8) & 0xFF
    return f"sm_{sm}" if sm else "unknown"
