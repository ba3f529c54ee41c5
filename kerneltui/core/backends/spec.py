"""What kerneltui knows about a backend (a DSL a kernel is written in), as data.

Each ``core/backends/<name>.py`` holds one :class:`BackendSpec` (``SPEC``) next to its worker-side
``Backend`` class; ``core.backends.REGISTRY`` lists them. Everything outside ``core/backends/`` that
treats backends differently reads these fields instead of naming a backend: the task loaders
(kernel file, launcher, detection), the rungs (label, prechecks, dump, interpreter note), the
override and the trace (what each DSL supports), the sandbox (the compile caches a worker writes)
and the worker's warm-up (what it imports ahead). The spec imports nothing but the standard
library, so the parent and the UI read it without torch or any DSL installed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CacheHome:
    """The folders a library derives its default cache location from, read from kerneltui's
    environment (``sandbox.environment.shared_caches``), so a worker with a scratch ``HOME`` and
    ``TMPDIR`` still finds the user's caches."""

    env: Mapping[str, str]
    home: Path
    temp: str
    user: str  # the login name, or ``uid_<n>`` where there is none
    safe_user: str  # the same with the characters a file name cannot hold replaced


@dataclass(frozen=True)
class CompileCache:
    """A compile cache a worker shares with the other workers (and a judge has its own copy of)."""

    variable: str  # the environment variable the library reads its location from
    what: str  # how the box's description names it
    default: Callable[[CacheHome], str]  # where the library puts it when the variable is unset
    # The package whose compiler fills it: its folder is made only where the package is installed
    # (None: kerneltui's own cache, always made).
    library: str | None
    # Whether candidate kernels compile into it (a profile gives those caches fresh folders, so the
    # line tables name the profiled task copy); torch.compile's cache holds the baseline's code.
    holds_candidate_kernels: bool = True
    # The sub-folder a worker may write when the variable names a folder kerneltui uses for more
    # than this cache ("" : the whole folder); the judge's copy is then the sibling ``judge/``.
    part: str = ""


@dataclass(frozen=True)
class KernelMarker:
    """How the prechecks see that a kernel file defines a kernel of the backend."""

    pattern: re.Pattern[str]
    what: str  # "a @triton.jit kernel": the sentence a missing kernel is reported with


@dataclass(frozen=True)
class OverrideSupport:
    """Which compiler stages of the backend a person (or the agent) may hand-edit (``core.override``)."""

    stages: tuple[str, ...]  # upper-case stage names, the first the one to switch the asm view to
    # The edited file is named for the kernel file (``<stem>.ptx``, what ``kerneltui.cuda.load``
    # looks for) rather than for the kernel inside it.
    named_for_kernel_file: bool = False
    # The edit is keyed by the specialisation it came from (Triton's override key, from the dump).
    keyed_by_specialisation: bool = False


@dataclass(frozen=True)
class DslTracer:
    """A backend's own in-kernel tracer, used by the trace rung when the kernel's source asks for it."""

    source: str  # the trace source it is (``core.trace.sources``: "proton", "iket")
    asked_by: tuple[re.Pattern[str], ...]  # the source asks for it when every pattern is found

    def wanted_by(self, kernel_source: str) -> bool:
        return all(p.search(kernel_source) for p in self.asked_by)


@dataclass(frozen=True)
class BackendSpec:
    name: str  # what task.toml's ``backend``, ``--backend`` and the task model say
    label: str  # how messages name the DSL ("Triton", "CuTe DSL", "CUDA C++", …)
    kernel_file: str  # the kernel file a native task has when task.toml names none
    # The Python file that launches the kernel when the kernel file is not Python itself (CUDA C++:
    # ``launch.py`` defining custom_kernel); a native task of such a backend must have one.
    launcher: str | None = None
    # The kernel is torch code itself: torch's operators, kernels and memory are its work, so the
    # prechecks allow torch calls and the judge does not hold torch's share against it.
    torch_is_the_kernel: bool = False
    # The candidate must launch at least one kernel of the backend (correctness fails it otherwise).
    requires_launch: bool = True
    marker: KernelMarker | None = None  # None: the prechecks do not look for a kernel definition
    # Signs that a GPU MODE submission (which declares no DSL) is written in this backend.
    submission_signs: tuple[re.Pattern[str], ...] = ()
    dumps: bool = True  # the dump rung has compiler outputs to show
    override: OverrideSupport | None = None  # None: no hand-edited compiler output
    tracer: DslTracer | None = None  # None: only kerneltui's markers trace its kernels
    # With no GPU the kernels run in an interpreter (Triton's) rather than compile only.
    interpreted_without_gpu: bool = False
    # Modules a worker (or its zygote) imports ahead, after torch and this package (which brings
    # every backend's module): the DSL's, where importing it reads nothing of the task's (CuTe DSL
    # and TileLang read the task copy's folder and their targets from the environment when first
    # imported: they import in the worker).
    warm_imports: tuple[str, ...] = ()
    caches: tuple[CompileCache, ...] = ()
    # Prefixes of the environment variables the DSL reads (its settings, its compiler's): the
    # sandbox passes them to workers.
    env_prefixes: tuple[str, ...] = ()
