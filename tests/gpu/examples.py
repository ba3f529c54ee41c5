"""The bundled examples as GPU test parameters: one whose DSL is not installed on the GPU machine is
skipped with the reason and how to stage it, instead of failing as if kerneltui were broken."""

from __future__ import annotations

import importlib.util
import tomllib

import pytest

from tests.conftest import EXAMPLES

# Backend -> the Python package its kernels import (Triton and CUDA C++ need only torch).
DSL_PACKAGES = {"cute": "cutlass", "tilelang": "tilelang"}
STAGE_HINT = "stage its wheels for the GPU machine: ../shared/tools/device-wheels.sh --cutlass --big tilelang"


def missing_dsl(backend: str) -> str:
    """Why an example of ``backend`` cannot run here, or "" when it can."""
    package = DSL_PACKAGES.get(backend)
    if package is None or importlib.util.find_spec(package) is not None:
        return ""
    return f"the {backend} DSL ({package}) is not installed ({STAGE_HINT})"


def needs_dsl(backend: str) -> pytest.MarkDecorator:
    why = missing_dsl(backend)
    return pytest.mark.skipif(bool(why), reason=why or "installed")


def example_params() -> list:
    params = []
    for folder in sorted(p for p in EXAMPLES.iterdir() if (p / "task.toml").exists()):
        backend = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8")).get("backend", "triton")
        params.append(pytest.param(folder.name, marks=needs_dsl(backend), id=folder.name))
    return params
