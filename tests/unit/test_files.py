"""A person's files are replaced whole or not at all, and bytes that are not UTF-8 are named."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kerneltui.files import NotUtf8, read_utf8, write_text_atomic
from tests.conftest import fill_disk

OLD = "def kernel():\n    return 1\n"
NEW = "# a long edit\n" + "x = 1\n" * 4000  # more than a page: a write in place would stop part way


def test_full_disk_leaves_the_old_file_whole(full_disk: Path) -> None:
    kernel = full_disk / "kernel.py"
    kernel.write_text(OLD)
    fill_disk(full_disk)
    with pytest.raises(OSError) as caught:
        write_text_atomic(kernel, NEW)
    assert caught.value.errno == 28  # ENOSPC
    assert kernel.read_text() == OLD
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler", "kernel.py"]  # no temporary file left


def test_file_size_limit_leaves_the_old_file_whole(tmp_path: Path) -> None:
    # The same fault without root: the process may write no file larger than 4 KiB (EFBIG).
    kernel = tmp_path / "kernel.py"
    kernel.write_text(OLD)
    script = (
        "import resource, signal, sys\n"
        "from pathlib import Path\n"
        "from kerneltui.files import write_text_atomic\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "try:\n"
        f"    write_text_atomic(Path(sys.argv[1]), {NEW!r})\n"
        "except OSError as exc:\n"
        "    print(exc.errno)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(kernel)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "27", out.stderr  # EFBIG
    assert kernel.read_text() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kernel.py"]


def test_keeps_the_mode_and_the_symlink(tmp_path: Path) -> None:
    target = tmp_path / "versions" / "k2.py"
    target.parent.mkdir()
    target.write_text(OLD)
    target.chmod(0o640)
    link = tmp_path / "kernel.py"
    link.symlink_to(Path("versions") / "k2.py")
    write_text_atomic(link, NEW)
    assert link.is_symlink() and target.read_text() == NEW
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "task.toml", "name = 'x'\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "task.toml").stat().st_mode) == 0o644


def test_immutable_file_is_refused_and_kept(tmp_path: Path) -> None:
    kernel = tmp_path / "kernel.py"
    kernel.write_text(OLD)
    if subprocess.run(["chattr", "+i", str(kernel)], capture_output=True).returncode != 0:
        kernel.chmod(0o444)  # no chattr (not root, or a file system without flags): read-only instead
        if os.access(kernel, os.W_OK):
            pytest.skip(
                "neither chattr +i nor a read-only mode holds here (root on a file system without flags)"
            )
    try:
        with pytest.raises(PermissionError):
            write_text_atomic(kernel, NEW)
    finally:
        subprocess.run(["chattr", "-i", str(kernel)], capture_output=True)
    assert kernel.read_text() == OLD


def test_bad_byte_named_by_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "kernel.py"
    path.write_bytes("import torch\n# café ok\n# caf\xe9\n".encode()[:-3] + b"\xe9\n")
    with pytest.raises(NotUtf8) as caught:
        read_utf8(path)
    assert (caught.value.line, caught.value.column, caught.value.byte) == (3, 6, 0xE9)
    assert str(caught.value).startswith(f"{path}:3:6: byte 0xe9 at column 6 is not UTF-8")
