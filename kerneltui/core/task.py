"""The Task model and the one entry point that loads any supported task format.

A task is what the person is optimising: a slow reference, the kernel being written, the shapes it
is tested and benchmarked on, and how strict the comparison is. Three formats load into the same
:class:`Task` (see ``core.task_loaders``): the native directory (``task.toml`` + ``reference.py`` +
kernel), a KernelBench problem file, and a GPU MODE problem directory.

Loading never imports task code (the parent process does not import torch); functions and
signatures are checked on the syntax tree, and every problem is reported as a :class:`TaskError`
that names the file and line.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from kerneltui.core.backends import NAMES as BACKENDS
from kerneltui.core.backends import spec_of
from kerneltui.core.backends.spec import BackendSpec
from kerneltui.core.case_params import CaseParams
from kerneltui.core.metrics import ToleranceData
from kerneltui.core.task_error import TaskError, task_text, task_utf8
from kerneltui.core.task_loaders.constants import follow_in_candidate, rewrite
from kerneltui.core.task_loaders.containment import contained, read_contained
from kerneltui.files import os_reason

TaskFormat = Literal["native", "kernelbench", "gpumode"]
_OPERATOR = re.compile(r"^(?:aten(?:::|\.))?([A-Za-z_][A-Za-z0-9_]*)$")


# Where a task of each format lists the torch operators a kernel may leave to torch (a GPU MODE
# problem has no kerneltui settings of its own: there only the command line can).
ALLOW_OPS_WHERE = {"native": "task.toml", "kernelbench": "a `# kerneltui:` line of the problem file"}


def allow_ops_advice(op: str, task_format: str) -> str:
    """How a task of ``task_format`` lets torch's ``op`` stay in torch."""
    where = ALLOW_OPS_WHERE.get(task_format)
    return (f'allow_ops = ["{op}"] in {where}, or ' if where else "") + f"--allow-ops {op}"


def operator_name(text: str) -> str:
    """A torch operator as ``allow_ops`` lists it: ``conv2d``, ``aten::addmm`` or ``aten.addmm`` give
    the bare name; anything else gives "" (not an operator's name)."""
    m = _OPERATOR.match(text.strip())
    return m.group(1) if m else ""
# How several benchmark cases make one score (GPU MODE's ``ranking_by``): the last case's mean,
# the arithmetic mean or the geometric mean of the cases' means.
RankingBy = Literal["last", "mean", "geom"]
RANKINGS: tuple[RankingBy, ...] = ("last", "mean", "geom")

# Files that travel to a worker with the task: small sources only, never data or build output.
SOURCE_SUFFIXES = (".py", ".toml", ".yml", ".yaml", ".cu", ".cuh", ".h", ".hpp", ".cpp", ".ptx", ".json", ".txt")
MAX_SOURCE_BYTES = 2 * 1024 * 1024
# The task's context/ folder is the agent's reading (its context search and read_file, which keep a
# link out of it away from the model), not a source any worker receives, runs or stores.
CONTEXT_DIR = "context"




@dataclass(frozen=True)
class Case:
    """One test or benchmark case: keyword parameters for the input generator, and a seed."""

    params: CaseParams
    seed: int | None = None

    @property
    def label(self) -> str:
        if not self.params:
            return "default"
        return " ".join(f"{k}={v}" for k, v in self.params.items())

    def to_dict(self) -> CaseParams:
        """The parameters with the ``seed`` among them, when the case has one (as task.toml writes it)."""
        data = dict(self.params)
        if self.seed is not None:
            data["seed"] = self.seed
        return data


@dataclass(frozen=True)
class Tolerance:
    """Overrides of the dtype-aware gate (``None`` means the harness default for the dtype)."""

    atol: float | None = None
    rtol: float | None = None
    rel_l2: float | None = None  # bound on ||out - ref|| / ||ref||
    min_psnr_db: float | None = None  # reduced-precision tasks: extra requirements
    min_cosine: float | None = None
    golden: bool = True  # allow the fp64-golden rule when allclose fails

    def to_dict(self) -> ToleranceData:
        # A cast: the fields ToleranceData lists, those that are set.
        return cast(ToleranceData, {k: v for k, v in self.__dict__.items() if v is not None})


@dataclass(frozen=True)
class Timeouts:
    """Seconds each rung may take before its worker is killed."""

    compile: float = 180.0
    run: float = 60.0
    correctness: float = 300.0
    benchmark: float = 300.0
    dump: float = 180.0
    profile: float = 600.0
    trace: float = 300.0

    def for_rung(self, rung: str) -> float:
        return float(getattr(self, rung, self.run))

    def scaled_to(self, seconds: float) -> Timeouts:
        return Timeouts(**{k: seconds for k in self.__dict__})


class LoadOptionsData(TypedDict):
    """``LoadOptions.to_dict()``: plain JSON for the engine's socket and Ray."""

    backend: str | None
    constants: list[list[str]]  # [NAME, VALUE] pairs, as typed
    scale: float | None
    allow_ops: list[str]


