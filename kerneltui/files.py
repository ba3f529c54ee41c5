"""A person's files, read and written so that no byte is lost and every fault names the file.

``write_text_atomic`` is the one way kerneltui writes a file a person owns (a kernel, a task file):
the new text goes to a temporary file in the same folder, is flushed to the disk (fsync) and only
then renamed over the old name, so a full disk or a killed process leaves either the old file or the
new one, never a truncated mix. The file keeps its mode; a symbolic link keeps pointing where it
did (its target is replaced). ``read_utf8`` reads a text file and turns bytes that are not UTF-8
into ``NotUtf8``, which names the file, line and column of the first bad byte.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path


class NotUtf8(ValueError):
    """A text file holding bytes that are not UTF-8: where the first one is and what to do."""

    def __init__(self, path: Path, line: int, column: int, byte: int) -> None:
        self.path, self.line, self.column, self.byte = path, line, column, byte
        self.reason = (
            f"byte 0x{byte:02x} at column {column} is not UTF-8 "
            "(save the file as UTF-8, or remove that byte)"
        )
        super().__init__(f"{path}:{line}:{column}: {self.reason}")


def utf8_text(data: bytes, path: Path) -> str:
    """``data`` decoded as UTF-8, or ``NotUtf8`` at the first byte that is not (line and column 1-based,
    the column counted in characters of the line's valid start)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        start_of_line = before.rfind(b"\n") + 1
        column = len(before[start_of_line:].decode("utf-8", errors="replace")) + 1
        raise NotUtf8(path, line, column, data[exc.start]) from None


def read_utf8(path: Path) -> str:
    """The file's text; ``NotUtf8`` for bytes that are not UTF-8, ``OSError`` when it cannot be read."""
    return utf8_text(Path(path).read_bytes(), Path(path))


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path``'s content with ``text`` (UTF-8) all at once: a temporary file in the same
    folder, fsync, rename. Raises ``OSError`` (the file untouched) when any step fails."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    target = Path(os.path.realpath(path))  # a symlink keeps pointing at its target, which is replaced
    try:
        mode: int | None = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    if mode is not None and not os.access(target, os.W_OK):
        # rename() would replace a file the person made read-only (chmod a-w): refuse as open() would.
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".saving", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            else:  # a new file gets the mode open() would give it (0666 less the umask), not mkstemp's 0600
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(handle.fileno(), 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(target.parent)


def _fsync_folder(folder: Path) -> None:
    """The rename itself reaches the disk (best effort: some file systems cannot fsync a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def os_reason(exc: OSError) -> str:
    """What went wrong, in the system's words, lower case: "no space left on device"."""
    text = exc.strerror or str(exc)
    return text[:1].lower() + text[1:]
