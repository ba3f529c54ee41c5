"""Worker side of hand-edited compiler output (``core.override``): point the backend at the folder.

Called by ``load`` before the candidate is imported, so its kernels compile from the edited files.
"""

from __future__ import annotations

import json
import os

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
    state.backend.use_override(folder, manifest)
    note = f"compiled from the hand-edited {manifest.get('stage')} in {rel_folder}/{manifest.get('file')}"
    state.notes.append(note)
    return note