@dataclass(frozen=True)
class LoadOptions:
    """What the command line adds to a task's own settings when it is loaded."""

    backend: str | None = None  # --backend: the DSL the kernel must be written in
    constants: tuple[tuple[str, str], ...] = ()  # --set NAME=VALUE (KernelBench module constants), as typed
    scale: float | None = None  # --scale F: every size constant of a KernelBench problem times F
    allow_ops: tuple[str, ...] = ()  # --allow-ops: torch operators the kernel may leave to torch (task's list too)

    def to_dict(self) -> LoadOptionsData:
        """Plain JSON types, for the engine's socket (``from_dict`` reads it back)."""
        return {"backend": self.backend, "constants": [list(pair) for pair in self.constants], "scale": self.scale,
                "allow_ops": list(self.allow_ops)}

    @classmethod
    def from_dict(cls, data: Any) -> LoadOptions:
        """The options ``to_dict`` wrote, checked as strictly as the command line checks its flags:
        an unknown key or a value of the wrong kind raises ValueError saying which."""
        if not isinstance(data, dict):
            raise ValueError(f"load options must be an object, not {type(data).__name__}")
        unknown = sorted(set(data) - {"backend", "constants", "scale", "allow_ops"})
        if unknown:
            raise ValueError(f"unknown load option(s) {', '.join(map(repr, unknown))} "
                             "(known: backend, constants, scale, allow_ops)")
        backend = data.get("backend")
        if backend is not None and backend not in BACKENDS:
            raise ValueError(f"load option backend must be one of {', '.join(BACKENDS)} or null, not {backend!r}")
        pairs = data.get("constants") or []
        if not isinstance(pairs, list) or not all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(v, str) and v for v in p)
                and p[0].isidentifier() for p in pairs):
            raise ValueError(f"load option constants must be a list of [NAME, VALUE] text pairs, not {pairs!r}")
        scale = data.get("scale")
        if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))
                                  or not 0 < scale < float("inf")):
            raise ValueError(f"load option scale must be a positive number or null, not {scale!r}")
        ops = data.get("allow_ops") or []
        if not isinstance(ops, list) or not all(isinstance(op, str) and operator_name(op) for op in ops):
            raise ValueError(f"load option allow_ops must be a list of torch operator names, not {ops!r}")
        return cls(backend=backend, constants=tuple((p[0], p[1]) for p in pairs),
                   scale=None if scale is None else float(scale), allow_ops=tuple(ops))


