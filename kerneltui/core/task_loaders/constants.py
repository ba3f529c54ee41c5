"""Module constants of a KernelBench problem: read, type-checked, scaled and rewritten in the source.

KernelBench problems set their sizes as module constants (``batch_size = 4096``, ``N = 2048 * 2``)
that ``get_inputs``/``get_init_inputs`` read when called. ``--set NAME=VALUE`` and ``--scale F``
change them for a run by rewriting the assignment in the problem's source text (on its syntax
tree, in the parent, when the task's files are read), so the worker imports an ordinary module
with other numbers in it and needs to know nothing. Constants computed from others
(``input_shape = (num_classes,)``) follow at import.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kerneltui.core.task_error import TaskError

# --scale leaves small integers alone: dimensions to reduce over, kernel sizes, strides, groups.
SCALE_MIN = 16
# A scaled size keeps the power-of-two factors (up to this one) of the original, so that sizes
# that had to divide each other (channels and groups, heads and width) still do.
SCALE_QUANTUM = 16


@dataclass(frozen=True)
class Constant:
    name: str
    line: int
    value: Any  # the value at import, when it can be computed from literals and earlier constants
    node: ast.expr  # the assigned expression

    @property
    def is_size(self) -> bool:
        """An integer of at least SCALE_MIN, or a tuple with one (``input_shape = (32768,)``)."""
        items = self.value if isinstance(self.value, tuple) else (self.value,)
        return any(_is_size(x) for x in items) and all(isinstance(x, (int, float)) for x in items)


def _is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= SCALE_MIN


def module_constants(tree: ast.Module) -> dict[str, Constant]:
    """Top-level ``NAME = expression`` assignments, in order, with their values where computable."""
    found: dict[str, Constant] = {}
    known: dict[str, Any] = {}
    for node in tree.body:
        for target, value in _assignments(node):
            computed = _evaluate(value, known)
            if computed is not _UNKNOWN:
                known[target] = computed
            else:
                known.pop(target, None)
            found[target] = Constant(target, node.lineno, None if computed is _UNKNOWN else computed, value)
    return found


def _assignments(node: ast.stmt) -> list[tuple[str, ast.expr]]:
    """The (name, expression) pairs a top-level statement assigns: ``N = 4096``, ``N: int = 4096``,
    and unpacked ones, ``batch_size, dim = 16, 16384`` (each name with its own element, so that one
    can be rewritten alone)."""
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return [(node.target.id, node.value)]
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return []
    target, value = node.targets[0], node.value
    if isinstance(target, ast.Name):
        return [(target.id, value)]
    if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)
            and all(isinstance(t, ast.Name) for t in target.elts)
            and not any(isinstance(v, ast.Starred) for v in value.elts)):
        return [(t.id, v) for t, v in zip(target.elts, value.elts, strict=True) if isinstance(t, ast.Name)]
    return []


_UNKNOWN = object()
_BINOPS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a ** b if abs(b) < 64 else _UNKNOWN,
}


def _evaluate(node: ast.expr, known: dict[str, Any]) -> Any:
    """Literals, tuples and arithmetic over them and earlier constants; anything else is unknown."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id, _UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _evaluate(node.operand, known)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner if isinstance(node.op, ast.USub) else inner
        return _UNKNOWN
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _evaluate(node.left, known), _evaluate(node.right, known)
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (left, right)):
            try:
                return _BINOPS[type(node.op)](left, right)
            except (ZeroDivisionError, OverflowError):
                return _UNKNOWN
        return _UNKNOWN
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_evaluate(e, known) for e in node.elts]
        if any(x is _UNKNOWN for x in items):
            return _UNKNOWN
        return tuple(items) if isinstance(node, ast.Tuple) else list(items)
    return _UNKNOWN


def parse_value(text: str, name: str) -> Any:
    """``--set NAME=VALUE``'s value as a Python literal (``1024``, ``0.5``, ``(3, 5)``)."""
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError) as exc:
        raise TaskError(f"--set {name}={text}: the value must be a Python literal such as 1024, 0.5 or (3, 5)") from exc


def check_value(constant: Constant, value: Any, problem: Path, how: str) -> Any:
    """A new value must be of the constant's own type, and a positive size stays positive."""
    old = constant.value
    where = f"{how}: {constant.name} (line {constant.line}, = {ast.unparse(constant.node)})"
    if old is None:
        raise TaskError(f"{where} is not a literal kerneltui can read; set the constants it is computed from",
                        problem, constant.line)
    if isinstance(old, bool) or isinstance(value, bool):
        if not (isinstance(old, bool) and isinstance(value, bool)):
            raise TaskError(f"{where} is {_kind(old)}, not {_kind(value)} {value!r}", problem, constant.line)
        return value
    if isinstance(old, int):
        if not isinstance(value, int):
            raise TaskError(f"{where} is an integer size; {value!r} is {_kind(value)}", problem, constant.line)
        if old > 0 and value <= 0:
            raise TaskError(f"{where} is a size: it must stay a positive integer, not {value}", problem, constant.line)
        return value
    if isinstance(old, float):
        if not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            raise TaskError(f"{where} is a number; {value!r} is not", problem, constant.line)
        return float(value)
    if isinstance(old, (tuple, list)):
        if not isinstance(value, (tuple, list)) or len(value) != len(old):
            raise TaskError(f"{where} is a sequence of {len(old)}; give {len(old)} values", problem, constant.line)
        return type(old)(check_value(Constant(constant.name, constant.line, o, constant.node), v, problem, how)
                         for o, v in zip(old, value, strict=True))
    if type(value) is not type(old):
        raise TaskError(f"{where} is {_kind(old)}, not {_kind(value)}", problem, constant.line)
    return value


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def scaled(value: int, factor: float) -> int:
    """``value × factor``, rounded to keep the power-of-two factors (up to 16) ``value`` had."""
    quantum = math.gcd(value, SCALE_QUANTUM)
    return max(quantum, round(value * factor / quantum) * quantum)


