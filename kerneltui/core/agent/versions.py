"""How the agent reaches the history store, the asm dumps and the Nsight Compute brief.

Each function works with what the loop itself produces (``RunReport``, the version folder
``<task>/.kerneltui/versions/<source hash>/``). When something is not available for a version the
message says so plainly and says how to get it.
"""

from __future__ import annotations

from pathlib import Path

from kerneltui.core.loop import RunReport
from kerneltui.core.rungs.context import RunOptions
from kerneltui.core.task import Task

# Stage name → file suffixes the dump rung writes into the version folder.
ASM_STAGES: dict[str, tuple[str, ...]] = {
    "ptx": (".ptx",), "sass": (".sass",), "ttir": (".ttir",), "ttgir": (".ttgir",), "llir": (".llir", ".ll"),
    "mlir": (".mlir",), "cuda": (".cu",), "source": (".py", ".cu"),
}
MAX_ASM_LINES = 400


class Unavailable(Exception):
    """What the agent asked for does not exist (yet); the message says why and what would produce it."""


async def record_in_history(task: Task, source: str, report: RunReport, options: RunOptions) -> str | None:
    """Store a verified version in the task's history; a note for the person, or None (there is none now:
    every build has the store, and a failure to write it raises)."""
    from kerneltui.core.history import observer_for

    observer_for(task)(task, source, report, options)
    return None


def read_asm(task: Task, source_hash: str, stage: str, kernel: str | None = None,
             start_line: int | None = None, end_line: int | None = None, grep: str | None = None) -> str:
    """One compiler stage of a checked version, as numbered lines (optionally filtered by ``grep``)."""
    stage = stage.lower().strip()
    folder = task.version_dir(source_hash)
    found = _read_stage_from_dump(folder, stage, kernel)
    summary = ""
    if found is not None:
        text, summary = found
    else:
        text = _read_stage_file(folder, stage, kernel)
    lines = text.splitlines()
    numbered = [(n, line) for n, line in enumerate(lines, 1)]
    if grep:
        needle = grep.lower()
        numbered = [(n, line) for n, line in numbered if needle in line.lower()]
    start = max(1, start_line or 1)
    if start_line or end_line:
        numbered = [(n, line) for n, line in numbered if start <= n <= (end_line or len(lines))]
    shown = numbered[:MAX_ASM_LINES]
    head = f"{stage} of version {source_hash}" + (f", kernel {kernel}" if kernel else "") + f": {len(lines)} lines"
    if summary:
        head += f" ({summary})"
    if grep:
        head += f", {len(numbered)} matching {grep!r}"
    if len(numbered) > len(shown):
        head += f" (showing {len(shown)}; narrow with start_line/end_line or grep)"
    return head + "\n" + "\n".join(f"{n:>6}  {line}" for n, line in shown)


def _read_stage_from_dump(folder: Path, stage: str, kernel: str | None) -> tuple[str, str] | None:
    """The stage from the dump rung's index (``core.asm.store.Dump``), with its resource summary.

    None when the version has no dump; then the stage files are looked up in the version folder by suffix.
    """
    from kerneltui.core.asm.store import Dump, DumpMissing

    try:
        dump = Dump.load(folder)
    except DumpMissing:
        return None
    try:
        variant = dump.variant(kernel)
        return str(dump.stage_text(variant, stage)), dump.summary
    except LookupError as exc:  # a kernel or stage the dump does not have; the message lists what it has
        raise Unavailable(str(exc)) from exc


def _read_stage_file(folder: Path, stage: str, kernel: str | None) -> str:
    suffixes = ASM_STAGES.get(stage)
    if suffixes is None:
        raise Unavailable(f"unknown stage {stage!r}; stages: {', '.join(s for s in ASM_STAGES if s != 'source')}")
    if not folder.is_dir():
        raise Unavailable(f"no dumps for this version yet ({folder} does not exist): run the loop with the dump "
                          f"rung (run_candidate with rungs=['dump']) where that rung is available")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in suffixes)
    if stage == "source":
        files = [p for p in files if p.parent == folder]
    if kernel:
        files = [p for p in files if kernel in p.name]
    if not files:
        present = sorted({p.suffix for p in folder.rglob("*") if p.is_file() and p.suffix})
        raise Unavailable(f"no {stage} for this version in {folder} (found: {', '.join(present) or 'nothing'}). "
                          f"The dump rung writes the stages; run it (rungs=['dump']) if this build has it")
    if len(files) > 1 and not kernel:
        names = ", ".join(p.name for p in files[:10])
        return f"// {len(files)} files for {stage}: {names}; showing {files[0].name} (pass kernel=NAME for another)\n" \
               + files[0].read_text(encoding="utf-8", errors="replace")
    return files[0].read_text(encoding="utf-8", errors="replace")


def profile_brief(task: Task, report: RunReport | None) -> str:
    """The Nsight Compute brief for the agent: the saved profile of the version, else the profile rung's text."""
    if report is not None:
        folder = task.version_dir(report.source_hash)
        saved = _saved_profile_brief(folder)
        if saved:
            return saved
        result = report.result("profile")
        if result is not None:
            if result.status in ("fail", "skip"):
                raise Unavailable(f"the profile rung {'failed' if result.status == 'fail' else 'was skipped'}: "
                                  f"{result.error or result.summary}")
            return result.details or result.summary
    raise Unavailable("no profile for this version: the profile rung runs on demand on a GPU machine with ncu "
                      "(run_candidate with rungs=['profile'])")


def _saved_profile_brief(folder: Path) -> str | None:
    """``profile.json`` in the version folder, rendered by the profile module's brief for the agent."""
    from kerneltui.core.profile.render import render_brief
    from kerneltui.core.profile.runner import load_profile
    from kerneltui.core.profile.summary import ProfileSummary

    result = (load_profile(folder) or {}).get("result")
    if not isinstance(result, dict) or not isinstance(result.get("summary"), dict):
        return None
    return render_brief(ProfileSummary.from_dict(result["summary"]))
