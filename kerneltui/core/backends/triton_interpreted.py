"""Under the Triton interpreter, a ``@triton.jit`` body may use only Triton's language.

On a GPU a jit body is compiled: it can call ``triton.language`` and other jit functions, read
``constexpr`` values and a few builtins (``range``, ``min``, ``float("inf")`` …), and nothing else
reaches the device. Without a GPU, kerneltui runs Triton kernels under the interpreter
(``TRITON_INTERPRET=1``), which executes the body *as Python*: its pointers are numpy arrays of
addresses (``x_ptr.handle.data``), and a body that calls numpy, torch or its own helpers through them
computes on the host, while the operator record files the result as the kernel's own.

So every jit function is checked before the interpreter runs it, on the very source the interpreter
compiles (``FunctionRewriter._transform_ast`` receives it): each name it loads is a local, a builtin
of the list below, or a global that resolves to Triton's language (``triton.language`` and Proton's
intra-kernel ``triton.profiler.language``, their modules, the functions and classes they define, a
dtype), another jit function, or a plain value (a ``constexpr``, a number, a string); attributes of a
local (a tensor, a dtype) are public names of Triton's own tensor and type classes; nested
functions, lambdas, classes and imports are refused. A jit function whose source cannot be read is
refused too (the interpreter would run it as it is). The check names the function, the file and
line, and what it used.

Names resolve as the interpreter resolves them: it runs the rewritten body at the top level of the
jit function's own module globals, after copying its own module's globals (``np``, ``math`` …) there
where missing, then the builtins (a closure's cells are not seen). A name that resolves to nothing
is an honest error, not a reach outside: it is left to the interpreter, which raises ``NameError`` at
its line. Since the kernel's own code can bind a name after its body was checked (a global defined,
or rebound, after the first launch), each launch checks again when a name the body reads resolves to
another object than it did.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import os
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

# What a jit body may call or read among Python's builtins (what Triton's code generator accepts).
BUILTINS = frozenset({
    "range", "min", "max", "len", "int", "float", "bool", "abs", "print", "isinstance", "tuple", "list", "zip",
    "enumerate", "True", "False", "None", "AssertionError", "ValueError", "RuntimeError", "TypeError",
})
INTERNALS = frozenset({"handle", "data", "ctypes", "base", "fn"})
# Triton's language: the modules (and their submodules) whose functions and classes a body may use.
LANGUAGE_MODULES = ("triton.language", "triton.profiler.language")
REFUSED_NODES = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
                 ast.Global, ast.Nonlocal, ast.Await, ast.Yield, ast.YieldFrom, ast.AsyncWith, ast.AsyncFor)


class JitBodyOutsideTriton(Exception):
    """A jit body that reaches outside Triton's language (the interpreter would run it as Python)."""

    harness_message = True


@dataclass(frozen=True)
class Finding:
    line: int  # within the checked source (1 = the def line)
    what: str


