"""The backends kerneltui knows: their descriptions, and their worker-side code.

``REGISTRY`` lists one :class:`~kerneltui.core.backends.spec.BackendSpec` per backend, in the order
messages list them; ``spec_of(name)`` reads one. Adding a backend is a module here (its ``SPEC`` and
its worker-side ``Backend`` class, on the model of ``torch.py``) and its line in ``_MODULES``.

``backend_for(name)`` returns a fresh worker-side ``Backend`` (``base.BaseBackend``): warm imports,
launch hooks, compile, dump. Those classes import torch and the DSLs inside their methods only, in
workers; importing this package imports neither.
"""

from __future__ import annotations

from types import ModuleType

from kerneltui.core.backends import cuda, cute, tilelang, torch, triton
from kerneltui.core.backends.base import BaseBackend
from kerneltui.core.backends.spec import BackendSpec, CompileCache

_MODULES: tuple[ModuleType, ...] = (triton, cute, cuda, torch, tilelang)
REGISTRY: tuple[BackendSpec, ...] = tuple(module.SPEC for module in _MODULES)
NAMES: tuple[str, ...] = tuple(spec.name for spec in REGISTRY)
# A native task or KernelBench problem that declares no backend is written in this one.
DEFAULT = triton.SPEC.name
_SPECS: dict[str, BackendSpec] = {spec.name: spec for spec in REGISTRY}
_WORKER_SIDE: dict[str, type[BaseBackend]] = {module.SPEC.name: module.Backend for module in _MODULES}


def spec_of(name: str) -> BackendSpec:
    """The description of backend ``name``; ValueError for a name kerneltui does not know."""
    spec = _SPECS.get(name)
    if spec is None:
        raise ValueError(f"unknown backend {name!r}; expected one of {', '.join(NAMES)}")
    return spec


def backend_for(name: str) -> BaseBackend:
    """A fresh worker-side object of backend ``name`` (ValueError for a name kerneltui does not know)."""
    return _WORKER_SIDE[spec_of(name).name]()


def undeclared_submission(source: str) -> str:
    """The backend a GPU MODE submission (which declares none) is written in: the first in the
    registry whose signs its source shows, else the one whose kernel is torch code."""
    for spec in REGISTRY:
        if any(sign.search(source) for sign in spec.submission_signs):
            return spec.name
    return next(spec.name for spec in REGISTRY if spec.torch_is_the_kernel)


def compile_caches() -> list[CompileCache]:
    """Every registered backend's compile caches, each once, in registry order."""
    seen: dict[str, CompileCache] = {}
    for spec in REGISTRY:
        for cache in spec.caches:
            seen.setdefault(cache.variable, cache)
    return list(seen.values())


def torch_is_the_kernel(name: object) -> bool:
    """Whether the kernel of backend ``name`` is torch code itself (``BackendSpec.torch_is_the_kernel``),
    for the worker's plain task dicts: a missing or unknown name is a DSL's, whose torch work is judged."""
    spec = _SPECS.get(name) if isinstance(name, str) else None
    return spec is not None and spec.torch_is_the_kernel
