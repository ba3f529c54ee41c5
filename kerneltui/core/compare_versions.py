"""Which two kernel texts ``kerneltui compare TASK [A] [B]`` compares.

A version is named by its number in the task's history (``3`` or ``#3``), a prefix of its source
hash (at least 4 hex digits, as ``kerneltui history`` lists them), or a file path. Left out, A is
the last version that passed its checks in the history and B is the kernel file on disk.
"""

from __future__ import annotations

import re
from pathlib import Path

from kerneltui.core.compare_run import KernelVersion
from kerneltui.core.history import HistoryEntry, HistoryStore
from kerneltui.core.task import Task

MIN_HASH_PREFIX = 4
_NUMBER = re.compile(r"#?(\d+)")
_HEX = re.compile(r"[0-9a-fA-F]+")


class VersionError(Exception):
    """A version that cannot be found, with what to give instead."""


def on_disk(task: Task) -> KernelVersion:
    path = task.root / task.kernel_file
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise VersionError(f"cannot read the kernel file {path}: {exc.strerror}") from exc
    return KernelVersion(f"{task.kernel_file} (on disk)", text)


def last_passing(task: Task, store: HistoryStore) -> KernelVersion:
    entries = store.entries()
    if not entries:
        raise VersionError(f"no history for {task.name} yet ({store.path}), so there is no last passing version to "
                           f"compare with: run `kerneltui check` on a version first, or name both versions "
                           f"(numbers, hash prefixes or files)")
    passing = [e for e in entries if e.ok]
    if not passing:
        raise VersionError(f"none of the {len(entries)} versions in {store.path} passed its checks: name version A "
                           "(a number, a hash prefix or a file)")
    return _from_entry(store, passing[-1])


def _from_entry(store: HistoryStore, entry: HistoryEntry) -> KernelVersion:
    text = store.source(entry.number)
    if text is None:
        raise VersionError(f"version #{entry.number}'s source is missing from {store.path}")
    return KernelVersion(f"#{entry.number} ({entry.source_hash[:8]})", text, entry.number)


def resolve(task: Task, store: HistoryStore, spec: str, cwd: Path | None = None) -> KernelVersion:
    """One named version: a history number, a hash prefix, or a file (tried in that order)."""
    spec = spec.strip()
    if (m := _NUMBER.fullmatch(spec)) is not None and not _is_file(spec, cwd):
        number = int(m.group(1))
        entry = store.entry(number)
        if entry is None:
            known = store.entries()
            span = f"#{known[0].number}–#{known[-1].number}" if known else "none yet"
            raise VersionError(f"no version {spec} in {store.path} (versions: {span}; `kerneltui history` lists them)")
        return _from_entry(store, entry)
    if _is_file(spec, cwd):
        path = (cwd or Path.cwd()) / spec
        return KernelVersion(spec, path.read_text(encoding="utf-8"))
    if _HEX.fullmatch(spec) and len(spec) >= MIN_HASH_PREFIX:
        found = {e.source_hash: e for e in store.entries() if e.source_hash.lower().startswith(spec.lower())}
        if len(found) == 1:
            return _from_entry(store, next(iter(found.values())))
        if len(found) > 1:
            listed = ", ".join(f"#{e.number} {h[:12]}" for h, e in sorted(found.items()))
            raise VersionError(f"the hash prefix {spec} matches {len(found)} versions ({listed}): give more digits")
    raise VersionError(f"unknown version {spec!r}: give a number from `kerneltui history`, a source hash prefix "
                       f"(at least {MIN_HASH_PREFIX} hex digits) or a kernel file that exists")


def _is_file(spec: str, cwd: Path | None) -> bool:
    return ((cwd or Path.cwd()) / spec).is_file()


def pick(task: Task, store: HistoryStore, a: str | None, b: str | None,
         cwd: Path | None = None) -> tuple[KernelVersion, KernelVersion]:
    """A and B as the command names them: both left out, the last passing version against the file on
    disk; one given, it against the file on disk."""
    first = resolve(task, store, a, cwd) if a else last_passing(task, store)
    second = resolve(task, store, b, cwd) if b else on_disk(task)
    return first, second
