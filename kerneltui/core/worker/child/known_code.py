"""The code a worker had loaded before any candidate code: every function's code object in every
module imported by the end of its warm-up.

The operator record asks, for torch work run from inside a kernel launch, who asked for it: the
backend's own library (the Triton interpreter moving data, an autotuner timing configs) or the
candidate (a grid function, a hook). A frame's file name cannot answer that: the candidate's code can
claim any file (``compile(source, "/usr/lib/python3.11/functools.py", "exec")``). Its code object
can: code made after the candidate's code arrived is in neither set below, whatever it claims.

``transparent``: torch, Python's standard library and the record itself, which only pass a call on
(the record looks through them to the frame that asked); ``library``: everything else that was
loaded (the backend's DSL, kerneltui), which asks on its own behalf.
"""

from __future__ import annotations

import functools
import sys
import sysconfig
import types
import warnings
from dataclasses import dataclass
from typing import Any

# The code objects found walking each module, by module name with the module's id (an object one
# module shares with another is walked once, from the first: the union over modules is what counts).
# Code objects go by identity: hashing one hashes its bytecode and constants (~0.1-0.5 us a look, on
# every frame of every operator run inside a launch), and identity is also the stricter question.
# The objects themselves are held here, so that no id can pass to code made later.
_PER_MODULE: dict[str, tuple[int, tuple[types.CodeType, ...]]] = {}
_RECORD_MODULE = "kerneltui.core.worker.child.evidence"


@dataclass(frozen=True)
class KnownCode:
    # Layers (what a zygote knew, what its worker added): membership in any layer counts, and a
    # worker adds a small layer instead of copying the zygote's sets.
    transparent_layers: tuple[frozenset[int], ...]  # ids of code objects held in _PER_MODULE
    library_layers: tuple[frozenset[int], ...]

    # Asked for every frame of every operator run inside a launch: plain loops (a generator costs
    # more than the looks).
    def looked_through(self, code: types.CodeType) -> bool:
        key = id(code)
        for layer in self.transparent_layers:
            if key in layer:
                return True
        return False

    def library(self, code: types.CodeType) -> bool:
        key = id(code)
        for layer in self.library_layers:
            if key in layer:
                return True
        return False


# The last answer and the modules it covered (name, id): a forked worker adds only the modules it
# imported since its zygote answered.
_LAST: tuple[frozenset[tuple[str, int]], KnownCode] | None = None


def known_code(torch_dir: str) -> KnownCode:
    """Every module loaded now, split as the module docstring says: by each code object's own file
    (a torch function imported into the backend's module is still torch's; the file names of code
    loaded before any candidate code are what they say)."""
    global _LAST
    paths = sysconfig.get_paths()
    stdlib = tuple(p for p in {paths.get("stdlib", ""), paths.get("platstdlib", "")} if p)
    record_file = str(getattr(sys.modules.get(_RECORD_MODULE), "__file__", "") or "")
    loaded = {(name, id(module)): module for name, module in list(sys.modules.items()) if module is not None}
    covered, before = _LAST if _LAST is not None and _LAST[0] <= loaded.keys() else (frozenset(), None)
    transparent: set[int] = set()
    library: set[int] = set()
    for (name, _), module in loaded.items():
        if (name, id(module)) in covered:
            continue
        for code in module_code(name, module):
            (transparent if _looked_through(code.co_filename, torch_dir, stdlib, record_file) else library).add(id(code))
    known = KnownCode((frozenset(transparent),), (frozenset(library),)) if before is None else KnownCode(
        (*before.transparent_layers, frozenset(transparent)), (*before.library_layers, frozenset(library)))
    _LAST = (frozenset(loaded), known)
    return known


def _looked_through(file: str, torch_dir: str, stdlib: tuple[str, ...], record_file: str) -> bool:
    if file == record_file or file.startswith(torch_dir):
        return True
    # A Python installed without a virtual environment keeps its site-packages inside the standard
    # library's folder: what is installed there (the backend's DSL) asks on its own behalf.
    return file.startswith(stdlib) and "site-packages" not in file and "dist-packages" not in file


def module_code(name: str, module: Any) -> tuple[types.CodeType, ...]:
    cached = _PER_MODULE.get(name)
    if cached is not None and cached[0] == id(module):
        return cached[1]
    found: dict[int, types.CodeType] = {}
    with warnings.catch_warnings():  # a module's deprecated attributes warn when read
        warnings.simplefilter("ignore")
        try:
            values = list(vars(module).values())
        except TypeError:
            values = []
        for value in values:
            try:
                _add(value, found, 0)
            except Exception:  # an object whose type check misbehaves (a lazy proxy): not a function
                continue
    codes = tuple(found.values())
    _PER_MODULE[name] = (id(module), codes)
    return codes


# Functions and classes already walked (held, so that their ids stay theirs): one class is imported
# into hundreds of modules (torch.Tensor), and walking it once is enough for the union.
_WALKED: dict[int, Any] = {}

# Values that hold no Python code, by exact type: most of what modules and classes hold (constants,
# submodules, C functions and descriptors). Skipped before any further look, which is most of the
# walk's time (a zygote walks ~2,000 modules before its first fork).
_NO_CODE = frozenset({
    int, float, complex, str, bytes, bool, type(None), tuple, list, dict, set, frozenset, types.ModuleType,
    types.BuiltinFunctionType, types.WrapperDescriptorType, types.MethodDescriptorType,
    types.GetSetDescriptorType, types.MemberDescriptorType, types.ClassMethodDescriptorType,
    types.MethodWrapperType,
})


def _add(obj: Any, found: dict[int, types.CodeType], depth: int) -> None:
    if type(obj) in _NO_CODE:
        return
    if isinstance(obj, types.FunctionType) or (isinstance(obj, type) and depth < 2):
        if id(obj) in _WALKED:
            return
        _WALKED[id(obj)] = obj
    if isinstance(obj, types.FunctionType):
        code = obj.__code__
        if id(code) not in found:
            found[id(code)] = code
            # Nested functions, lambdas and comprehensions: constants of the code that makes them.
            stack = [c for c in code.co_consts if type(c) is types.CodeType]
            while stack:
                code = stack.pop()
                if id(code) not in found:
                    found[id(code)] = code
                    stack.extend([c for c in code.co_consts if type(c) is types.CodeType])
        # A decorated function (functools.wraps: @contextmanager, @lru_cache's Python fallback …)
        # keeps the function it wraps here; that one's frames are the ones that run.
        wrapped = obj.__dict__.get("__wrapped__") if obj.__dict__ else None
        if wrapped is not None and wrapped is not obj and depth < 4:
            _add(wrapped, found, depth + 1)
    elif isinstance(obj, functools.partial):
        _add(obj.func, found, depth)
    elif isinstance(obj, (staticmethod, classmethod)):
        _add(obj.__func__, found, depth)
    elif isinstance(obj, property):
        for f in (obj.fget, obj.fset, obj.fdel):
            if f is not None:
                _add(f, found, depth)
    elif isinstance(obj, type) and depth < 2:
        try:
            members = list(vars(obj).values())
        except TypeError:
            return
        for member in members:
            _add(member, found, depth + 1)
