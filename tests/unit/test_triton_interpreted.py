"""The jit-body rule of the Triton interpreter (``core.backends.triton_interpreted``): what a body may
use, checked on the bundled examples' own kernels and on bodies that reach outside Triton."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import numpy
import pytest

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

from kerneltui.core.backends.triton_interpreted import BodyRules  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "kerneltui" / "examples"


@pytest.fixture(scope="module")
def rules() -> BodyRules:
    return BodyRules(None)


def jit_bodies(source: str) -> list[str]:
    """The source of each @triton.jit function of a module, from its def line (as the interpreter reads it)."""
    lines = source.splitlines(keepends=True)
    bodies = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            bodies.append(textwrap.dedent("".join(lines[node.lineno - 1: node.end_lineno])))
    return bodies


@pytest.mark.parametrize("example", ["vector_add", "softmax", "matmul", "layernorm"])
def test_the_bundled_kernels_use_only_triton(rules: BodyRules, example: str) -> None:
    source = (EXAMPLES / example / "kernel.py").read_text()
    bodies = jit_bodies(source)
    assert bodies
    for body in bodies:
        assert rules.check(body, {"tl": tl, "triton": triton}) == [], body


def test_numpy_and_raw_pointers_in_a_body_are_named(rules: BodyRules) -> None:
    body = textwrap.dedent('''
        def add_kernel(x_ptr, out_ptr, n):
            np.add(helper(x_ptr), x_ptr.handle.data, out=helper(out_ptr))
        ''')
    found = [f.what for f in rules.check(body, {"np": numpy, "helper": len, "tl": tl})]
    assert any(w.startswith("np.add (") and "numpy" in w for w in found), found
    assert any(w.startswith("helper (") for w in found), found
    assert any(".handle" in w for w in found), found


def test_a_module_reached_through_triton_language_is_named(rules: BodyRules) -> None:
    # triton.language's own modules import numpy: a chain through them is followed to what it reaches.
    body = "def k(p):\n    tl.core.np.add(1, 2)\n"
    if not hasattr(tl.core, "np"):
        pytest.skip("this triton.language.core does not import numpy")
    found = [f.what for f in rules.check(body, {"tl": tl})]
    assert found and "module numpy" in found[0], found


@pytest.mark.parametrize("statement", ["f = lambda v: v", "import os", "def inner():\n        return 1",
                                       "x = p.__class__", "x = getattr(p, 'handle')"])
def test_python_machinery_in_a_body_is_refused(rules: BodyRules, statement: str) -> None:
    body = f"def k(p):\n    {statement}\n"
    assert rules.check(body, {"tl": tl}), statement


def test_jit_functions_constexpr_values_and_builtins_are_allowed(rules: BodyRules) -> None:
    @triton.jit
    def helper(x):
        return x + 1

    body = textwrap.dedent('''
        def k(p, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(p + offs, mask=offs < n, other=-float("inf"))
            for i in range(0, min(n, LIMIT)):
                x = helper(x).to(tl.float32)
            tl.store(p + offs, x.to(p.dtype.element_ty), mask=offs < n)
        ''')
    assert rules.check(body, {"tl": tl, "helper": helper, "LIMIT": tl.constexpr(4)}) == []


def test_triton_language_reached_through_the_triton_module_is_allowed(rules: BodyRules) -> None:
    body = "def k(p, n):\n    x = triton.language.arange(0, 16)\n    triton.language.store(p + x, x, mask=x < n)\n"
    assert rules.check(body, {"triton": triton}) == []
    refused = [f.what for f in rules.check("def k(p):\n    x = triton.cdiv(4, 2)\n", {"triton": triton})]
    assert refused and refused[0].startswith("triton.cdiv"), refused


def test_a_class_or_constexpr_that_only_claims_triton_is_refused(rules: BodyRules) -> None:
    fake = type("tensor", (), {"__module__": "triton.language.core"})
    body = "def k(p):\n    Fake(p)\n    Wrapped(p)\n"
    found = [f.what for f in rules.check(body, {"Fake": fake, "Wrapped": tl.constexpr(len)})]
    assert len(found) == 2, found
