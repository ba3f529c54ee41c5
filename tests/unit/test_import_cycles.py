"""No import cycles among kerneltui's modules, read from their source (nothing is imported).

Every ``import`` statement counts, also those inside functions (a deferred import is still a
dependency: it fails the day it runs first inside the other module's import) and those under
``if TYPE_CHECKING:`` (they never run, but a type named across a circle is a circle all the same: the
two modules cannot be understood, changed or tested apart). Parts that must know each other meet at a
port instead (``core.agent.host``, ``ui.app_ports``).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "kerneltui"

# Cycles through deferred or type-checking imports that later work removes; a new one fails the test.
KNOWN_DEFERRED: set[frozenset[str]] = set()


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(name: str, path: Path, modules: dict[str, Path], deferred: bool) -> set[str]:
    """The kerneltui modules ``name`` imports: at import time only, or also inside functions and under
    ``if TYPE_CHECKING:`` (``deferred``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if _is_type_checking(node) and not deferred:
                continue  # never runs: no dependency at import time
            if isinstance(node, ast.Import):
                out.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package[:len(package) - node.level + 1]
                    base = ".".join([*parent, base] if base else parent)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    out.add(full if full in modules else base)  # a submodule, or a name from the module
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if deferred:
                    visit(node.body)
            else:  # a class, if, try, with …: the statements inside run when the module is imported
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        visit([child])
                    elif isinstance(child, ast.ExceptHandler):
                        visit(child.body)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {m for m in out if m in modules and m != name}


def import_cycles(deferred: bool) -> list[frozenset[str]]:
    """Strongly connected groups of more than one module (Tarjan), each a set of module names."""
    modules = _modules()
    graph = {name: _imports(name, path, modules, deferred) for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[frozenset[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(frozenset(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return cycles


def test_the_walk_sees_imports_of_every_kind() -> None:
    modules = _modules()
    app = _imports("kerneltui.ui.app", modules["kerneltui.ui.app"], modules, deferred=True)
    assert "kerneltui.ui.workbench" in app  # from-import of a name
    assert "kerneltui.ui.commands" in app  # a deferred import, inside a function
    theming = _imports("kerneltui.ui.theming", modules["kerneltui.ui.theming"], modules, deferred=True)
    assert "kerneltui.ui.app_ports" in theming  # only under TYPE_CHECKING
    at_import = _imports("kerneltui.ui.theming", modules["kerneltui.ui.theming"], modules, deferred=False)
    assert "kerneltui.ui.app_ports" not in at_import


def test_no_import_cycle_at_import_time() -> None:
    assert import_cycles(deferred=False) == []


def test_no_new_import_cycle_through_deferred_or_type_checking_imports() -> None:
    new = [sorted(c) for c in import_cycles(deferred=True) if c not in KNOWN_DEFERRED]
    assert new == [], new
