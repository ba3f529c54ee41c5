"""Hand-edited compiler stages (``core.override``): the asm view's ``e`` writes the shown PTX or TTGIR
of the current version to an override folder, opens it in $VISUAL/$EDITOR, then runs the loop on it;
the palette runs the last one again."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from kerneltui.core import override

if TYPE_CHECKING:
    from kerneltui.ui.app_ports import AppHost


class StageEdits:
    def __init__(self, app: AppHost) -> None:
        self.app = app
        self.folder: str | None = None  # the override folder the palette can run, relative to the task

    def edit(self, stage: str, text: str, version_dir: Path | None) -> None:
        app = self.app
        if version_dir is None:
            app.notify("run the loop first: the override is written from a checked version's output", severity="warning")
            return
        task = app.kernel_task
        key = override.specialisation_key(task, version_dir, stage, text)
        try:
            edited = override.write(task, version_dir.name, stage, text, key=key)
        except override.OverrideError as exc:
            app.notify(str(exc), severity="error")
            return
        self.folder = edited.rel_folder
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if editor and not app.is_headless:
            with app.suspend():
                subprocess.run([*shlex.split(editor), str(edited.file)], check=False)
            self.run()
            return
        app.notify(f"wrote {edited.file}; edit it (no $VISUAL/$EDITOR set), then run it from the palette: "
                   "'Run the hand-edited override'", timeout=10)

    def run(self) -> None:
        app = self.app
        if not self.folder:
            app.notify("no hand-edited override yet: in the asm view, show PTX (or TTGIR) and press e",
                       severity="warning")
            return
        try:
            override.read_files(app.kernel_task, self.folder)
        except override.OverrideError as exc:
            app.notify(str(exc), severity="error")
            return
        app.notify(f"running the loop on the hand-edited {self.folder}", timeout=4)
        app.runs.request("override", None, override_folder=self.folder)
