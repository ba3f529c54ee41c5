"""Kernel signatures read from PTX, and Python arguments packed to match them.

PTX states each parameter's size and whether it is a float (``.param .f32 x``, ``.param .u64 p``,
``.param .align 4 .b8 s[8]`` for a struct). For C++ (mangled) names the Itanium mangling adds
what PTX cannot: which 64-bit parameters are pointers and which integers are signed. Arguments
are checked against that before anything reaches the driver, so a tensor passed where an int is
expected, a float for an int, an int that does not fit, or a missing argument is a Python error
naming the parameter, not a corrupted launch.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any

ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.S)
PARAM = re.compile(
    r"\.param\s+(?:\.align\s+(?P<align>\d+)\s+)?\.(?P<kind>[usbf])(?P<bits>8|16|32|64)"
    r"(?:\s+\.ptr(?:\s+\.\w+)*)?(?:\s+\.align\s+\d+)?\s+(?P<name>[\w$]+)(?:\[(?P<count>\d+)\])?"
)
# Itanium builtin type codes: kind for validation and a C spelling for messages.
BUILTINS = {
    "v": ("void", "void"), "b": ("bool", "bool"), "c": ("int", "char"), "a": ("int", "signed char"),
    "h": ("uint", "unsigned char"), "s": ("int", "short"), "t": ("uint", "unsigned short"), "i": ("int", "int"),
    "j": ("uint", "unsigned int"), "l": ("int", "long"), "m": ("uint", "unsigned long"), "x": ("int", "long long"),
    "y": ("uint", "unsigned long long"), "f": ("float", "float"), "d": ("float", "double"),
    "n": ("int", "__int128"), "o": ("uint", "unsigned __int128"),
}


@dataclass(frozen=True)
class Param:
    index: int
    ptx_kind: str  # "u" | "s" | "b" | "f"
    size: int  # bytes
    align: int
    aggregate: bool  # ``.b8 name[N]``: a struct or a vector type passed by value
    c_kind: str | None = None  # from the mangled name: pointer/int/uint/float/bool/other
    c_type: str | None = None

    def describe(self) -> str:
        if self.c_type:
            return self.c_type
        if self.aggregate:
            return f"{self.size}-byte struct"
        if self.ptx_kind == "f":
            return "float" if self.size == 4 else "double" if self.size == 8 else f"{self.size * 8}-bit float"
        return f"{self.size * 8}-bit integer or pointer" if self.size == 8 else f"{self.size * 8}-bit integer"


@dataclass(frozen=True)
class Signature:
    symbol: str
    name: str  # readable: the function name without namespaces and template arguments
    params: tuple[Param, ...]

    def describe(self) -> str:
        return f"{self.name}({', '.join(p.describe() for p in self.params)})"


def entries(ptx: str) -> dict[str, Signature]:
    out: dict[str, Signature] = {}
    for m in ENTRY.finditer(ptx):
        symbol, body = m.group(1), m.group(2)
        params = []
        for i, p in enumerate(PARAM.finditer(body)):
            bits = int(p.group("bits"))
            count = int(p.group("count") or 1)
            size = bits // 8 * count
            params.append(Param(index=i, ptx_kind=p.group("kind"), size=size,
                                align=int(p.group("align") or bits // 8), aggregate=p.group("count") is not None))
        name, kinds = demangle(symbol)
        if kinds is not None and len(kinds) == len(params):
            params = [Param(p.index, p.ptx_kind, p.size, p.align, p.aggregate, k[0], k[1]) for p, k in zip(params, kinds, strict=True)]
        out[symbol] = Signature(symbol=symbol, name=name, params=tuple(params))
    return out


def demangle(symbol: str) -> tuple[str, list[tuple[str, str]] | None]:
    """Readable name and, for simple signatures, (kind, C type) per parameter.

    Handles what kernels use: plain and nested names (namespaces), template arguments (skipped),
    builtin types, pointers with const/volatile/restrict, and substitutions (``S_``, ``S0_``).
    Anything else leaves the kinds unknown (the PTX sizes still apply)."""
    if not symbol.startswith("_Z"):
        return symbol, None  # extern "C"
    p = _Demangler(symbol)
    try:
        name = p.name()
        kinds = p.params()
    except _GiveUp:
        return (p.last_name or symbol), None
    return name, kinds


class _GiveUp(Exception):
    pass


class _Demangler:
    def __init__(self, symbol: str) -> None:
        self.s = symbol
        self.i = 2
        self.subs: list[tuple[str, str]] = []  # substitution candidates: (kind, C type)
        self.last_name = ""
        # Nested and template names add substitution candidates this parser does not number
        # exactly; with those, a substitution in the parameters gives up rather than guess.
        self.complex_name = False
        self.template = False

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def source_name(self) -> str:
        m = re.match(r"\d+", self.s[self.i:])
        if not m:
            raise _GiveUp
        n = int(m.group())
        self.i += len(m.group())
        name = self.s[self.i:self.i + n]
        self.i += n
        self.last_name = name
        return name

    def name(self) -> str:
        if self.peek() == "N":  # nested: N [qualifiers] (source-name | template-args)* E
            self.complex_name = True
            self.i += 1
            while self.peek() in ("K", "V", "r"):
                self.i += 1
            parts: list[str] = []
            while self.peek() != "E":
                if self.peek() == "I":
                    self.template_args()
                    self.template = True
                elif self.peek().isdigit():
                    parts.append(self.source_name())
                    self.subs.append(("other", "::".join(parts)))
                else:
                    raise _GiveUp
            self.i += 1
            return parts[-1] if parts else self.last_name
        name = self.source_name()
        if self.peek() == "I":
            self.complex_name = self.template = True
            self.template_args()
        return name

    def template_args(self) -> None:
        """Skip ``I … E``: nested template arguments, literals (``Li4E``) and length-prefixed names."""
        depth = 0
        while True:
            c = self.peek()
            if not c:
                raise _GiveUp
            if c.isdigit():
                self.source_name()
                continue
            if c == "L":  # a literal such as Li4E: skip to its E
                end = self.s.find("E", self.i)
                if end < 0:
                    raise _GiveUp
                self.i = end + 1
                continue
            self.i += 1
            if c == "I":
                depth += 1
            elif c == "E":
                depth -= 1
                if depth == 0:
                    break

    def params(self) -> list[tuple[str, str]]:
        if self.template:
            self.type()  # template functions mangle their return type (void for kernels) first
        out = []
        while self.i < len(self.s):
            out.append(self.type())
        if out == [("void", "void")]:
            return []
        return out

    def type(self) -> tuple[str, str]:
        c = self.peek()
        if c in BUILTINS:
            self.i += 1
            return BUILTINS[c]
        if c == "D" and self.s.startswith("DF16_", self.i):
            self.i += 5
            return ("float", "_Float16")
        if c in ("K", "V", "r"):
            quals = []
            while self.peek() in ("K", "V", "r"):
                quals.append({"K": "const", "V": "volatile", "r": "restrict"}[self.peek()])
                self.i += 1
            kind, spelled = self.type()
            result = (kind, f"{' '.join(q for q in quals if q != 'restrict')} {spelled}".strip())
            self.subs.append(result)
            return result
        if c == "P":
            self.i += 1
            _, pointee = self.type()
            result = ("pointer", f"{pointee}*")
            self.subs.append(result)
            return result
        if c == "S":
            if self.complex_name:
                raise _GiveUp
            m = re.match(r"S([0-9A-Z]*)_", self.s[self.i:])
            if not m:
                raise _GiveUp
            self.i += len(m.group())
            index = 0 if not m.group(1) else int(m.group(1), 36) + 1
            if index >= len(self.subs):
                raise _GiveUp
            return self.subs[index]
        if c.isdigit():
            name = self.source_name()
            result = ("other", name)
            self.subs.append(result)
            return result
        raise _GiveUp


# ----------------------------------------------------------------------------------------------
# packing
# ----------------------------------------------------------------------------------------------

_UNSIGNED = {1: ctypes.c_uint8, 2: ctypes.c_uint16, 4: ctypes.c_uint32, 8: ctypes.c_uint64}
_SIGNED = {1: ctypes.c_int8, 2: ctypes.c_int16, 4: ctypes.c_int32, 8: ctypes.c_int64}
_FLOAT = {4: ctypes.c_float, 8: ctypes.c_double}


def is_tensor(value: Any) -> bool:
    return hasattr(value, "data_ptr") and hasattr(value, "device") and callable(value.data_ptr)


def pack(signature: Signature, args: tuple[Any, ...], check_device: bool) -> tuple[list[Any], list[Any]]:
    """ctypes storage for each argument (kept alive by the caller), and the tensors among them."""
    params = signature.params
    if len(args) != len(params):
        raise TypeError(f"{signature.describe()} takes {len(params)} argument{'s' if len(params) != 1 else ''}, "
                        f"got {len(args)}")
    storage: list[Any] = []
    tensors: list[Any] = []
    for param, value in zip(params, args, strict=True):
        storage.append(_pack_one(signature, param, value, tensors, check_device))
    return storage, tensors


def _pack_one(sig: Signature, param: Param, value: Any, tensors: list[Any], check_device: bool) -> Any:
    where = f"{sig.name}: argument {param.index} ({param.describe()})"
    if isinstance(value, (ctypes._SimpleCData, ctypes.Structure, ctypes.Union, ctypes.Array)):
        if ctypes.sizeof(value) != param.size:
            raise TypeError(f"{where} is {param.size} bytes; the ctypes value given is {ctypes.sizeof(value)}")
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) != param.size:
            raise TypeError(f"{where} is {param.size} bytes; got {len(raw)} bytes")
        return (ctypes.c_ubyte * len(raw)).from_buffer_copy(raw)
    if param.aggregate:
        raise TypeError(f"{where} is passed by value: give it as bytes or a ctypes object of {param.size} bytes "
                        f"(got {type(value).__name__})")
    if is_tensor(value):
        if param.size != 8 or param.ptx_kind == "f" or (param.c_kind not in (None, "pointer")):
            raise TypeError(f"{where} got a tensor: tensors are passed as pointers (a T* parameter)")
        if check_device and getattr(value.device, "type", "cuda") != "cuda":
            raise ValueError(f"{where} got a tensor on {value.device}: kernels read device memory; move it with .cuda()")
        tensors.append(value)
        return ctypes.c_uint64(value.data_ptr())
    if value is None:
        if param.size == 8 and param.c_kind in (None, "pointer"):
            return ctypes.c_uint64(0)
        raise TypeError(f"{where} got None (only pointer parameters take None, as a null pointer)")
    if isinstance(value, bool):
        value = int(value)
    if param.c_kind == "pointer" and not isinstance(value, int):
        raise TypeError(f"{where} expects a tensor (or a device address as an int), got {type(value).__name__}")
    if param.ptx_kind == "f":
        if not isinstance(value, (int, float)):
            value = _python_scalar(value, where)
        if param.size not in _FLOAT:
            raise TypeError(f"{where}: pass {param.size * 8}-bit floats as bytes or a ctypes object")
        return _FLOAT[param.size](float(value))
    if not isinstance(value, (int, float)):
        value = _python_scalar(value, where)
    if isinstance(value, float):
        raise TypeError(f"{where} is an integer parameter, got the float {value!r}")
    bits = param.size * 8
    lo = 0 if param.c_kind == "uint" else -(1 << (bits - 1))
    hi = (1 << (bits - 1)) - 1 if param.c_kind == "int" else (1 << bits) - 1
    if not lo <= value <= hi:
        raise OverflowError(f"{where}: {value} does not fit in {bits} bits")
    return (_UNSIGNED if value >= 0 else _SIGNED)[param.size](value)


def _python_scalar(value: Any, where: str) -> Any:
    item = getattr(value, "item", None)
    if callable(item) and not is_tensor(value):
        out = item()
        if isinstance(out, (int, float)):
            return out
    raise TypeError(f"{where} got {type(value).__name__}; pass tensors, Python ints/floats, bytes or ctypes values")
