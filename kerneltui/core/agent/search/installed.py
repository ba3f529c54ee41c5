"""The DSL packages the workers import, found on disk: their language, examples and docs, and their version.

The installed triton, CuTe DSL (the ``cutlass`` package of ``nvidia-cutlass-dsl``) and TileLang are
the API of the version in use, which an upstream clone in context/ may not be. They are located with
``importlib.util.find_spec`` (the parent never imports them: this only reads where their files are)
in the environment the local workers run in, which is this one (``LocalRunner`` starts
``sys.executable``). Only the folders that are the language's own surface are searched (``language/``,
CuTe DSL's ``cute/``, ``pipeline/`` and ``utils/``, any ``examples/`` and ``docs/``), not the compiler,
runtime or bindings around them.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PREFIX = "installed"  # how the model names these files: installed/<package>/<path in the package>


@dataclass(frozen=True)
class DslPackage:
    """How to find one DSL's sources: its import name, its distributions, the folders that are its language."""

    name: str  # the import name: triton, cutlass, tilelang
    dsl: str  # what a person calls it
    distributions: tuple[str, ...]  # where its version is read from, first found wins
    parts: tuple[str, ...]  # folders of the package that are its language (relative to the package folder)


# Examples and documentation, wherever a package ships them.
EXTRA_PARTS = ("examples", "docs", "doc")
DSL_PACKAGES: tuple[DslPackage, ...] = (
    DslPackage("triton", "Triton", ("triton",), ("language", "experimental/gluon/language")),
    DslPackage("cutlass", "CuTe DSL", ("nvidia-cutlass-dsl",), ("cute", "pipeline", "utils")),
    DslPackage("tilelang", "TileLang", ("tilelang",), ("language",)),
)


@dataclass(frozen=True)
class InstalledPackage:
    """One installed DSL package: where it is, which of its folders are searched, and its version."""

    name: str
    dsl: str
    version: str  # "" when no distribution metadata says
    root: Path  # the package folder (holds __init__.py)
    parts: tuple[str, ...]  # the searched folders under root that exist

    @property
    def label(self) -> str:
        """``triton 3.6.0``: what a hit from this package is labelled with."""
        return f"{self.name} {self.version}" if self.version else f"{self.name} (version unknown)"

    @property
    def shown(self) -> str:
        """How the model names the package folder: ``installed/triton``."""
        return f"{PREFIX}/{self.name}"

    def includes(self, rel: str) -> bool:
        """Whether a path relative to the package folder lies in one of the searched folders."""
        return any(rel == part or rel.startswith(part + "/") for part in self.parts)


def installed_packages(
    table: Sequence[DslPackage] = DSL_PACKAGES, search_path: Sequence[str] | None = None
) -> list[InstalledPackage]:
    """The DSL packages of ``table`` that are installed (on ``search_path``, default ``sys.path``),
    without importing them."""
    found: list[InstalledPackage] = []
    for package in table:
        root = _package_root(package.name, search_path)
        if root is None:
            continue
        parts = tuple(p for p in (*package.parts, *EXTRA_PARTS) if (root / p).is_dir())
        if parts:
            found.append(
                InstalledPackage(package.name, package.dsl, _version(package, search_path), root, parts)
            )
    return found


def _package_root(name: str, search_path: Sequence[str] | None) -> Path | None:
    try:
        spec = (
            importlib.machinery.PathFinder.find_spec(name, list(search_path))
            if search_path is not None
            else importlib.util.find_spec(name)
        )
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]).resolve() if locations else None


def _version(package: DslPackage, search_path: Sequence[str] | None) -> str:
    for dist_name in package.distributions:
        if search_path is None:
            try:
                return importlib.metadata.version(dist_name)
            except importlib.metadata.PackageNotFoundError:
                continue
        for dist in importlib.metadata.distributions(name=dist_name, path=list(search_path)):
            return str(dist.version)
    return ""