def scale_all(constants: dict[str, Constant], factor: float) -> dict[str, Any]:
    """New values for every size constant written as numbers (not computed from other constants)."""
    out: dict[str, Any] = {}
    for c in constants.values():
        if not c.is_size or _depends_on_others(c.node):
            continue
        if isinstance(c.value, tuple):
            out[c.name] = tuple(scaled(x, factor) if _is_size(x) else x for x in c.value)
        else:
            out[c.name] = scaled(int(c.value), factor)
    return out


def _depends_on_others(node: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) for n in ast.walk(node))


def global_reads(node: ast.AST) -> dict[str, int]:
    """Names a class or function reads from the module (not its own parameters or locals), with
    the line of the first read."""
    found: dict[str, int] = {}

    def visit(scope: ast.AST, local: set[str]) -> None:
        for child in ast.iter_child_nodes(scope):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = child.args
                inner = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
                inner |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
                inner |= {n.id for n in ast.walk(child) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                for default in (*a.defaults, *a.kw_defaults):
                    if default is not None:
                        visit_expr(default, local)
                visit(child, local | inner)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                if child.id not in local:
                    found.setdefault(child.id, child.lineno)
            else:
                visit(child, local)

    def visit_expr(expr: ast.AST, local: set[str]) -> None:
        if isinstance(expr, ast.Name) and isinstance(expr.ctx, ast.Load) and expr.id not in local:
            found.setdefault(expr.id, expr.lineno)
        visit(expr, local)

    visit(node, set())
    return found


def rewrite(text: str, values: dict[str, Any], path: Path) -> str:
    """The source with each named top-level constant's assigned expression replaced by its new value."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise TaskError(f"syntax error: {exc.msg}", path, exc.lineno) from exc
    edits: list[tuple[ast.expr, Any]] = []
    seen = set()
    for node in tree.body:
        for name, value in _assignments(node):
            if name in values:
                edits.append((value, values[name]))
                seen.add(name)
    missing = sorted(set(values) - seen)
    if missing:
        raise TaskError(f"no module constant {', '.join(missing)} to set", path)
    return _replaced(text, edits)


def follow_in_candidate(candidate: str, reference: str, values: dict[str, Any]) -> tuple[str, list[str]]:
    """The candidate's text with its own copies of the rewritten constants following the run's values,
    and their names.

    A KernelBench candidate often repeats the problem's ``N = 4096`` and sizes its launch with it:
    under ``--set N=64`` it would run at the published size against a reference run small, and fail
    for a reason that is not its own. A copy is a top-level ``NAME = <integer literal>`` of a name
    the run rewrites, holding the problem's published value (a name the candidate uses for something
    else, with another value, is left alone). A candidate that does not parse stays as it is: its
    compile says why."""
    try:
        published = module_constants(ast.parse(reference))
        tree = ast.parse(candidate)
    except SyntaxError:
        return candidate, []
    edits: list[tuple[ast.expr, Any]] = []
    followed: list[str] = []
    for node in tree.body:
        for name, value in _assignments(node):
            if name not in values or name not in published or not isinstance(value, ast.Constant):
                continue
            literal = value.value
            if isinstance(literal, int) and not isinstance(literal, bool) and literal == published[name].value:
                edits.append((value, values[name]))
                followed.append(name)
    return (_replaced(candidate, edits), followed) if edits else (candidate, [])


def _replaced(text: str, edits: list[tuple[ast.expr, Any]]) -> str:
    """``text`` with each expression replaced by the ``repr`` of its new value."""
    starts = _line_offsets(text)
    spans: list[tuple[int, int, str]] = []  # byte offsets in the UTF-8 text
    for value, new in edits:
        begin = starts[value.lineno - 1] + value.col_offset
        end = starts[(value.end_lineno or value.lineno) - 1] + (value.end_col_offset or 0)
        spans.append((begin, end, repr(new)))
    data = text.encode("utf-8")
    for begin, end, new_text in sorted(spans, reverse=True):
        data = data[:begin] + new_text.encode("utf-8") + data[end:]
    return data.decode("utf-8")


def _line_offsets(text: str) -> list[int]:
    offsets, total = [], 0
    for line in text.encode("utf-8").splitlines(keepends=True):
        offsets.append(total)
        total += len(line)
    offsets.append(total)
    return offsets
