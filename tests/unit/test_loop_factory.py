"""Pools and loops are built in one place (``core.loop_factory``), each front end by its kind."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kerneltui.core.loop_factory import PoolKind, new_pool
from kerneltui.core.worker.parent import pool as pool_module
from kerneltui.core.worker.parent.runner import LocalRunner

PACKAGE = Path(__file__).resolve().parents[2] / "kerneltui"
FACTORY = PACKAGE / "core" / "loop_factory.py"
BUILT_ONLY_IN_FACTORY = {"WorkerPool", "Loop"}


def _constructions(path: Path) -> list[str]:
    """``WorkerPool(…)`` and ``Loop(…)`` calls in ``path``, and imports that rename either class (a
    construction under another name), as ``file:line name``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name in BUILT_ONLY_IN_FACTORY:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {name}(")
        elif isinstance(node, ast.ImportFrom):
            found += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} import {alias.name} as {alias.asname}"
                      for alias in node.names if alias.name in BUILT_ONLY_IN_FACTORY and alias.asname]
    return found


def test_pools_and_loops_are_built_only_in_the_factory():
    outside = [hit for path in sorted(PACKAGE.rglob("*.py")) if path != FACTORY for hit in _constructions(path)]
    assert outside == [], "build pools and loops through kerneltui.core.loop_factory:\n" + "\n".join(outside)


def test_the_walk_sees_the_factorys_own_constructions():
    # The walk above finds nothing outside the factory; it must find what is there.
    hits = _constructions(FACTORY)
    assert any("WorkerPool(" in hit for hit in hits) and any("Loop(" in hit for hit in hits)


@pytest.mark.parametrize("cores, held", [(2, True), (64, False)])
def test_an_interactive_pool_keeps_one_spare_held_during_runs_on_few_cores(monkeypatch, cores, held):
    monkeypatch.setattr(pool_module.os, "cpu_count", lambda: cores)
    pool = new_pool(PoolKind.INTERACTIVE, "triton", "sm_90a")
    assert (pool.backend, pool.arch, pool.spares, pool.replenish, pool.hold_during_runs) == (
        "triton", "sm_90a", 1, True, held)


def test_a_one_run_pool_starts_no_spare_after_a_take():
    pool = new_pool(PoolKind.ONE_RUN, "torch")
    assert (pool.arch, pool.spares, pool.replenish, pool.hold_during_runs, pool.top_up_at) == (
        None, 1, False, False, None)


def test_a_standing_pool_has_the_pools_defaults_and_the_runner_given():
    runner = LocalRunner()
    pool = new_pool(PoolKind.STANDING, "cuda", None, runner)
    assert pool.runner is runner
    assert (pool.spares, pool.replenish, pool.hold_during_runs, pool.top_up_at) == (1, True, False, None)
