"""A run folder's name cannot be learned by watching the folders a kernel may not list (#47).

Run folders under the exchange root have names of 128 random bits and the box denies listing the
root, but Landlock does not govern inotify or fanotify, whose events name each new entry. A kernel
watches the exchange root, ``/dev/shm`` and its own run folder from its worker while the test makes a
new run folder (as ``wire.new_run_folder`` names one); it must neither watch nor learn the name.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
import uuid
from pathlib import Path

import pytest

from kerneltui.core.worker.contract.wire import new_run_folder
from tests.cheats.gallery import watch_probe
from tests.conftest import HAS_GPU

pytestmark = pytest.mark.skipif(HAS_GPU, reason="the CPU gallery judges the Triton interpreter's runs")


def _make_a_run_folder_once_watched(ready: Path, made: list[Path], done: threading.Event) -> None:
    while not done.is_set():
        if ready.exists():
            folder = new_run_folder()
            folder.mkdir(mode=0o700)
            made.append(folder)
            return
        time.sleep(0.1)


def test_a_kernel_cannot_watch_the_exchange_root_for_run_folder_names(gallery):
    tag = uuid.uuid4().hex
    ready, out = Path(f"/dev/shm/kerneltui-test-ready-{tag}"), Path(f"/dev/shm/kerneltui-test-watch-{tag}.json")
    made: list[Path] = []
    done = threading.Event()
    maker = threading.Thread(target=_make_a_run_folder_once_watched, args=(ready, made, done), daemon=True)
    maker.start()
    try:
        report = gallery.check("watches_for_run_folders", "vector_add", watch_probe(ready=str(ready), out=str(out)))
        assert out.exists(), [r.line() for r in report.results]
        found = json.loads(out.read_text())
    finally:
        done.set()
        maker.join(timeout=30)
        for path in (ready, out):
            path.unlink(missing_ok=True)
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)
    assert made, "the kernel never got as far as watching"
    assert not found["learned"], found  # before the box denied watches: the new run folder's name
    assert not found["planted"], found
    assert found["inotify"] == "denied: Operation not permitted", found
    assert found["fanotify"].startswith("denied: "), found
    assert report.ok, [r.line() for r in report.results]  # the kernel is honest otherwise: denied, not broken
