"""Turn an exception raised by candidate code into a message a person (and a model) can act on.

The error points at the candidate's own file and line, not at the launch site or the harness: a
Triton kernel run by the interpreter fails inside the interpreter's frames, and the line that broke
is in the *cause* of the ``InterpreterError`` it raises; a JIT compile error carries its line in the
AST node (the backend's ``locate_error`` maps it). The traceback kept is the task's own frames, with
paths relative to the task; kerneltui's, Triton's and torch's frames are counted, not shown.
"""

from __future__ import annotations

import re
import sysconfig
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kerneltui.core.worker.contract.replies import WorkerError

CUDA_FATAL = re.compile(
    r"illegal memory access|illegal instruction|misaligned address|unspecified launch failure|"
    r"device-side assert|an illegal|CUDA error|cudaError|CUDA_ERROR|launch timed out|uncorrectable ECC",
    re.IGNORECASE,
)
# Exceptions that only wrap the candidate's real error; their cause is what the person must read.
WRAPPERS = frozenset({"InterpreterError"})
# Triton's CompilationError counts lines from the kernel's ``def``: "at 5:33:".
JIT_POSITION = re.compile(r"^at (\d+):(\d+):")

TaskPath = Callable[[str], str | None]


class TaskProblem(Exception):
    """The task itself cannot run here (e.g. its reference needs a GPU): a task error, not the kernel's."""

    harness_message = True


def describe_exception(exc: BaseException, state: Any) -> WorkerError:
    """``{"type", "message", "traceback", "file", "line", "cuda_fatal"}`` for an exception in the worker.

    ``file``/``line`` name the failing line of a task file (or are None); ``traceback`` holds the
    task's frames only, oldest call first, with paths relative to the task.
    """
    task_dir = str(state.task_dir)

    def relative(text: str) -> str:
        return text.replace(task_dir + "/", "").replace(task_dir, ".")

    def task_path(filename: str) -> str | None:
        # "<frozen importlib…>" and "<string>" are no files; resolved against the task copy (the
        # worker's working folder) they would look like task files.
        return None if filename.startswith("<") else state.original_path(filename)

    shown = _split(exc)[1]
    # The harness's own failures read as sentences; everything else keeps its exception type.
    message = str(shown) if getattr(shown, "harness_message", False) else f"{type(shown).__name__}: {shown}".strip()
    message = relative(message)
    located = None
    if state.backend is not None:
        try:
            located = state.backend.locate_error(exc, state)
        except Exception:
            located = None
    file, line = located if located else _innermost_task_frame(exc, task_path)
    trace = relative(task_traceback(exc, task_path))
    position = JIT_POSITION.match(str(shown))
    if located and position:
        # The same place, in the file's own lines, so it reads as the location every other error has.
        where = f"at {file}:{line}:{position.group(2)}:"
        message = message.replace(position.group(0), where, 1)
        trace = trace.replace(f": {position.group(0)}", f": {where}", 1)
    if CUDA_FATAL.search(message) or CUDA_FATAL.search(str(exc)):
        state.poisoned = True
    return {
        "type": type(exc).__name__,
        "message": message,
        "traceback": trace,
        "file": file,
        "line": line,
        "cuda_fatal": state.poisoned,
        "task_error": isinstance(exc, TaskProblem),
    }


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes, outermost first (as ``raise … from``/during-handling link them)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return seen


def _split(exc: BaseException) -> tuple[list[BaseException], BaseException, list[BaseException]]:
    """(wrappers, the error they wrap, its own causes): an ``InterpreterError`` only wraps the
    candidate's error, raised in the kernel's body, and is dropped from what the person reads."""
    chain = _chain(exc)
    index = 0
    while index + 1 < len(chain) and type(chain[index]).__name__ in WRAPPERS:
        index += 1
    return chain[:index], chain[index], chain[index + 1:]


