"""The environment a worker starts with: an allow-list, never a copy of kerneltui's own.

kerneltui's environment holds API keys (the agent needs them) and whatever else the person exported;
candidate code must see none of it. A worker gets:

* ``PATH``, the locale, ``PYTHONPATH`` (tests and worktrees rely on it), the library and compiler
  search paths, the Python and conda environment markers, the thread-count knobs;
* every variable of the GPU stack, by prefix: CUDA, NVIDIA, cuDNN/cuBLAS, NCCL, Triton, torch
  and its compiler, CuTe DSL/CUTLASS, TileLang/TVM, kerneltui's own;
* names the person lists in ``[sandbox] pass_env``;
* ``HOME`` pointing at a scratch home and ``TMPDIR`` at a scratch temp folder (both removed with the
  worker), and the compile caches pinned to where they are for kerneltui, so a fresh ``HOME`` does not
  cost every worker a recompile.

A name that looks like a credential (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``,
``*CREDENTIAL*``, ``*_AUTH*``) is never passed, whatever list it is on; nor is a value equal to the
value of such a variable.
"""

from __future__ import annotations

import getpass
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kerneltui.core.backends import REGISTRY, compile_caches
from kerneltui.core.backends.spec import CacheHome, CompileCache
from kerneltui.core.redact import MIN_SECRET, is_secret_name

PASS_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
    "PYTHONWARNINGS", "PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONFAULTHANDLER", "VIRTUAL_ENV", "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
    "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "USER", "LOGNAME", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
})
# The GPU stack's and kerneltui's own, then each backend's (BackendSpec.env_prefixes: torch and the DSLs).
PASS_PREFIXES = ("LC_", "CUDA_", "CUDNN_", "CUBLAS", "CUFFT_", "CUSPARSE_", "NVIDIA_", "NV_", "NVCC_", "NCCL_",
                 "NSIGHT_", "NCU_", "KERNELTUI_", *(prefix for spec in REGISTRY for prefix in spec.env_prefixes))
# Set by kerneltui itself for every worker; not taken from the parent.
OWN_NAMES = ("HOME", "TMPDIR", "TMP", "TEMP")
# kerneltui's own settings that say where the person's files are: not for candidate code.
PRIVATE_KERNELTUI = ("KERNELTUI_CONFIG", "KERNELTUI_CONFIG_DIR", "KERNELTUI_DATA_DIR", "KERNELTUI_SESSIONS_DIR")
SCRATCH_ENV = "KERNELTUI_WORKER_SCRATCH"


def _allowed(name: str, extra_names: frozenset[str]) -> bool:
    if name in OWN_NAMES or name in PRIVATE_KERNELTUI or is_secret_name(name):
        return False
    return name in PASS_NAMES or name in extra_names or name.startswith(PASS_PREFIXES)


@dataclass(frozen=True)
class SharedCache:
    """A compile cache every worker shares: which backend cache it is, and where."""

    cache: CompileCache
    path: str
    what: str

    @property
    def variable(self) -> str:
        return self.cache.variable


def shared_caches(base: Mapping[str, str]) -> list[SharedCache]:
    """Where the compile caches of every backend (``core.backends.compile_caches``) are for
    kerneltui's own user, computed from ``base`` (kerneltui's environment), the way each library
    computes its default, so a worker with a scratch ``HOME`` and ``TMPDIR`` keeps using them."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}"
    home = CacheHome(env=base, home=Path(base.get("HOME") or Path.home()),
                     temp=base.get("TMPDIR") or tempfile.gettempdir(), user=user,
                     safe_user=re.sub(r'[\\/:*?"<>|]', "_", user))
    return [SharedCache(cache, base.get(cache.variable) or cache.default(home), cache.what) for cache in compile_caches()]


def judge_caches(caches: Iterable[SharedCache]) -> list[SharedCache]:
    """The judge's own compile caches, beside the shared ones and never beneath them: a candidate's
    box may write the shared caches, so code planted there (a Triton or Inductor artefact) must never
    be what the judge loads when it compiles the reference (torch.compile for the baseline)."""
    return [SharedCache(c.cache, os.path.join(c.path, "judge") if c.cache.part else c.path.rstrip("/") + "-judge",
                        f"{c.what}, the judge's own") for c in caches]


def cache_write_paths(caches: Iterable[SharedCache]) -> list[str]:
    """The folders a boxed worker may write: each cache (of a folder kerneltui uses for more, only
    the cache's part: kerneltui's cuda/)."""
    return [os.path.join(c.path, c.cache.part) if c.cache.part else c.path for c in caches]


@dataclass(frozen=True)
class WorkerEnvironment:
    env: dict[str, str]
    passed: tuple[str, ...]  # names taken from kerneltui's environment
    withheld: tuple[str, ...]  # names of kerneltui's environment not passed
    refused: tuple[str, ...] = field(default=())  # names asked for (pass_env, extra) but refused as credentials


def secret_values(base: Mapping[str, str]) -> set[str]:
    return {v for k, v in base.items() if is_secret_name(k) and len(v) >= MIN_SECRET}


def worker_environment(base: Mapping[str, str], *, scratch: str, extra: Mapping[str, str] | None = None,
                       pass_env: Iterable[str] = ()) -> WorkerEnvironment:
    """The environment of a worker whose scratch folder is ``scratch`` (``scratch/home`` is its
    ``HOME``, ``scratch/tmp`` its ``TMPDIR``). ``extra`` is what kerneltui itself adds
    (``CUDA_VISIBLE_DEVICES`` of a batch slot, a ``PYTHONPATH``)."""
    wanted = frozenset(pass_env)
    secrets = secret_values(base)
    env: dict[str, str] = {}
    passed, withheld, refused = [], [], []
    for name, value in base.items():
        if _allowed(name, wanted) and value not in secrets:
            env[name] = value
            passed.append(name)
        else:
            withheld.append(name)
            if name in wanted:
                refused.append(name)
    for name, value in (extra or {}).items():
        if is_secret_name(name) or value in secrets:
            refused.append(name)
            continue
        env[name] = value
    for cache in shared_caches(base):
        env.setdefault(cache.variable, cache.path)
    env["PYTHONUNBUFFERED"] = "1"
    env["HOME"] = os.path.join(scratch, "home")
    env["TMPDIR"] = env["TMP"] = env["TEMP"] = os.path.join(scratch, "tmp")
    env[SCRATCH_ENV] = scratch
    if "PATH" not in env:
        env["PATH"] = os.defpath
    return WorkerEnvironment(env, tuple(sorted(passed)), tuple(sorted(withheld)), tuple(sorted(set(refused))))