@dataclass(frozen=True)
class Task:
    name: str
    description: str
    backend: str  # a name in core.backends.REGISTRY (BACKENDS), checked by the loaders
    format: TaskFormat
    root: Path
    kernel_file: str  # the file being written, relative to root
    reference_file: str
    entry_file: str  # the Python module whose custom_kernel (or ModelNew) the harness calls
    tests: tuple[Case, ...]
    benchmarks: tuple[Case, ...]
    tolerance: Tolerance = field(default_factory=Tolerance)
    timeouts: Timeouts = field(default_factory=Timeouts)
    inplace: bool = False
    seeds: int = 5
    allow: frozenset[str] = frozenset()
    # torch operators the kernel may leave to torch (``allow_ops``): by the name the kernel calls
    # (conv2d, linear) or ATen's (convolution, addmm); core.worker.child.evidence matches both.
    allow_ops: frozenset[str] = frozenset()
    arch: str = "sm_90a"
    extra: dict[str, Any] = field(default_factory=dict)  # format-specific settings
    backend_from: str = ""  # where the backend was declared, for messages ("task.toml:5", "--backend")
    ranking_by: RankingBy = "geom"
    # Files the task pulls from outside its folder (GPU MODE's ``files:``): name in the task copy -> path.
    linked_files: dict[str, str] = field(default_factory=dict)
    # Module constants of the reference rewritten for this run (KernelBench ``--set``/``--scale``).
    constants: dict[str, Any] = field(default_factory=dict)
    # What the command line added when the task was loaded (``load_task`` sets it): whoever loads the
    # task again from disk (the engine) passes it on, so both see the same task.
    load: LoadOptions = field(default_factory=LoadOptions)

    @property
    def backend_spec(self) -> BackendSpec:
        """What kerneltui knows about the task's backend (``core.backends``)."""
        return spec_of(self.backend)

    @property
    def kernel_path(self) -> Path:
        if self.kernel_file in self.linked_files:  # a candidate checked from outside the folder
            return Path(self.linked_files[self.kernel_file])
        return self.root / self.kernel_file

    @property
    def reference_path(self) -> Path:
        return self.root / self.reference_file

    @property
    def entry_path(self) -> Path:
        return self.root / self.entry_file

    @property
    def state_dir(self) -> Path:
        """Where kerneltui keeps this task's versions, history and dumps."""
        if self.format == "kernelbench":
            return self.root / ".kerneltui" / Path(self.reference_file).stem
        return self.root / ".kerneltui"

    @property
    def versions_dir(self) -> Path:
        """One folder per checked version, named by its source hash (``version_dir``)."""
        return self.state_dir / "versions"

    def version_dir(self, digest: str) -> Path:
        """The folder of the version whose source hash is ``digest``: its source, dump, trace, profile."""
        return self.versions_dir / digest

    def watched_paths(self) -> list[Path]:
        """Files whose save reruns the loop."""
        return [Path(self.linked_files[name]) if name in self.linked_files else self.root / name
                for name in sorted(self.source_files())]

    def source_files(self) -> list[str]:
        """Relative paths of the task's small source files (what a worker receives).

        A KernelBench problem is one self-contained file, and its folder (a level of the suite)
        holds a hundred others: only the problem and its candidate travel. The task's context/ is not
        among them (``CONTEXT_DIR``). Each must resolve inside the folder, linked files aside
        (``containment``): TaskError otherwise."""
        names: list[str] = []
        folder = [] if self.format == "kernelbench" else sorted(self.root.rglob("*"))
        for path in folder:
            rel = path.relative_to(self.root)
            if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                continue
            if rel.parts[0] == CONTEXT_DIR:
                continue
            if not path.is_file() or path.suffix not in SOURCE_SUFFIXES:
                continue
            if len(rel.parts) > 3:
                continue
            try:
                if path.stat().st_size > MAX_SOURCE_BYTES:
                    continue
            except OSError:
                continue
            names.append(rel.as_posix())
        for required in (self.kernel_file, self.reference_file, self.entry_file, *self.linked_files):
            if required not in names:
                names.append(required)
        for name in names:
            if name not in self.linked_files:
                contained(self.root, name)
        return names

    def published_sources(self) -> dict[str, str]:
        """The task's source files as text, as published: linked files in place under their names, no
        module constant rewritten. With ``load``, what another process (a Ray node) loads this task from."""
        files: dict[str, str] = {}
        for name in self.source_files():
            path = Path(self.linked_files[name]) if name in self.linked_files else self.root / name
            try:
                data = path.read_bytes() if name in self.linked_files else read_contained(self.root, name)
            except OSError as exc:
                raise TaskError(f"cannot read {name}: {exc.strerror}", path) from exc
            files[name] = task_utf8(data, path)
        return files

    def read_sources(self, replaced: dict[str, str] | None = None) -> dict[str, str]:
        """The task's source files as this run uses them (module constants rewritten), those in
        ``replaced`` (e.g. a proposed kernel) with its text."""
        files = self.published_sources()
        published = files.get(self.reference_file)
        if self.constants and published is not None:
            files[self.reference_file] = rewrite(published, self.constants, self.reference_path)
        if replaced:
            files.update(replaced)
        if self.constants and published is not None and self.kernel_file in files:
            # The candidate's own copies of those constants follow, or it runs at the published size.
            files[self.kernel_file] = follow_in_candidate(files[self.kernel_file], published, self.constants)[0]
        return files

    def constants_in_kernel(self) -> list[str]:
        """The rewritten constants the kernel file repeats, which follow the run's values too."""
        if not self.constants:
            return []
        try:
            reference = self.reference_path.read_text(encoding="utf-8", errors="replace")
            kernel = self.kernel_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        return follow_in_candidate(kernel, reference, self.constants)[1]

    def kernel_source(self) -> str:
        """The kernel's text, read inside the task folder (``containment``) unless it is a linked file."""
        try:
            if self.kernel_file in self.linked_files:
                return task_text(self.kernel_path)
            return task_utf8(read_contained(self.root, self.kernel_file), self.kernel_path)
        except FileNotFoundError as exc:
            raise TaskError("the kernel file does not exist", self.kernel_path) from exc
        except OSError as exc:
            raise TaskError(f"cannot read the kernel file: {os_reason(exc)}", self.kernel_path) from exc

    def to_dict(self) -> TaskData:
        """What a worker needs to know about the task (JSON types only)."""
        return {
            "name": self.name,
            "backend": self.backend,
            "format": self.format,
            "kernel_file": self.kernel_file,
            "reference_file": self.reference_file,
            "entry_file": self.entry_file,
            "tests": [c.to_dict() for c in self.tests],
            "benchmarks": [c.to_dict() for c in self.benchmarks],
            "tolerance": self.tolerance.to_dict(),
            "inplace": self.inplace,
            "seeds": self.seeds,
            "allow": sorted(self.allow),
            "allow_ops": sorted(self.allow_ops),
            "arch": self.arch,
            "extra": self.extra,
        }


class TaskData(TypedDict, total=False):
    """``Task.to_dict()``: the task as a worker holds it (every key once installed; none before)."""

    name: str
    backend: str  # a name in core.backends.REGISTRY
    format: str
    kernel_file: str
    reference_file: str
    entry_file: str
    tests: list[CaseParams]  # each case's parameters and seed (Case.to_dict)
    benchmarks: list[CaseParams]
    tolerance: ToleranceData
    inplace: bool
    seeds: int
    allow: list[str]
    allow_ops: list[str]
    arch: str
    extra: dict[str, Any]  # format-specific settings (Task.extra)


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
