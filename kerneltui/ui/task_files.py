"""The task's files on disk, seen by the watcher, and the editor's copy of the kernel: every save
reruns the loop; an outside change of the kernel reloads it or asks; task.toml or the reference
reloads the task. Unsaved edits are kept in ``<task>/.kerneltui/unsaved/`` (``core.unsaved``) before anything
replaces them, and when a save fails."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kerneltui.core import events as ev
from kerneltui.core import unsaved
from kerneltui.core.task import TaskError, source_hash
from kerneltui.core.task_error import task_text
from kerneltui.core.task_loaders.load import load_task
from kerneltui.core.watcher import watch_task
from kerneltui.files import os_reason
from kerneltui.ui.screens.file_changed import FileChangedScreen

if TYPE_CHECKING:
    from kerneltui.ui.app_ports import AppHost


class TaskFiles:
    def __init__(self, app: AppHost) -> None:
        self.app = app

    def backup_dir(self) -> Path:
        return unsaved.task_folder(self.app.kernel_task.state_dir)

    def backup(self, name: str, text: str) -> Path | str:
        """Keep ``text`` (edits about to be replaced) in the task's unsaved folder (else the data
        folder's); its path, or why no copy could be written."""
        task = self.app.kernel_task
        try:
            return unsaved.keep(task.state_dir, task.root, name, text)
        except unsaved.NotKept as exc:
            return f"nowhere on disk ({exc})"

    def keep_on_close(self, reason: str) -> None:
        """The app is closing on a signal with unsaved edits: keep them and say where in the session log
        (``EditsKept``), where a resume finds them."""
        name = self.app.kernel_task.kernel_path.name
        saved = self.backup(name, self.app.editor.text)
        if isinstance(saved, Path):
            self.app.bridge.emit(ev.EditsKept(file=name, path=str(saved), reason=reason))

    def save_failed(self, text: str, error: OSError) -> None:
        """ctrl+s could not write the kernel: the file is as it was, the text stays in the editor and a
        copy is kept; say why and where."""
        name = self.app.kernel_task.kernel_path.name
        saved = self.backup(name, text)
        if isinstance(saved, Path):  # the session's last word until a later save: a resume brings it back
            self.app.bridge.emit(ev.EditsKept(file=name, path=str(saved), reason="a failed save"))
        self.app.notify(f"could not save {name}: {os_reason(error)} — your text is kept in {saved} and stays in "
                        "the editor (free space or fix the file's permissions, then ctrl+s again)",
                        severity="error", timeout=20)

    def keep_unsaved_edits(self) -> None:
        """Before the editor is closed (a task switch): its unsaved edits go to a backup, said where."""
        editor = self.app.editor
        if editor.dirty:
            name = self.app.kernel_task.kernel_path.name
            saved = self.backup(name, editor.text)
            self.app.notify(f"unsaved edits of {name} kept in {saved}", timeout=10)

    def ask_to_switch(self) -> None:
        """Prompt for another task and switch to it (not in a replay: the switch would write)."""
        from kerneltui.ui.screens.prompt import PromptScreen

        app = self.app
        if app.refuse_writes():
            return

        def chosen(value: str | None) -> None:
            if value:
                app.run_worker(app.switch_task(value), group="switch", exclusive=True)

        app.push_screen(PromptScreen("Switch task", "a task directory, a KernelBench file or a GPU MODE directory",
                                     str(app.kernel_task.root)), chosen)

    def watch(self) -> None:
        """Every save of a task file becomes a FileChanged event (recorded, then routed back here)."""
        self.app.run_worker(self._watch(), group="watch", exclusive=True)

    async def _watch(self) -> None:
        async for batch in watch_task(self.app.kernel_task):
            for path, digest in batch:
                self.app.bridge.emit(ev.FileChanged(path=str(path), source_hash=digest))

    def changed(self, event: ev.FileChanged) -> None:
        app = self.app
        task = app.kernel_task
        path = Path(event.path).resolve()
        if path == task.kernel_path.resolve():
            self.kernel_changed(path)
            return
        if path.name == "task.toml" or path == task.reference_path.resolve():
            try:
                app.bench.reload_task(load_task(str(task.root), None))
            except TaskError as exc:
                app.notify(f"{path.name}: {exc}", severity="error", timeout=10)
                return
            app.notify(f"{path.name} changed: task reloaded", timeout=3)
        app.runs.request("save")

    def kernel_changed(self, path: Path) -> None:
        """The watcher saw the kernel file change: our own save, a reload, or a question when the editor
        holds edits of its own. Every case reruns the loop on what is on disk."""
        app = self.app
        editor = app.editor
        try:
            text = task_text(path)
        except TaskError as exc:
            # Bytes that are not UTF-8: nothing reloaded or run; what the editor holds stays.
            kept = " — your text stays in the editor (ctrl+s writes it over the file)" if editor.dirty else ""
            app.notify(f"{path.name} changed on disk and cannot be read: {exc}{kept}", severity="error", timeout=15)
            editor.disk_text = ""  # the editor no longer holds what is on disk: a save is needed
            editor.dirty = True
            return
        except OSError as exc:
            app.notify(f"cannot read {path.name}: {exc.strerror}", severity="error")
            return
        if source_hash(text) == source_hash(editor.disk_text):
            # Our own save: the run already started when it was saved.
            if not app.runs.started_for(path, text):
                app.runs.request("save")
            return
        if not editor.dirty:
            editor.replace_from_disk(text)
            app.notify(f"{path.name} changed on disk: reloaded", timeout=3)
        else:
            editor.disk_text = text  # a later ctrl+s knowingly overwrites this version
            if any(isinstance(screen, FileChangedScreen) for screen in app.screen_stack):
                # Already asking: the answer applies to the newest disk version.
                app.runs.request("save")
                return

            def answer(choice: str | None) -> None:
                if choice == "reload":
                    saved = self.backup(path.name, editor.text)
                    try:
                        editor.replace_from_disk(task_text(path))
                    except (TaskError, OSError) as exc:
                        app.notify(f"cannot reload {path.name}: {exc}", severity="error", timeout=10)
                    app.notify(f"your edits are saved in {saved}", timeout=10)
                else:
                    editor.dirty = editor.text != editor.disk_text

            app.push_screen(FileChangedScreen(path.name, str(self.backup_dir()) + "/"), answer)
        app.runs.request("save")
