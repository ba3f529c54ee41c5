"""Where worker code runs is the package it is in: ``core/worker/parent`` (the front end, the engine),
``core/worker/child`` (the sandboxed worker process) and ``core/worker/contract`` (what both import).

Read from the source: every ``import`` statement counts, also those inside functions and under
``if TYPE_CHECKING:`` (a deferred import runs the day its function does). One check imports the
parent side in a fresh interpreter and looks at what it loaded.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.unit.test_import_cycles import _modules  # every kerneltui module by dotted name

ROOT = Path(__file__).resolve().parents[2]
WORKER = "kerneltui.core.worker"
PARENT, CHILD, CONTRACT = f"{WORKER}.parent", f"{WORKER}.child", f"{WORKER}.contract"
GPU_STACK = ("torch", "triton")
# What a worker process must never reach: the front end's parts.
FRONT_END = ("kerneltui.core.rungs", "kerneltui.core.loop", "kerneltui.core.agent", "kerneltui.ui")
# Modules outside core/worker/child that run in a worker's process, or in one set up the same way.
CHILD_SIDE_ELSEWHERE = {
    "kerneltui.core.sandbox.zygote": "imports what a worker imports at warm-up, then forks the workers",
    "kerneltui.core.profile.target": "ncu's target: loads the task in its box as a worker does",
    "kerneltui.core.backends.base": "each DSL's hooks, loaded by the worker's state (core.backends)",
}


def _imports(name: str, path: Path) -> set[str]:
    """Every module ``name`` imports anywhere in its source, by full dotted name; for ``from a import
    b`` both ``a`` and ``a.b`` (``b`` may be a submodule or a name; the callers match on prefixes)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[:len(package) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def _within(name: str, packages: tuple[str, ...] | str) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in ((packages,) if isinstance(packages, str) else packages))


def _side(prefix: str) -> dict[str, set[str]]:
    return {name: _imports(name, path) for name, path in _modules().items() if _within(name, prefix)}


def test_the_walk_sees_every_kind_of_import() -> None:
    modules = _modules()
    state = _imports(f"{CHILD}.state", modules[f"{CHILD}.state"])
    assert "torch" in state  # inside WorkerState.warm_up
    serve = _imports(f"{CHILD}.serve", modules[f"{CHILD}.serve"])
    assert f"{CONTRACT}.protocol" in serve  # a from-import inside a method
    assert f"{CHILD}.ops" in serve  # … inside main()
    runner = _imports(f"{PARENT}.runner", modules[f"{PARENT}.runner"])
    assert f"{CONTRACT}.start" in runner


def test_the_three_sides_hold_the_worker_modules() -> None:
    loose = [name for name in _modules() if _within(name, WORKER) and name != WORKER
             and not _within(name, (PARENT, CHILD, CONTRACT))]
    assert loose == [], f"place each in parent/, child/ or contract/: {loose}"
    assert len(_side(PARENT)) >= 3 and len(_side(CHILD)) >= 20 and len(_side(CONTRACT)) >= 3


def test_the_parent_side_imports_no_gpu_stack_and_no_child() -> None:
    bad = {name: sorted(m for m in imports if _within(m, (*GPU_STACK, CHILD)))
           for name, imports in _side(PARENT).items()}
    assert {name: found for name, found in bad.items() if found} == {}


def test_the_contract_imports_neither_side_nor_the_gpu_stack() -> None:
    bad = {name: sorted(m for m in imports if _within(m, (*GPU_STACK, CHILD, PARENT)))
           for name, imports in _side(CONTRACT).items()}
    assert {name: found for name, found in bad.items() if found} == {}


def test_the_child_side_reaches_none_of_the_front_end() -> None:
    """Followed through every kerneltui module the child side imports, not only its own."""
    modules = _modules()
    reached: dict[str, str] = {name: name for name in modules if _within(name, CHILD)}
    todo = list(reached)
    while todo:
        name = todo.pop()
        for imported in _imports(name, modules[name]):
            parts = imported.split(".")
            for k in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
                module = ".".join(parts[:k])
                if module in modules and module not in reached:
                    reached[module] = name
                    todo.append(module)
    bad = {module: by for module, by in reached.items() if _within(module, FRONT_END)}
    assert bad == {}, f"front-end modules reached from the child side (module: imported by): {bad}"


def test_only_child_side_code_imports_the_child_side() -> None:
    """The rungs, the loop, the engine and the UI talk to workers through the parent side and the contract."""
    found = {name for name, path in _modules().items()
             if not _within(name, CHILD) and any(_within(m, CHILD) for m in _imports(name, path))}
    assert found == set(CHILD_SIDE_ELSEWHERE), found ^ set(CHILD_SIDE_ELSEWHERE)


def test_importing_the_parent_side_loads_no_gpu_stack_and_no_child() -> None:
    names = sorted(name for name in _modules() if _within(name, (PARENT, CONTRACT)))
    probe = "\n".join(f"import {name}" for name in names) + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = set(out.stdout.split())
    assert f"{PARENT}.runner" in loaded  # the probe really imported the parent side
    assert sorted(m for m in loaded if _within(m, (*GPU_STACK, CHILD))) == []
