"""Worker side of hand-edited compiler output (``core.override``): point the backend at the folder.

Called by ``load`` before the candidate is imported, so its kernels compile from the edited files.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from kerneltui.core.worker.child.state import WorkerState

PTX_OVERRIDE_ENV = "KERNELTUI_PTX_OVERRIDE_DIR"  # read by kerneltui.cuda.load


class OverrideUnusable(RuntimeError):
    pass


def activate(state: WorkerState, rel_folder: str) -> str:
    folder = (state.task_dir / rel_folder).resolve()
    if state.task_dir.resolve() not in folder.parents or not folder.is_dir():
        raise OverrideUnusable(f"the override folder {rel_folder} did not arrive with the task")
    try:
        manifest = json.loads((folder / "override.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OverrideUnusable(f"{rel_folder}/override.json: {exc}") from exc
    edited = folder / str(manifest.get("file", ""))
    if not edited.is_file():
        raise OverrideUnusable(f"{rel_folder}: the edited file {manifest.get('file')!r} is missing")
    os.environ[PTX_OVERRIDE_ENV] = str(folder)
    if state.backend_name == "triton":
        _triton(folder, manifest)
    note = f"compiled from the hand-edited {manifest.get('stage')} in {rel_folder}/{manifest.get('file')}"
    state.notes.append(note)
    return note


def _triton(folder: Path, manifest: dict[str, Any]) -> None:
    """Triton's kernel override: ``knobs.compilation.override`` + ``knobs.cache.override_dir``, whose
    layout is ``<key>/<kernel>.<stage>``. Without a key (no dump of the base version) the edited file
    is offered for every specialisation of the kernel, under whatever key Triton asks for."""
    from triton import knobs

    knobs.compilation.override = True
    knobs.cache.override_dir = str(folder)
    # A private cache: the overridden kernel must not land in the shared cache under the key of
    # the unedited one (Triton's cache key does not include the override).
    knobs.cache.dir = tempfile.mkdtemp(prefix="kerneltui-override-cache-")
    if manifest.get("key"):
        return
    from triton.runtime.cache import FileCacheManager

    edited = folder / str(manifest["file"])

    class AnyKeyOverride(FileCacheManager):
        def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
            super().__init__(key, override=override, dump=dump)
            if override:
                target = Path(self.cache_dir)
                if not target.exists():
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(edited, target / edited.name)

    knobs.cache.manager_class = AnyKeyOverride
