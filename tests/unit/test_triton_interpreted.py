"""The jit-body rule of the Triton interpreter (``core.backends.triton_interpreted``): what a body may
use, checked on the bundled examples' own kernels and on bodies that reach outside Triton."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
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


def test_a_name_defined_nowhere_is_left_to_the_interpreter(rules: BodyRules) -> None:
    # A typo is an honest error: the interpreter raises NameError at its line. A builtin outside the
    # list, or one that the module's own __builtins__ replaces, is still refused.
    body = "def k(p):\n    x = tl.load(p) + zz\n    tll.store(p, x)\n"
    assert rules.check(body, {"tl": tl}) == []
    assert rules.check("def k(p):\n    open(p)\n", {"tl": tl})
    assert rules.check("def k(p):\n    x = range(4)\n", {"__builtins__": {"range": numpy.arange}})
    assert rules.check("def k(p):\n    x = np.sum(p)\n", {"__builtins__": {"np": numpy}})


def test_protons_language_is_triton_language(rules: BodyRules) -> None:
    pl = pytest.importorskip("triton.profiler.language")
    body = textwrap.dedent('''
        def k(p):
            with pl.scope("load"):
                x = tl.load(p)
            tl.store(p, x)
        ''')
    assert rules.check(body, {"pl": pl, "tl": tl}) == []
    # Its module's other imports are not the language.
    refused = [f.what for f in rules.check("def k(p):\n    pl.flags.instrumentation_on\n", {"pl": pl})]
    assert refused and refused[0].startswith("pl.flags"), refused


INTERPRETED_PROBE = '''
import os, sys
os.environ["TRITON_INTERPRET"] = "1"
from kerneltui.core.trace.proton_run import allow_scopes_in_interpreter
allow_scopes_in_interpreter()
from kerneltui.core.backends import triton_interpreted
triton_interpreted.install(None, lambda file: None)
import torch
sys.path.insert(0, sys.argv[1])
import probe_kernel as kern

def go(label, kernel, n=4):
    x = torch.ones(4)
    try:
        kernel[(1,)](x, n)
        print(label, "ran", x.tolist())
    except Exception as e:
        print(label, type(e).__name__, " ".join(str(e).split())[:200])

go("reads_np", kern.reads_np)
go("typo", kern.typo)
go("scoped", kern.scoped)
go("rebound_before", kern.rebound)
kern.helper = lambda v: v * 100
go("rebound_after", kern.rebound)
go("late_before", kern.late)
kern.later = lambda v: v * 100
go("late_after", kern.late, 200)
go("closure", kern.closure())
'''

PROBE_KERNEL = '''
import triton
import triton.language as tl
import triton.profiler.language as pl


@triton.jit
def twice(x):
    return x * 2


@triton.jit
def rebound(p, n):
    offs = tl.arange(0, 4)
    tl.store(p + offs, helper(tl.load(p + offs)), mask=offs < n)


@triton.jit
def late(p, n):
    offs = tl.arange(0, 4)
    if n > 100:
        tl.store(p + offs, later(tl.load(p + offs)), mask=offs < n)


@triton.jit
def typo(p, n):
    offs = tl.arange(0, 4)
    tl.store(p + offs, tl.load(p + offs) + zz, mask=offs < n)


@triton.jit
def reads_np(p, n):
    offs = tl.arange(0, 4)
    tl.store(p + offs, np.sum(tl.load(p + offs)), mask=offs < n)


@triton.jit
def scoped(p, n):
    offs = tl.arange(0, 4)
    pl.enter_scope("load")
    x = tl.load(p + offs)
    pl.exit_scope("load")
    with pl.scope("store"):
        tl.store(p + offs, x + 1, mask=offs < n)


def closure():
    helper = twice

    @triton.jit
    def masked(p, n):
        offs = tl.arange(0, 4)
        tl.store(p + offs, helper(tl.load(p + offs)), mask=offs < n)
    return masked


helper = twice
'''


def test_names_resolve_as_the_interpreter_resolves_them_at_every_launch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton.profiler.language")
    (tmp_path / "probe_kernel.py").write_text(PROBE_KERNEL)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", INTERPRETED_PROBE, str(tmp_path)], capture_output=True, text=True,
                          env=env, cwd=root, timeout=300)
    outcome = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in proc.stdout.splitlines() if " " in line}
    assert proc.returncode == 0 and len(outcome) == 8, (proc.stdout, proc.stderr)
    refused = "JitBodyOutsideTriton"
    # numpy, which the interpreter copies into the kernel's module, is judged as what it is there.
    assert outcome["reads_np"].startswith(refused) and "np.sum" in outcome["reads_np"], outcome
    # A name defined nowhere: Python's NameError, from the interpreter.
    assert "NameError" in outcome["typo"] and "zz" in outcome["typo"], outcome
    # Proton's scopes, as a with block or as its enter/exit functions.
    assert outcome["scoped"] == "ran [2.0, 2.0, 2.0, 2.0]", outcome
    # A name bound (or defined) after the body was checked is checked again at the next launch.
    assert outcome["rebound_before"] == "ran [2.0, 2.0, 2.0, 2.0]", outcome
    assert outcome["rebound_after"].startswith(refused) and "helper (function" in outcome["rebound_after"], outcome
    assert outcome["late_before"] == "ran [1.0, 1.0, 1.0, 1.0]", outcome
    assert outcome["late_after"].startswith(refused) and "later (function" in outcome["late_after"], outcome
    # A closure's cell is not what the rewritten body reads: the module's global of that name is.
    assert outcome["closure"].startswith(refused) and "helper (function" in outcome["closure"], outcome
