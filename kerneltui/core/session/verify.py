"""Re-verify a session: rerun its versions through the harness here and compare then with now.

Each version's saved text runs through the real loop (a standing pool of its own, fresh workers) against the
task as the session recorded it (the copy in ``task/``, copied to a scratch folder so nothing is
written into the session). A version is flagged when it passed then and fails now, or when its
median moved by more than the noise: 3x the combined relative standard error of both measurements,
and never less than 5%.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kerneltui.core.session.reader import LoadedSession
from kerneltui.core.session.record import SessionError
from kerneltui.core.session.timeline import Timeline, Version
from kerneltui.core.worker.contract.replies import DeviceInfo

MIN_NOISE = 0.05


@dataclass
class VerifiedVersion:
    number: int
    source_hash: str
    then_ok: bool
    then_correct: bool | None
    then_median_ms: float | None
    then_speedup: float | None
    now_ok: bool
    now_correct: bool | None
    now_median_ms: float | None
    now_speedup: float | None
    change_pct: float | None = None
    flags: list[str] = field(default_factory=list)
    now_failure: str = ""


@dataclass
class VerifyReport:
    session: str
    task: str
    device_then: str
    device_now: str
    rows: list[VerifiedVersion] = field(default_factory=list)
    note: str = ""

    @property
    def all_pass(self) -> bool:
        return all(not r.flags for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["all_pass"] = self.all_pass
        return data


def noise_threshold(then: Version, now_rel: float | None) -> float:
    parts = [x for x in (then.rel_noise, now_rel) if x is not None]
    combined = math.sqrt(sum(x * x for x in parts)) if parts else 0.0
    return max(MIN_NOISE, 3.0 * combined)


def compare(then: Version, now_results: list[Any], now_ok: bool) -> VerifiedVersion:
    now = Version(number=then.number, source_hash=then.source_hash, step=then.step, origin="verify", ok=now_ok,
                  results=list(now_results))
    row = VerifiedVersion(number=then.number, source_hash=then.source_hash, then_ok=then.ok,
                          then_correct=then.correct, then_median_ms=then.median_ms, then_speedup=then.speedup,
                          now_ok=now_ok, now_correct=now.correct, now_median_ms=now.median_ms, now_speedup=now.speedup)
    failed = next((r for r in now_results if r.status == "fail"), None)
    if failed is not None:
        row.now_failure = f"{failed.name}: {(failed.error or failed.summary or '').splitlines()[0] if (failed.error or failed.summary) else 'failed'}"
    if then.ok and not now_ok:
        row.flags.append("no longer passes")
    elif then.correct is True and now.correct is False:
        row.flags.append("no longer correct")
    if then.median_ms and now.median_ms:
        change = now.median_ms / then.median_ms - 1.0
        row.change_pct = change * 100
        limit = noise_threshold(then, now.rel_noise)
        if abs(change) > limit:
            row.flags.append(f"{'slower' if change > 0 else 'faster'} by {abs(change) * 100:.0f}% "
                             f"(noise {limit * 100:.0f}%)")
    return row


async def verify_session(session: LoadedSession, *, accepted_only: bool = True, timeout_s: float | None = None,
                         progress: Callable[[str], None] | None = None) -> VerifyReport:
    from kerneltui.core.loop_factory import PoolKind, open_loop
    from kerneltui.core.rungs.context import RunOptions
    from kerneltui.core.task import TaskError
    from kerneltui.core.task_loaders.load import load_task

    timeline = Timeline(session)
    versions = [v for v in timeline.versions if v.accepted or not accepted_only]
    report = VerifyReport(session=session.id, task=str(session.task.get("name", "?")),
                          device_then=_device_name(versions[-1].device if versions else {}), device_now="")
    if not versions:
        report.note = "no accepted versions in this session (use --all for every checked version)"
        return report
    if not session.task_dir.is_dir():
        raise SessionError(f"{session.folder}: the session has no copy of its task ({session.task_dir}); "
                           "it cannot be re-verified")
    with tempfile.TemporaryDirectory(prefix="kerneltui-verify-") as scratch:
        root = Path(scratch) / "task"
        shutil.copytree(session.task_dir, root)
        try:
            kernel_file = str(session.task.get("kernel_file") or "")
            task = load_task(str(root), str(root / kernel_file) if kernel_file else None)
        except TaskError as exc:
            raise SessionError(f"{session.folder}: the saved task does not load here: {exc}") from exc
        loop = open_loop(PoolKind.STANDING, task)
        try:
            for version in versions:
                text = session.source(version.source_hash)
                if text is None:
                    row = compare(version, [], False)
                    row.flags = ["source missing from the session"]
                    report.rows.append(row)
                    continue
                if progress:
                    progress(f"verifying v{version.number} ({version.source_hash[:10]}) …")
                result = await loop.run(RunOptions(kernel_source=text, record=False, origin="verify",
                                                   timeout_s=timeout_s))
                report.device_now = report.device_now or _device_name(result.device)
                report.rows.append(compare(version, result.results, result.ok))
        finally:
            await loop.close()
    return report


def _device_name(device: DeviceInfo) -> str:
    if not device:
        return "?"
    return str(device.get("name") or ("GPU" if device.get("gpu") else "CPU"))


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value * 1000:.1f} µs" if value < 1 else f"{value:.3f} ms"


def _x(value: float | None) -> str:
    return f"{value:.2f}×" if value is not None else "—"


def _verdict(ok: bool, correct: bool | None) -> str:
    if not ok:
        return "FAIL"
    return "pass" if correct is not False else "FAIL"


def render_table(report: VerifyReport) -> str:
    lines = [f"session {report.session} · task {report.task} · then on {report.device_then} · now on {report.device_now}"]
    if report.note:
        lines.append(report.note)
        return "\n".join(lines)
    header = ("version", "then", "median then", "speedup then", "now", "median now", "speedup now", "change", "flag")
    rows = [header]
    for r in report.rows:
        change = f"{r.change_pct:+.1f}%" if r.change_pct is not None else "—"
        flag = "; ".join(r.flags) if r.flags else "ok"
        if r.now_failure and r.flags:
            flag += f" ({r.now_failure})"
        rows.append((f"v{r.number} {r.source_hash[:8]}", _verdict(r.then_ok, r.then_correct), _ms(r.then_median_ms),
                     _x(r.then_speedup), _verdict(r.now_ok, r.now_correct), _ms(r.now_median_ms), _x(r.now_speedup),
                     change, flag))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])) + "  " + row[-1])
    flagged = sum(1 for r in report.rows if r.flags)
    lines.append(f"{len(report.rows)} versions re-verified; {flagged} flagged" if flagged
                 else f"{len(report.rows)} versions re-verified; all as before")
    if report.device_then != report.device_now:
        lines.append("the device differs from the session's: speed changes compare different machines")
    return "\n".join(lines)