class BodyRules:
    """What a jit body may use, from the Triton installed here and the code loaded at warm-up."""

    def __init__(self, known: Any) -> None:
        import triton
        import triton.language as tl
        from triton.runtime import interpreter, jit

        self.known = known
        root = os.path.join(os.path.dirname(os.path.realpath(triton.__file__)), "")
        self.triton_dir = root
        # Where the code of Triton's language lives: each module of LANGUAGE_MODULES as a package
        # (a folder) or as one file.
        parts = [os.path.join(root, *name.split(".")[1:]) for name in LANGUAGE_MODULES]
        self.language_dirs = tuple(os.path.join(part, "") for part in parts)
        self.language_files = frozenset(part + ".py" for part in parts)
        self.interpreter_file = os.path.realpath(interpreter.__file__)
        self.jit_kinds: tuple[type, ...] = (jit.JITFunction, interpreter.InterpretedFunction)
        self.value_kinds: tuple[type, ...] = (tl.constexpr, tl.dtype)
        # The public attributes of Triton's own value classes (tensors, descriptors, dtypes, tuples,
        # constexprs): what a body may ask of a value it holds. Never the interpreter's internals
        # behind them (``handle``: the numpy array of addresses a pointer is under the interpreter).
        names: set[str] = set()
        for value in vars(tl).values():
            if isinstance(value, type) and (value.__module__ or "").startswith("triton.language"):
                names.update(n for n in dir(value) if not n.startswith("_"))
        names.update({"value", "shape", "dtype", "type", "element_ty", "T"})
        self.attributes = frozenset(names - INTERNALS)
        # Triton's own jit functions (tl.max, tl.sum … are written with @jit), found before any
        # candidate code exists: their code objects, held so that no later code takes their ids.
        self.library_jit: dict[int, types.CodeType] = {}
        for name, module in list(sys.modules.items()):
            if not name.startswith("triton.") or module is None:
                continue
            for value in list(vars(module).values()):
                code = getattr(getattr(value, "fn", None), "__code__", None)
                if isinstance(value, self.jit_kinds) and isinstance(code, types.CodeType):
                    self.library_jit[id(code)] = code
        # Proton's scope functions, which kerneltui wraps so that they run under the interpreter
        # (``proton_run.allow_scopes_in_interpreter``, before any candidate code): by identity.
        proton = sys.modules.get("triton.profiler.language")
        self.language_wrappers: dict[int, Any] = {}
        for name in ("enter_scope", "exit_scope"):
            wrapper = getattr(proton, name, None)
            if getattr(wrapper, "_kerneltui_interpreter", False):
                self.language_wrappers[id(wrapper)] = wrapper

    # -- what a global may be -----------------------------------------------------------------

    def allowed(self, value: Any) -> bool:
        if value is None or isinstance(value, (bool, int, float, str, complex)):
            return True
        if isinstance(value, tuple):
            return all(self.allowed(v) for v in value)
        if isinstance(value, self.value_kinds):
            # A constexpr holds a value of its own, which a call through it would run.
            return not isinstance(value, self.value_kinds[0]) or self.allowed(getattr(value, "value", None))
        if isinstance(value, self.jit_kinds):
            return True  # its own body is checked when the interpreter rewrites it
        inner = value
        while not isinstance(inner, self.jit_kinds) and hasattr(inner, "fn") and _tritons_class(type(inner)):
            inner = inner.fn  # autotuner / heuristics wrappers
        if isinstance(inner, self.jit_kinds):
            return True
        if isinstance(value, types.ModuleType):
            return _language_module(value.__name__)
        return self._triton_language_code(value)

    def tritons_own(self, fn: Any) -> bool:
        """A jit function of Triton's own library (``tl.max``, ``tl.sum`` … are jit functions), loaded
        before any candidate code: the interpreter rewrites those too, and they are not the kernel's."""
        code = getattr(fn, "__code__", None)
        if not isinstance(code, types.CodeType):
            return False
        if self.library_jit.get(id(code)) is code:
            return True
        if not os.path.realpath(code.co_filename).startswith(self.triton_dir):
            return False
        return self.known is not None and (self.known.library(code) or self.known.looked_through(code))

    def _triton_language_code(self, value: Any) -> bool:
        """A function or class of Triton's language (or of the interpreter, which puts its own
        functions in their place while a kernel runs), loaded before any candidate code."""
        if isinstance(value, type):
            return _language_module(getattr(value, "__module__", "") or "") and _tritons_class(value)
        if self.language_wrappers.get(id(value)) is value:
            return True
        code = getattr(value, "__code__", None)
        if isinstance(code, types.CodeType):
            file = os.path.realpath(code.co_filename)
            known = self.known is None or self.known.library(code) or self.known.looked_through(code)
            return known and (file.startswith(self.language_dirs) or file in self.language_files
                              or file == self.interpreter_file)
        if isinstance(value, types.BuiltinFunctionType):
            module = getattr(value, "__module__", "") or ""
            return module.startswith("triton.")
        return False

    # -- one body -----------------------------------------------------------------------------

    def check(self, source: str, namespace: dict[str, Any]) -> list[Finding]:
        tree = ast.parse(source)
        fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
        if fn is None:
            return [Finding(1, "no function definition in its source")]
        local = _locals(fn)
        found: list[Finding] = []
        # A name at the base of an attribute chain (``triton.language.sum``) is judged with the chain.
        bases = {id(_chain_base(n)) for n in _body_nodes(fn) if isinstance(n, ast.Attribute)}
        for node in _body_nodes(fn):
            if isinstance(node, REFUSED_NODES):
                found.append(Finding(node.lineno, f"a {type(node).__name__.lower()} statement or expression"))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                found.extend(self._attribute(node, local, namespace))
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local \
                    and id(node) not in bases:
                if not self._name_allowed(node.id, namespace):
                    found.append(Finding(node.lineno, f"{node.id} ({_kind(_resolve(node.id, namespace))})"))
        return found

    def reads(self, source: str) -> tuple[str, ...]:
        """The names a body loads from outside itself (globals or builtins, bases of chains too)."""
        fn = next((n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)), None)
        if fn is None:
            return ()
        local = _locals(fn)
        return tuple(sorted({n.id for n in _body_nodes(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                             and n.id not in local} | {"__builtins__"}))

    def held(self, names: tuple[str, ...], namespace: dict[str, Any], fallback: dict[str, Any]) -> list[Any]:
        """What each name resolves to now, with what a constexpr, a tuple or a Triton wrapper holds:
        compared by identity at each launch (another object: the body is checked again)."""
        out: list[Any] = []
        pending = [_resolve(name, namespace, fallback) for name in names]
        while pending and len(out) < 10_000:
            value = pending.pop()
            out.append(value)
            if isinstance(value, tuple):
                pending.extend(value)
            elif isinstance(value, self.value_kinds[0]):
                pending.append(getattr(value, "value", None))
            elif not isinstance(value, self.jit_kinds) and _tritons_class(type(value)) and hasattr(value, "fn"):
                pending.append(value.fn)
        return out

    def _name_allowed(self, name: str, namespace: dict[str, Any]) -> bool:
        if name in namespace:
            return self.allowed(namespace[name])
        value = _resolve(name, namespace)
        if value is _MISSING:
            return True  # defined nowhere: the interpreter raises NameError at its line, as Python would
        return name in BUILTINS and value is getattr(builtins, name, _MISSING)

    def _attribute(self, node: ast.Attribute, local: set[str], namespace: dict[str, Any]) -> Iterator[Finding]:
        chain: list[str] = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            chain.insert(0, base.attr)
            base = base.value
        dotted = ".".join(chain)
        if isinstance(base, ast.Name) and base.id not in local and base.id not in namespace:
            value = _resolve(base.id, namespace)
            if value is _MISSING:
                return  # defined nowhere: NameError at its line
            if value is not getattr(builtins, base.id, _MISSING):
                yield Finding(node.lineno, f"{base.id}.{dotted} ({_kind(value)})")
                return
            # One of Python's builtins: judged below, as a value.
        elif isinstance(base, ast.Name) and base.id not in local:
            # A global: followed through modules only (a module's attribute is a plain lookup).
            value = namespace[base.id]
            for attr in chain:
                if attr.startswith("_") or not isinstance(value, types.ModuleType):
                    break
                value = getattr(value, attr, _MISSING)
            else:
                if not self.allowed(value):
                    yield Finding(node.lineno, f"{base.id}.{dotted} ({_kind(value)})")
                return
            yield Finding(node.lineno, f"{base.id}.{dotted}")
            return
        # A value the body made (a tensor, a dtype, a constexpr): Triton's own public attributes.
        if chain[-1].startswith("_") or chain[-1] not in self.attributes:
            yield Finding(node.lineno, f".{chain[-1]} of a value (not an attribute of Triton's tensors or types)")


_MISSING = object()


def _language_module(name: str) -> bool:
    return any(name == module or name.startswith(module + ".") for module in LANGUAGE_MODULES)


def _resolve(name: str, namespace: dict[str, Any], fallback: dict[str, Any] | None = None) -> Any:
    """What ``name`` resolves to at the top level of ``namespace`` (then ``fallback``, then the
    builtins that ``namespace`` names, which a module may replace): ``_MISSING`` where nothing."""
    if name in namespace:
        return namespace[name]
    if fallback is not None and name in fallback:
        return fallback[name]
    table = namespace.get("__builtins__", builtins)
    if isinstance(table, types.ModuleType):
        table = vars(table)
    if not isinstance(table, dict):
        return table  # not Python's builtins: whatever it gives is not theirs
    return table.get(name, _MISSING)


def body_namespace(fn: Any) -> dict[str, Any]:
    """The names a rewritten body resolves, as ``FunctionRewriter._compile_and_exec`` sets them: the
    jit function's module globals, with the interpreter module's own globals copied in where missing
    (a closure's cells and the jit options are not seen by the rewritten body)."""
    from triton.runtime import interpreter

    return {**vars(interpreter), **fn.__globals__}


def _tritons_class(cls: type) -> bool:
    """A class that a module of Triton defines under its name (a class of the kernel's that claims a
    Triton module in ``__module__`` is not found there)."""
    module = getattr(cls, "__module__", "") or ""
    return (module == "triton" or module.startswith("triton.")) and \
        getattr(sys.modules.get(module), getattr(cls, "__name__", ""), None) is cls


def _kind(value: Any) -> str:
    if value is _MISSING:
        return "not defined where the kernel is"
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    module = getattr(value, "__module__", None) or type(value).__module__
    return f"{type(value).__name__} from {module}"


def _chain_base(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _locals(fn: ast.FunctionDef) -> set[str]:
    names = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    for extra in (fn.args.vararg, fn.args.kwarg):
        if extra is not None:
            names.add(extra.arg)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


def _body_nodes(fn: ast.FunctionDef) -> Iterator[ast.AST]:
    """Every node of the body (not the decorators or the annotations of the parameters)."""
    for stmt in fn.body:
        yield from ast.walk(stmt)


def refusal(fn: Any, findings: list[Finding], def_line: int, where: str) -> JitBodyOutsideTriton:
    name = getattr(fn, "__name__", "a jit function")
    shown = "; ".join(f"line {def_line + f.line - 1}: {f.what}" for f in findings[:4])
    more = f" (+{len(findings) - 4} more)" if len(findings) > 4 else ""
    return JitBodyOutsideTriton(
        f"the @triton.jit function {name} ({where}:{def_line}) uses what is not Triton's language ({shown}{more}); under the Triton interpreter (no GPU) a jit body runs as Python, so it may use only "
        "triton.language, other @triton.jit functions, constexpr values and range/min/max-like builtins: do the work "
        "with tl operations on the pointers it is given")


def install(known: Any, original_path: Any) -> None:
    """Check every jit body on the source the interpreter is about to compile, and refuse a jit
    function whose source it cannot read. ``original_path``: a file's name as the task knows it."""
    from triton.runtime import interpreter

    rewriter = interpreter.FunctionRewriter
    if getattr(rewriter.rewrite_ast, "_kerneltui_checked", False):
        return
    rules = BodyRules(known)
    transform = rewriter._transform_ast
    rewrite = rewriter.rewrite_ast

    def where(self: Any) -> str:
        file = getattr(getattr(self.fn, "__code__", None), "co_filename", "") or ""
        return original_path(file) or file or "<unknown file>"

    # What each checked body reads, and what that resolved to when it was checked (see ``held``).
    checked_reads: dict[Any, tuple[tuple[str, ...], list[Any]]] = {}

    def checked_transform(self: Any, src: str) -> Any:
        if rules.tritons_own(self.fn):
            return transform(self, src)
        namespace = body_namespace(self.fn)
        findings = rules.check(src, namespace)
        if findings:
            raise refusal(self.fn, findings, int(self.def_file_lineno or 1), where(self))
        names = rules.reads(src)
        checked_reads[self.fn] = (names, rules.held(names, namespace, {}))
        return transform(self, src)

    def checked_rewrite(self: Any) -> Any:
        rewritten = rewrite(self)
        if rewritten is self.fn:  # no source: the interpreter would run the body as it is
            raise JitBodyOutsideTriton(
                f"the @triton.jit function {getattr(self.fn, '__name__', '?')} ({where(self)}) has no source kerneltui "
                "can read, so what the Triton interpreter would run cannot be checked: define jit functions in the "
                "kernel's file")
        return rewritten

    # The interpreter keeps each rewritten body in a class-wide table, which the kernel's own code
    # could fill first: only what the check passed is ever taken from it.
    approved: dict[int, Any] = {}
    table = interpreter.InterpretedFunction.rewritten_fn
    interpreter_globals = vars(interpreter)

    def unchanged(fn: Any) -> bool:
        entry = checked_reads.get(fn)
        if entry is None:
            return True  # Triton's own (never checked)
        now = rules.held(entry[0], fn.__globals__, interpreter_globals)
        return len(now) == len(entry[1]) and all(a is b for a, b in zip(now, entry[1], strict=True))

    def checked_cache(self: Any) -> Any:
        cached = table.get(self.fn)
        if cached is None or approved.get(id(cached)) is not cached or not unchanged(self.fn):
            cached = self.rewriter.rewrite_ast()
            approved[id(cached)] = cached
            table[self.fn] = cached
        watch = LaunchWatch.active
        if watch is not None and not LaunchWatch.claimed:
            # The first body asked for once a launch began is that launch's (``run`` asks before its
            # grid function or hooks run); later ones are jit functions its programs call.
            LaunchWatch.claimed = True
            return watch.programs_of(cached)
        return cached

    checked_rewrite._kerneltui_checked = True  # type: ignore[attr-defined]  # a marker on the function: mypy does not model attributes set on functions
    rewriter._transform_ast = checked_transform
    rewriter.rewrite_ast = checked_rewrite
    interpreter.InterpretedFunction.rewrite = checked_cache


# -- Python around an interpreted launch's programs ---------------------------------------------
#
# The interpreter runs a whole launch as Python, and not only the jit body: a grid function (called
# with the launch's arguments), the pre-run hooks, and the methods of whatever the arguments are run
# inside the launch too, before the first program and after the last. The operator record files what
# the launch's arguments hold at its end as the kernel's work, so a numpy write from a grid function
# would pass as the kernel's. On a GPU that code is host code, which cannot write device memory
# unseen. So each launch's tensor arguments are digested where the launch begins, again when its
# first program starts (a change between is Python writing them), and after its last program (a
# change before the launch returns is the same): only the programs may change them.


class WroteOutsideThePrograms(Exception):
    """Python the interpreter ran inside a launch, outside its programs, changed a tensor argument."""

    harness_message = True


@dataclass
class LaunchWatch:
    """One interpreted launch's tensor arguments, digested at the edges of its programs."""

    kernel: str
    site: str  # where the kernel's code launched it (``kernel.py:30``)
    around: str  # what of the kernel's own Python runs inside the launch (a grid function, hooks)
    names: list[str]  # the arguments, as the jit function names them
    tensors: list[Any]
    digest: Any  # tensor -> bytes (the operator record's digest of its whole storage; b"" for none)
    before: list[bytes]
    after: list[bytes] | None = None
    programs: int = 0
    total: int = 0  # the launch's program count, read when its first program starts
    depth: int = 0  # nested jit calls from a program are part of it
    finding: str = ""

    active: ClassVar[LaunchWatch | None] = None  # the outermost interpreted launch, while it runs
    claimed: ClassVar[bool] = False  # its rewritten body was handed out (wrapped) once

    @classmethod
    def begin(cls, kernel: str, site: str, around: str, named: list[tuple[str, Any]], digest: Any) -> LaunchWatch:
        watch = cls(kernel, site, around, [n for n, _ in named], [t for _, t in named], digest,
                    [digest(t) for _, t in named])
        cls.active, cls.claimed = watch, False
        return watch

    def end(self) -> None:
        """After the launch returned: its arguments as the last program left them, or (no program
        ran) as the launch began. Raises :class:`WroteOutsideThePrograms`."""
        LaunchWatch.active = None
        if not self.finding:
            self._compare(self.after if self.after is not None else self.before,
                          "after its last program" if self.programs else "while it ran no program")
        self.raise_finding()

    def raise_finding(self) -> None:
        if self.finding:
            raise WroteOutsideThePrograms(self.finding)

    def programs_of(self, fn: Any) -> Any:
        """``fn`` (the launch's rewritten body) checking the arguments at its first and after its last program."""

        def program(*args: Any, **kwargs: Any) -> Any:
            if self.depth == 0 and self.programs == 0:
                self._started()
                self.raise_finding()
            self.depth += 1
            try:
                return fn(*args, **kwargs)
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.programs += 1
                    if self.programs == self.total:
                        self.after = [self.digest(t) for t in self.tensors]

        # The interpreter reads the body's signature, annotations (constexprs) and globals (where it
        # patches ``triton.language``): the stand-in shows the body's own.
        stand_in = types.FunctionType(program.__code__, fn.__globals__, getattr(fn, "__name__", "program"), None,
                                      program.__closure__)
        stand_in.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]  # read by inspect, not modelled by mypy
        stand_in.__annotations__ = dict(getattr(fn, "__annotations__", {}))
        return stand_in

    def _started(self) -> None:
        from triton.runtime import interpreter

        dims = getattr(interpreter.interpreter_builder, "grid_dim", (0, 0, 0))
        self.total = int(dims[0]) * int(dims[1]) * int(dims[2])
        self._compare(self.before, "before its first program")

    def _compare(self, then: list[bytes], when: str) -> None:
        now = [self.digest(t) for t in self.tensors]
        changed = [name for name, a, b in zip(self.names, then, now, strict=True) if a and b and a != b]
        if changed:
            self.finding = (
                f"the Triton kernel {self.kernel} (launched at {self.site}) found {', '.join(changed)} changed "
                f"{when}: under the Triton interpreter (no GPU) Python runs inside a launch outside the kernel's "
                f"programs ({self.around}), and it wrote memory the kernel was given; on a GPU that is host code "
                "writing device memory, not the kernel's work. Compute outputs in the @triton.jit body")


def launch_around(grid: Any, hooks: list[Any], original_path: Any) -> str:
    """Words for the kernel's own Python a launch runs around its programs: the grid function and
    pre-run hooks with their file and line, else the arguments' own methods."""
    def named(kind: str, fn: Any) -> str:
        code = getattr(fn, "__code__", None)
        if code is None:
            return f"{kind} {type(fn).__name__}"
        file = original_path(code.co_filename) or code.co_filename
        return f"{kind} {getattr(fn, '__name__', '?')} ({file}:{code.co_firstlineno})"
    parts = [named("the grid function", grid)] if callable(grid) else []
    parts += [named("the pre-run hook", hook) for hook in hooks]
    return ", ".join(parts) or "an argument's own methods"


def launch_site(original_path: Any) -> str:
    """The innermost frame of the kernel's own files (the task copy) on the stack: where it launched."""
    frame: Any = sys._getframe(1)
    while frame is not None:
        path = original_path(frame.f_code.co_filename)
        if path:
            return f"{path}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown line>"
