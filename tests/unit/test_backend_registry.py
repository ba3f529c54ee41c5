"""One description per backend (``core.backends``): every place that treats backends differently
reads it, and every registered description is complete and agrees with the parts that use it.

The first test reads kerneltui's source (nothing imported): a comparison of something naming a
backend with a backend's name written out (``task.backend == "triton"``, ``backend in ("cute",
"cuda")``) outside ``core/backends/`` is a table of backends kept somewhere else, which the next
backend would have to find and edit.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
from pathlib import Path

import pytest

from kerneltui.core import backends
from kerneltui.core.backends.base import BaseBackend
from kerneltui.core.backends.spec import BackendSpec, CacheHome
from kerneltui.core.sandbox.environment import PASS_PREFIXES, cache_write_paths, judge_caches, shared_caches
from kerneltui.core.task import TaskError
from kerneltui.core.trace import sources

PACKAGE = Path(__file__).resolve().parents[2] / "kerneltui"
BACKENDS_DIR = PACKAGE / "core" / "backends"
NAMES = frozenset(backends.NAMES)


def _names_a_backend(node: ast.expr) -> bool:
    """``backend``, ``task.backend``, ``state.backend_name``, ``task.get("backend")`` …"""
    return "backend" in ast.unparse(node).lower()


def _backend_literals(node: ast.expr) -> list[str]:
    """Backend names written out in ``node``: a string, or a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in NAMES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for elt in node.elts for name in _backend_literals(elt)]
    return []


