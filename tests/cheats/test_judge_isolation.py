"""The kernel's process holds nothing that judges it: no reference module, no reference function,
no expected output, no seed. Checked from inside, by a kernel that looks everywhere a cheat would
(the static prechecks are left out of these runs: the looking itself is what they forbid)."""

from __future__ import annotations

import pytest

from tests.cheats.gallery import HONEST_ADD
from tests.conftest import HAS_GPU

pytestmark = pytest.mark.skipif(HAS_GPU, reason="the CPU gallery judges the Triton interpreter's runs")

LOOKS_AROUND = HONEST_ADD + '''
import gc as _gc
import sys as _sys

_found = []
for _name, _module in list(_sys.modules.items()):
    _file = str(getattr(_module, "__file__", "") or "")
    if _file.endswith("reference.py") or callable(_module.__dict__.get("ref_kernel")):
        _found.append(f"module {_name}")
for _obj in _gc.get_objects():
    if callable(_obj) and getattr(_obj, "__name__", "") in ("ref_kernel", "generate_input"):
        _found.append(f"function {_obj.__name__} in {getattr(_obj, '__module__', '?')}")
_judge = _sys.modules.get("kerneltui.core.worker.child.ops_judge")
if _judge is not None:
    _found += [f"a judge's check {type(o).__name__}" for o in _gc.get_objects() if isinstance(o, _judge.Check)]
if _found:
    raise RuntimeError("the kernel's process holds what judges it: " + "; ".join(_found[:5]))


def custom_kernel(x, y):  # noqa: F811  (looks again on every call, when the checks are under way)
    for obj in _gc.get_objects():
        if callable(obj) and getattr(obj, "__name__", "") == "ref_kernel":
            raise RuntimeError("ref_kernel is reachable from the kernel's process")
    out = torch.empty_like(x)
    launch(x, y, out)
    return out
'''


def test_nothing_that_judges_is_in_the_kernels_process(gallery):
    report = gallery.check("looks_around", "vector_add", LOOKS_AROUND, rungs=["compile", "run", "correctness"], seeds=2)
    lines = [r.line() for r in report.results]
    assert report.ok, lines


def test_the_stand_in_for_the_reference_says_why_it_is_empty(gallery):
    kernel = HONEST_ADD + '''
import importlib as _il


def custom_kernel(x, y):  # noqa: F811
    return _il.import_module("reference").ref_kernel(x, y)
'''
    report = gallery.check("imports_reference", "vector_add", kernel, rungs=["compile", "run"])
    run = report.result("run")
    assert run is not None and run.status == "fail"
    assert "is not in the kernel's process" in (run.error or "") and "judge process" in (run.error or "")
