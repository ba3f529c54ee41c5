"""The integrity summary of one run: which defences against reward hacks ran and what each found.

Parent side, pure Python: it reads the rung results the loop already has, so ``check --json``, the
history and the TUI's rung panel all show the same account. Each defence belongs to one rung and
names the hacks it answers (numbered as in docs/integrity.md). A defence *caught* something when the
rung failed with that defence's own message, *warned* when the rung passed with it among its
warnings, *passed* when its rung passed without it, *stopped* when its rung failed on another
finding first, and *not run* when its rung did not run (the reason is the rung's).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kerneltui.core.rungs.result import RungResult
from kerneltui.core.rungs.rung_metrics import benchmark_metrics


@dataclass(frozen=True)
class Defence:
    key: str
    title: str
    rung: str
    hacks: tuple[int, ...]
    phrases: tuple[str, ...]  # fragments of the messages this defence writes


DEFENCES: tuple[Defence, ...] = (
    Defence("static", "static checks: library ops, the reference, streams, threads, patching, introspection, "
            "descriptors, persisting L2", "prechecks", (1, 2, 4, 13, 14), ("STRICT", "prechecks")),
    Defence("interpreted_body", "under the Triton interpreter a jit body may use only triton.language, other jit "
            "functions and constexpr values (it runs as Python there), and the Python a launch runs outside its "
            "programs (a grid function, hooks) may not change the launch's arguments", "run", (1,),
            ("uses what is not Triton's language", "has no source kerneltui can read",
             "outside the kernel's programs")),
    Defence("judge", "reference, expected outputs, comparison and verdict in a judge process that never runs the "
            "kernel; the kernel's process gets a copy of the inputs and hands back outputs", "correctness",
            (1, 4, 6, 13), ("is not in the kernel's process",)),
    Defence("identity", "timers, torch functions and kerneltui's code in the kernel's process checked for "
            "replacement (object and code) after import and after every call", "compile", (4,),
            ("harness functions replaced", "benchmark machinery replaced")),
    Defence("channel", "replies authenticated with a per-worker key (forged frames rejected)", "compile", (4,),
            ("result channel carried bytes",)),
    Defence("launch", "a kernel of the task's backend must launch", "correctness", (1,), ("kernel was launched",)),
    Defence("evidence", "what produced each output, recorded as the kernel ran: torch operators, the backend's "
            "launches, data from the host, memory made outside the record, GPU kernels of libraries", "correctness",
            (1,), ("was computed by torch", "values made on the host", "neither torch nor a", "never written by a",
                   "the work was done outside", "switches the operator record off", "the operator record was",
                   "GPU kernel of torch or a library", "operator record cannot see")),
    Defence("late_writes", "each output's bytes at the kernel's return, sent on the authenticated channel before "
            "kerneltui's own steps run; the judge's copy must match (nothing the kernel left running may write it "
            "later)", "correctness", (3,), ("was written after the call returned", "sent no digest of it")),
    Defence("plain", "outputs are plain tensors (a subclass decides what its own methods return, when they are "
            "read)", "run", (3,), ("is a tensor subclass",)),
    Defence("inputs", "reference first on clones; input hashes before and after", "correctness", (6,),
            ("modified its input",)),
    Defence("aliasing", "outputs must not alias inputs, nor change when the kernel is called again", "correctness",
            (3,), ("shares memory with an input", "changed when the kernel was called again")),
    Defence("poison", "fresh allocations poisoned with NaN", "correctness", (7,), ("NaN where the reference is finite",)),
    Defence("determinism", "second run with other garbage in every fresh allocation", "correctness", (7,),
            ("different garbage", "not deterministic")),
    Defence("gate", "dtype-aware allclose with a scale-aware bound (relative L2); checker sanity", "correctness",
            (8,), ("relative L2 error", "cannot tell right from wrong", "elements outside atol", "NaN/Inf placement")),
    Defence("seeds", "every test shape × seeds + a hidden per-run seed", "correctness", (9, 11),
            ("hidden seed fails",)),
    Defence("golden", "float64-golden rule", "correctness", (10,), ("float64-golden rule fails",)),
    Defence("recheck", "fresh unseen inputs for every warm-up and timed call, every output rechecked", "benchmark",
            (5, 13), ("returned a wrong result",)),
    Defence("side_work", "device idle check after the timed stream; NaN trap during the flush", "benchmark", (2, 3),
            ("still busy after the timed stream",)),
    Defence("harness_guard", "benchmark machinery checked for replacement", "benchmark", (4,),
            ("benchmark machinery replaced",)),
    Defence("l2", "L2 flushed (≥ 2× its size) and persisting lines reset before every call", "benchmark", (14,), ()),
    Defence("floor", "per-case speed-of-light clamp before aggregates; times under the physical floor fail",
            "roofline", (12,), ("physical floor",)),
)


@dataclass
class Finding:
    key: str
    title: str
    rung: str
    hacks: list[int]
    state: str  # "caught" | "warned" | "passed" | "stopped" | "not run"
    note: str = ""


@dataclass
class IntegritySummary:
    findings: list[Finding] = field(default_factory=list)

    @property
    def ran(self) -> int:
        return sum(1 for f in self.findings if f.state != "not run")

    @property
    def caught(self) -> list[Finding]:
        return [f for f in self.findings if f.state in ("caught", "warned")]

    def headline(self) -> str:
        caught = self.caught
        head = f"{self.ran} of {len(self.findings)} defences ran"
        if not caught:
            return head + " · nothing found"
        return head + " · found: " + ", ".join(f"{f.key} ({f.rung})" for f in caught)

    def for_rung(self, rung: str) -> list[Finding]:
        return [f for f in self.findings if f.rung == rung]

    def to_dict(self) -> dict[str, Any]:
        return {"ran": self.ran, "total": len(self.findings), "headline": self.headline(),
                "defences": [asdict(f) for f in self.findings]}


def _text(result: RungResult) -> str:
    return "\n".join(x for x in (result.error or "", result.summary, result.details) if x)


def summarise(results: list[RungResult]) -> IntegritySummary:
    by_name = {r.name: r for r in results}
    summary = IntegritySummary()
    for d in DEFENCES:
        result = by_name.get(d.rung)
        if d.key in ("identity", "channel", "judge"):
            # These guard every rung that ran candidate code: the first rung that names them counts.
            named = next((r for r in results if r.status in ("fail", "warn") and _matches(d, r)), None)
            result = named or result
        finding = Finding(d.key, d.title, d.rung if result is None else result.name, list(d.hacks), "not run")
        if result is None:
            finding.note = f"the {d.rung} rung was not part of this run"
        elif result.status == "skip":
            finding.note = result.summary
        elif _matches(d, result):
            finding.state = "caught" if result.status == "fail" else "warned"
            finding.note = _first_line_with(d, result)
        elif result.status == "fail":
            finding.state = "stopped"
            finding.note = "the rung failed on another finding first"
        else:
            finding.state = "passed"
            if d.key == "l2":
                m = benchmark_metrics(result)
                finding.note = (f"flush {int(m.get('flush_bytes') or 0) / 2**20:.0f} MiB for an L2 of "
                                f"{int(m.get('l2_bytes') or 0) / 2**20:.0f} MiB; persisting L2 {m.get('persisting_l2')}")
        summary.findings.append(finding)
    return summary


def _matches(d: Defence, result: RungResult) -> bool:
    if not d.phrases:
        return False
    if d.key == "static":
        return result.status in ("fail", "warn")
    text = _text(result)
    return any(p in text for p in d.phrases)


def _first_line_with(d: Defence, result: RungResult) -> str:
    if d.key == "static":
        return (result.error or result.summary).splitlines()[0][:300]
    for line in _text(result).splitlines():
        if any(p in line for p in d.phrases):
            return line.strip()[:300]
    return (result.error or result.summary)[:300]
