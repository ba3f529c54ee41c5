"""Hand-edited compiler output: a version whose PTX (or Triton's TTGIR) was edited by a person.

"Edit this stage" writes the shown stage of the current version to
``<task>/.kerneltui/override/<version>/`` with a manifest (``override.json``: the base version,
stage, kernel and backend), opens it in an editor, and runs the loop with
``RunOptions.override_folder`` set to that folder. The loop sends the folder's files to the
workers with the task and counts them in the version hash, so the edited build is a version of
its own: checked, benchmarked, kept in history (its files are copied into the version folder).

How the worker uses the folder (``core.worker.child.override``):

* CUDA C++: ``kerneltui.cuda.load("kernel.cu")`` takes ``<folder>/kernel.ptx`` instead of nvcc's
  PTX and assembles it with ptxas (``kerneltui.cuda.nvcc.build_from_ptx``), then loads the cubin
  with the driver (``cuModuleLoadData``) as always.
* Triton: Triton's own kernel override (``knobs.compilation.override`` with the override folder
  laid out as Triton expects: ``<key>/<kernel>.ptx``, the key being the specialisation's source
  hash recorded by the dump), compiled into a private cache so the shared one is never polluted.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kerneltui.core.backends import REGISTRY
from kerneltui.core.task import Task, TaskError

OVERRIDE_ROOT = ".kerneltui/override"
MANIFEST = "override.json"
SUFFIX = {"PTX": ".ptx", "TTGIR": ".ttgir"}
PTX_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(")
TTGIR_FUNC = re.compile(r"tt\.func\s+(?:public\s+)?@([\w$]+)\s*\(")


class OverrideError(TaskError):
    """An override that cannot be written or used; the message says what to do."""


@dataclass(frozen=True)
class Override:
    folder: Path  # absolute
    rel_folder: str  # relative to the task root: what RunOptions.override_folder holds
    file: Path  # the file to edit
    stage: str
    kernel: str
    backend: str
    base_version: str
    key: str | None  # Triton: the specialisation's override key (None: every variant of the kernel)


def supported() -> str:
    """The backends whose compiler output can be hand-edited, with their stages, for messages:
    "Triton (PTX, TTGIR) and CUDA C++ (PTX)"."""
    named = [f"{spec.label} ({', '.join(spec.override.stages)})" for spec in REGISTRY if spec.override is not None]
    return " and ".join(named) if len(named) < 3 else ", ".join(named[:-1]) + " and " + named[-1]


def stages_of(task: Task) -> tuple[str, ...] | None:
    """The stages of ``task``'s backend that can be hand-edited (None: none can)."""
    support = task.backend_spec.override
    return None if support is None else support.stages


def kernel_name(stage: str, text: str) -> str:
    pattern = PTX_ENTRY if stage.upper() == "PTX" else TTGIR_FUNC
    names = pattern.findall(text)
    if not names:
        raise OverrideError(f"the {stage} text defines no kernel entry ({'.entry' if stage.upper() == 'PTX' else 'tt.func'}): "
                            "nothing to override")
    return names[0]


def folder_for(task: Task, version: str) -> Path:
    return task.root / OVERRIDE_ROOT / version


def write(task: Task, version: str, stage: str, text: str, *, key: str | None = None,
          edited: str | None = None) -> Override:
    """Write ``text`` (the ``stage`` of ``version``) as an override to edit; an existing edited file is kept.
    ``edited``: the edited text itself (an agent's proposal), written over whatever is there."""
    stage = stage.upper()
    allowed = stages_of(task)
    if allowed is None:
        raise OverrideError(f"hand-edited compiler output is supported for {supported()}, "
                            f"not for {task.backend} tasks")
    if stage not in allowed:
        raise OverrideError(f"{task.backend} tasks can override {' or '.join(allowed)}, not {stage}: "
                            f"switch the asm view to {allowed[0]} (] / [) and edit again")
    if not re.fullmatch(r"[0-9A-Za-z_.-]+", version):
        raise OverrideError(f"not a version name: {version!r}")
    kernel = kernel_name(stage, text)
    folder = folder_for(task, version)
    support = task.backend_spec.override
    if support is not None and support.named_for_kernel_file:
        name = Path(task.kernel_file).stem + SUFFIX[stage]  # kerneltui.cuda.load looks for <cu stem>.ptx
        file = folder / name
    elif key:
        file = folder / key / f"{kernel}{SUFFIX[stage]}"
    else:
        file = folder / f"{kernel}{SUFFIX[stage]}"
    file.parent.mkdir(parents=True, exist_ok=True)
    if not file.exists() or edited is not None:
        file.write_text(text if edited is None else edited, encoding="utf-8")
        (folder / f"base{SUFFIX[stage]}").write_text(text, encoding="utf-8")
    ov = Override(folder=folder, rel_folder=f"{OVERRIDE_ROOT}/{version}", file=file, stage=stage, kernel=kernel,
                  backend=task.backend, base_version=version, key=key)
    manifest = {**asdict(ov), "folder": ov.rel_folder, "file": file.relative_to(folder).as_posix(),
                "created": time.time()}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    return ov


def read_files(task: Task, rel_folder: str) -> dict[str, str]:
    """Every file of the override folder, keyed by its task-relative path (what the worker gets)."""
    folder = (task.root / rel_folder).resolve()
    root = (task.root / OVERRIDE_ROOT).resolve()
    if root not in folder.parents:
        raise OverrideError(f"the override folder {rel_folder} is not under {OVERRIDE_ROOT}/ of the task")
    if not (folder / MANIFEST).is_file():
        raise OverrideError(f"{rel_folder} has no {MANIFEST}: write it with the asm view's 'edit this stage' (e)")
    files = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            files[path.relative_to(task.root.resolve()).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
    return files


def manifest(files: dict[str, str], rel_folder: str) -> dict[str, Any]:
    try:
        return dict(json.loads(files[f"{rel_folder}/{MANIFEST}"]))
    except (KeyError, ValueError) as exc:
        raise OverrideError(f"{rel_folder}/{MANIFEST} is missing or not JSON") from exc


def fingerprint(files: dict[str, str]) -> str:
    """What makes an override a version of its own: the edited files (the manifest's time aside)."""
    h = hashlib.sha256()
    for name in sorted(files):
        if name.endswith(MANIFEST) or Path(name).name.startswith("base."):
            continue
        h.update(name.encode())
        h.update(files[name].encode())
    return h.hexdigest()[:16]


def specialisation_key(task: Task, version_dir: Path, stage: str, text: str) -> str | None:
    """The key an override of ``text`` is written under, for a backend whose overrides are keyed by
    specialisation (Triton's); None for the others, and where the dump does not say."""
    support = task.backend_spec.override
    if support is None or not support.keyed_by_specialisation:
        return None
    return triton_key(version_dir, stage, text)


def triton_key(version_dir: Path, stage: str, text: str) -> str | None:
    """The override key of the Triton specialisation whose ``stage`` is ``text`` (from the dump)."""
    from kerneltui.core.asm.store import Dump, DumpMissing

    try:
        dump = Dump.load(version_dir)
    except (DumpMissing, OSError, ValueError):
        return None
    wanted = text.strip()
    for variant in dump.variants_all:
        if stage.lower() not in variant.stages:
            continue
        try:
            if dump.stage_text(variant, stage.lower()).strip() == wanted:
                key = variant.metadata.get("override_key")
                return str(key) if key else None
        except (OSError, LookupError):
            continue
    return None