def backend_name_comparisons(source: str) -> list[tuple[int, str]]:
    """(line, code) of each comparison of a backend with a backend's name written out."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for left, right in zip(operands, operands[1:], strict=False):
            for named, literal in ((left, right), (right, left)):
                if _names_a_backend(named) and _backend_literals(literal):
                    found.append((node.lineno, ast.unparse(node)))
    return found


def backend_tables(source: str) -> list[tuple[int, str]]:
    """(line, names) of each dict whose keys, and each tuple, list or set whose items, are all
    backend names written out (two or more): a list of backends, or a table keyed by them."""
    found = []
    for node in ast.walk(ast.parse(source)):
        items: list[ast.expr | None] = []
        if isinstance(node, ast.Dict):
            items = list(node.keys)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = list(node.elts)
        if len(items) >= 2 and all(item is not None and _backend_literals(item) for item in items):
            found.append((node.lineno, ", ".join(ast.unparse(item) for item in items if item is not None)))
    return found


def test_the_scan_sees_the_comparisons_it_forbids() -> None:
    code = '''
if task.backend == "triton": pass
if "cuda" != state.backend_name: pass
if task.get("backend") in ("torch", "cute"): pass
ok = backend_spec.dumps and name == "triton"
fine = device.type == "cuda"
'''
    assert [line for line, _ in backend_name_comparisons(code)] == [2, 3, 4]
    tables = '''
LABELS = {"triton": "Triton", "cuda": "CUDA C++"}
VERSIONS = {"torch": "2.9", "triton": "3.5", "driver": "580"}
NAMES = ("triton", "cute")
STAGES = ("ptx", "cuda")
'''
    assert [line for line, _ in backend_tables(tables)] == [2, 4]


def test_no_backend_is_named_outside_its_module() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if BACKENDS_DIR in path.parents:
            continue
        source = path.read_text(encoding="utf-8")
        for line, code in [*backend_name_comparisons(source), *backend_tables(source)]:
            offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {code}")
    assert not offenders, "read core.backends' BackendSpec instead:\n" + "\n".join(offenders)


@pytest.mark.parametrize("spec", backends.REGISTRY, ids=lambda spec: spec.name)
def test_each_description_is_complete(spec: BackendSpec) -> None:
    module = importlib.import_module(f"kerneltui.core.backends.{spec.name}")
    assert module.SPEC is spec and module.Backend.spec is spec  # the description lives with its worker side
    assert issubclass(module.Backend, BaseBackend)
    assert isinstance(backends.backend_for(spec.name), module.Backend)
    assert spec.name.isidentifier() and spec.label
    assert spec.kernel_file and "/" not in spec.kernel_file
    # A kernel file that is not Python is launched from a Python launcher.
    assert spec.kernel_file.endswith(".py") or (spec.launcher or "").endswith(".py")
    # Torch code as the kernel needs no kernel of a DSL, no launch of one, and has none to dump.
    if spec.torch_is_the_kernel:
        assert spec.marker is None and not spec.requires_launch and not spec.dumps
    else:
        assert spec.marker is not None and spec.marker.what and spec.requires_launch
    if spec.override is not None:
        assert spec.dumps  # the edit starts from a stage the dump showed
        assert spec.override.stages and all(stage == stage.upper() for stage in spec.override.stages)
    if spec.tracer is not None:
        assert spec.tracer.source in sources.LABELS and spec.tracer.source != sources.MARKERS
        assert spec.tracer.asked_by
    # The sandbox passes the variables that say where its caches are (its own, or kerneltui's).
    assert all(c.variable.startswith((*spec.env_prefixes, "KERNELTUI_")) for c in spec.caches)
    assert all(prefix in PASS_PREFIXES for prefix in spec.env_prefixes)
    for name in spec.warm_imports:  # kerneltui's own must exist; a DSL's may be missing here
        if name.startswith("kerneltui."):
            assert importlib.util.find_spec(name) is not None, name


def test_the_registry_has_one_description_per_name_and_one_torch_backend() -> None:
    assert len(backends.NAMES) == len(set(backends.NAMES))
    assert backends.DEFAULT in backends.NAMES
    assert [s.name for s in backends.REGISTRY if s.torch_is_the_kernel] == ["torch"]
    with pytest.raises(ValueError, match="unknown backend 'fortran'"):
        backends.spec_of("fortran")


def test_every_cache_is_passed_to_workers_and_has_a_place() -> None:
    """The sandbox passes each cache's variable to workers, and gives each a shared folder, a judge's
    own one and a folder the worker may write."""
    caches = backends.compile_caches()
    assert len({c.variable for c in caches}) == len(caches)
    assert all(c.variable.startswith(PASS_PREFIXES) for c in caches)
    home = {"HOME": "/home/u", "TMPDIR": "/tmp/t", "USER": "u"}
    shared = shared_caches(home)
    assert [s.variable for s in shared] == [c.variable for c in caches]
    assert all(os.path.isabs(s.path) for s in shared)
    written = cache_write_paths(shared)
    assert len(set(written)) == len(written)
    # What a candidate may write is never where the judge's own caches are, nor inside or above them.
    for own in cache_write_paths(judge_caches(shared)):
        for theirs in written:
            assert not (own == theirs or own.startswith(theirs + "/") or theirs.startswith(own + "/")), (own, theirs)
    assert all(c.default(CacheHome(home, Path("/home/u"), "/tmp/t", "u", "u")) for c in caches)


def test_the_caches_are_where_each_library_puts_them() -> None:
    """The defaults as the libraries compute them (what the sandbox pins a worker's caches to)."""
    env = {"HOME": "/home/u", "TMPDIR": "/tmp/t", "USER": "u", "XDG_CACHE_HOME": "/x"}
    paths = {s.variable: s.path for s in shared_caches(env)}
    assert paths["TRITON_CACHE_DIR"] == "/home/u/.triton/cache"
    assert paths["KERNELTUI_CACHE_DIR"] == "/x/kerneltui"
    assert paths["CUTE_DSL_CACHE_DIR"] == "/tmp/t/u/cutlass_python_cache"
    assert paths["TILELANG_CACHE_DIR"] == "/home/u/.tilelang/cache"
    assert re.fullmatch(r"/tmp/t/torchinductor_.+", paths["TORCHINDUCTOR_CACHE_DIR"])
    written = cache_write_paths(shared_caches(env))
    assert "/x/kerneltui/cuda" in written and "/x/kerneltui" not in written
    judge = {s.variable: s.path for s in judge_caches(shared_caches(env))}
    assert judge["KERNELTUI_CACHE_DIR"] == "/x/kerneltui/judge"
    assert judge["TRITON_CACHE_DIR"] == "/home/u/.triton/cache-judge"


def test_a_gpumode_submission_is_read_as_before() -> None:
    assert backends.undeclared_submission("import triton\n") == "triton"
    assert backends.undeclared_submission("@cute.jit\ndef f(): pass") == "cute"
    assert backends.undeclared_submission("from torch.utils.cpp_extension import load_inline") == "cuda"
    assert backends.undeclared_submission("import torch\n") == "torch"
    # Triton's signs come first: a CuTe kernel that imports triton too is read as Triton.
    assert backends.undeclared_submission("import triton\n@cute.kernel\n") == "triton"


def test_the_description_imports_no_gpu_stack() -> None:
    """The parent and the UI read the descriptions: importing them loads neither torch nor a DSL."""
    import subprocess
    import sys

    probe = ("import sys, kerneltui.core.backends as b; b.REGISTRY; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'triton', 'cutlass', 'tilelang', 'numpy'}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                         cwd=PACKAGE.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("spec", backends.REGISTRY, ids=lambda spec: spec.name)
def test_a_native_task_of_each_backend_loads_with_its_files(spec: BackendSpec, tmp_path: Path) -> None:
    """task.toml naming only the backend gets the backend's kernel file and launcher, and the suite
    finds the same kernel file."""
    from kerneltui.core.suite.discover import _native_kernel
    from kerneltui.core.task_loaders.load import load_task
    from tests.conftest import EXAMPLES, copy_tree

    root = tmp_path / "task"
    copy_tree(EXAMPLES / "vector_add", root)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace('backend = "triton"\nkernel = "kernel.py"\n', f'backend = "{spec.name}"\n'))
    (root / "kernel.py").unlink()
    (root / spec.kernel_file).write_text("# the kernel\n")
    if spec.launcher is not None:
        with pytest.raises(TaskError, match=f"a {re.escape(spec.label)} task needs a Python launcher"):
            load_task(root)
        (root / spec.launcher).write_text("def custom_kernel(x, y):\n    return x + y\n")
    task = load_task(root)
    assert task.backend_spec is spec
    assert task.kernel_file == spec.kernel_file
    assert task.entry_file == (spec.launcher or spec.kernel_file)
    assert _native_kernel(root) == root / spec.kernel_file