def _task_frames(link: BaseException, task_path: TaskPath) -> list[tuple[str, traceback.FrameSummary]]:
    return [(rel, frame) for frame in traceback.extract_tb(link.__traceback__)
            if (rel := task_path(frame.filename)) is not None and frame.lineno]


def _innermost_task_frame(exc: BaseException, task_path: TaskPath) -> tuple[str | None, int | None]:
    """The deepest task frame of the error itself, else of its causes, else of its wrappers.

    The interpreter raised its ``InterpreterError`` at the launch (``custom_kernel``'s line), but
    the error it wraps was raised in the kernel's body: that frame is the bug.
    """
    wrappers, shown, causes = _split(exc)
    for link in [shown, *causes, *reversed(wrappers)]:
        frames = _task_frames(link, task_path)
        if frames:
            rel, frame = frames[-1]
            return rel, frame.lineno
        if isinstance(link, SyntaxError) and link.filename and link.lineno:
            rel_syntax = task_path(link.filename)
            if rel_syntax is not None:
                return rel_syntax, link.lineno
    return None, None


def _library_path(filename: str) -> str:
    """A library or harness file as ``triton/runtime/jit.py``: relative to its install folder."""
    roots = [sysconfig.get_paths().get(k, "") for k in ("purelib", "platlib", "stdlib")]
    roots.append(str(Path(__file__).resolve().parents[3]))  # the folder holding the kerneltui package
    for root in sorted({r.rstrip("/") for r in roots if r}, key=len, reverse=True):
        if filename.startswith(root + "/"):
            return filename[len(root) + 1:]
    return Path(filename).name


def _frames_text(links: list[BaseException], task_path: TaskPath) -> tuple[list[str], int]:
    """The task's frames of ``links`` (a call path, outermost first) and how many others were left out."""
    lines: list[str] = []
    dropped = 0
    innermost_library: str | None = None
    for link in links:
        for frame in traceback.extract_tb(link.__traceback__):
            rel = task_path(frame.filename)
            if rel is None:
                dropped += 1
                if not frame.filename.startswith("<"):
                    innermost_library = f"{_library_path(frame.filename)}:{frame.lineno}"
                continue
            innermost_library = None
            lines.append(f'  File "{rel}", line {frame.lineno}, in {frame.name}')
            if frame.line:
                lines.append(f"    {frame.line.strip()}")
    if innermost_library and not isinstance(links[-1], SyntaxError):  # the file and line follow it
        lines.append(f"  (raised in {innermost_library})")
    return lines, dropped


def task_traceback(exc: BaseException, task_path: TaskPath) -> str:
    """The error as the task's frames only, oldest call first, ending with the error itself; then
    each cause the same way. Other frames are counted, not shown; when the innermost frame is not in
    the task (a library rejected an argument), its file and line are named, relative to the install."""
    wrappers, shown, causes = _split(exc)
    lines, dropped = _frames_text([*wrappers, shown], task_path)
    sections = [(lines, shown)]
    for cause in causes:
        cause_lines, cause_dropped = _frames_text([cause], task_path)
        dropped += cause_dropped
        sections.append((cause_lines, cause))
    head = "Traceback (the task's frames"
    out = [head + (f"; {dropped} frame(s) of kerneltui and libraries left out):" if dropped else "):")]
    for n, (frame_lines, link) in enumerate(sections):
        if n:
            out.append("which was raised while handling:" if link is not sections[n - 1][1].__cause__
                       else "which was caused by:")
        out += frame_lines
        lines_of_message = str(link).splitlines() or [""]
        if getattr(link, "harness_message", False) or (link is shown and len(lines_of_message) > 1
                                                       and not isinstance(link, SyntaxError)):
            # The error's message is shown whole as the rung's error; its first line closes the trace.
            more = " …" if len(lines_of_message) > 1 else ""
            out.append(f"{type(link).__name__}: {lines_of_message[0]}{more}")
        else:
            out.append("".join(traceback.format_exception_only(type(link), link)).rstrip())
    return "\n".join(out) + "\n"
