"""Checks on Python task files done on the syntax tree, without importing them."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from kerneltui.core.task_error import TaskError, task_text


@dataclass(frozen=True)
class FunctionShape:
    name: str
    line: int
    params: tuple[str, ...]  # positional-or-keyword and keyword-only names
    has_varargs: bool
    has_kwargs: bool
    annotations: dict[str, str] = field(default_factory=dict)  # parameter -> annotation as written


def parse_python(path: Path) -> ast.Module:
    try:
        text = task_text(path)
    except FileNotFoundError as exc:
        raise TaskError("file not found", path) from exc
    try:
        return ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        raise TaskError(f"syntax error: {exc.msg}", path, exc.lineno) from exc


def top_level_functions(tree: ast.Module) -> dict[str, FunctionShape]:
    found: dict[str, FunctionShape] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            every = (*a.posonlyargs, *a.args, *a.kwonlyargs)
            names = tuple(x.arg for x in every)
            notes = {x.arg: ast.unparse(x.annotation) for x in every if x.annotation is not None}
            found[node.name] = FunctionShape(node.name, node.lineno, names, a.vararg is not None, a.kwarg is not None,
                                             notes)
        elif isinstance(node, ast.Assign):
            # `check_implementation = make_match_reference(ref_kernel)` and the like
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, FunctionShape(target.id, node.lineno, (), True, True))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = alias.asname or alias.name.split(".")[0]
                found.setdefault(name, FunctionShape(name, node.lineno, (), True, True))
    return found


def top_level_classes(tree: ast.Module) -> dict[str, int]:
    return {n.name: n.lineno for n in tree.body if isinstance(n, ast.ClassDef)}


def require_function(funcs: dict[str, FunctionShape], name: str, path: Path, purpose: str) -> FunctionShape:
    if name not in funcs:
        raise TaskError(f"missing function {name}(): {purpose}", path)
    return funcs[name]


def require_params(fn: FunctionShape, names: list[str], path: Path, usage: str) -> None:
    """Every name must be accepted, by name or through **kwargs."""
    missing = [n for n in names if n not in fn.params and not fn.has_kwargs]
    if missing:
        raise TaskError(
            f"{fn.name}() does not accept {', '.join(missing)}; expected {usage}", path, fn.line
        )
