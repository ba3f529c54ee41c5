"""What the model is told: the system prompt, decision notes, and auto mode's per-iteration brief."""

from __future__ import annotations

import json
from dataclasses import dataclass

from kerneltui.core.agent.proposals import Decision
from kerneltui.core.task import Task

SYSTEM = """\
You are the agent half of a pair writing a GPU kernel in kerneltui, a terminal app with a verification \
harness. The person decides; you read, measure and propose.

The harness ("the loop") runs on every version: prechecks (static checks: no library compute ops, no \
calling the reference, no side streams or threads, no timer tricks), compile, run, correctness (every test \
shape x several seeds plus a hidden seed, fresh inputs, the reference run first on clones, a dtype-aware \
gate with a float64-golden fallback, checker sanity), and on a GPU: benchmark (L2 flushed, fresh inputs, \
adaptive stopping, statistics computed outside the candidate) and roofline. Results you have not measured \
are unknown: never claim a speed-up, a bandwidth or a percentage that a run did not report. Gaming the \
harness (caching outputs, special-casing shapes or seeds, lowering precision, skipping work, touching \
timers) is detected and wastes everyone's time.

How to work:
- Read before you change: the kernel, the reference, the latest results, the compiler output or the \
profile when they matter. Search context/ for DSL details instead of guessing APIs.
- Change the kernel only through propose_edit: one coherent change per proposal, with a short rationale \
(what changes and why it should help). A diff for a local change, the whole file for a rewrite. Each \
proposal is verified on a scratch copy and its trial results come back to you; then the person accepts \
(all or some hunks), edits then accepts, rejects with a reason, or redirects you with feedback, and you \
get that decision as a JSON note.
- Use run_candidate to try an idea without proposing it.
- After proposing, say in a sentence or two what the trial showed, then stop and wait for the decision.
- Be brief. Name files and lines. If something is unavailable (no GPU, no profile), say so and work with \
what is there.

The task:
{task}
"""


def task_brief(task: Task, kernel_text: str, reference_text: str) -> str:
    tests = "; ".join(c.label for c in task.tests[:8]) + (" …" if len(task.tests) > 8 else "")
    benches = "; ".join(c.label for c in task.benchmarks[:4]) or "none"
    return (
        f"name: {task.name} · backend: {task.backend} · kernel file: {task.kernel_file} "
        f"(entry point custom_kernel in {task.entry_file})\n"
        f"description: {task.description.strip()}\n"
        f"test cases: {tests}\nbenchmark cases: {benches}\n\n"
        f"{task.reference_file}:\n```python\n{reference_text.rstrip()}\n```\n\n"
        f"{task.kernel_file} (as the session starts):\n```\n{kernel_text.rstrip()}\n```"
    )


def system_prompt(task: Task, kernel_text: str, reference_text: str) -> str:
    return SYSTEM.format(task=task_brief(task, kernel_text, reference_text))


def decision_note(decision: Decision) -> str:
    """The person's decision on a proposal, as the structured note the model receives (one line of
    JSON; the time it was made is for the session log, not the model, and auto mode's verdict, its
    reason, already says what the trial showed)."""
    hidden = {"at", "trial"} if decision.get("by") == "auto" else {"at"}
    shown = {k: v for k, v in decision.items() if k not in hidden}
    return f"Decision on proposal {decision.get('proposal')}:\n```json\n{json.dumps(shown, ensure_ascii=False)}\n```"


def kernel_changed_note(file: str, text: str, digest: str, max_lines: int = 400) -> str:
    lines = text.splitlines()
    if len(lines) > max_lines:
        return f"Note: {file} changed since you last saw it (now {digest}); read it again before proposing."
    return f"Note: {file} changed since you last saw it (now {digest}). Its current text:\n```\n{text.rstrip()}\n```"


DEFAULT_AUTO_GOAL = "make the kernel faster while keeping it correct"


@dataclass(frozen=True)
class KeptFile:
    """The kernel file as auto mode keeps it now, for a brief to carry (once: earlier briefs are folded)."""

    name: str
    version: str
    text: str


def auto_brief(iteration: int, total: int, goal: str, best: str, last: str | None, target: float | None,
               keep_rule: str, unmeasurable: str | None = None, kept_file: KeptFile | None = None) -> str:
    """Auto mode's message for one iteration: the goal, the kept version (its text when it is not the one
    the system prompt shows), the last verdict, the rule."""
    lines = [f"Auto mode, iteration {iteration} of {total}. Goal: {goal or DEFAULT_AUTO_GOAL}."]
    if unmeasurable is not None:
        lines.append(f"This run can only make the kernel correct; speed cannot be judged, as {unmeasurable}.")
    lines.append(f"The kept version now: {best}.")
    if kept_file is not None:
        lines.append(f"{kept_file.name} as kept now (version {kept_file.version}):\n```\n{kept_file.text.rstrip()}\n```")
    if last:
        lines.append(f"Last iteration: {last}.")
    if target is not None and unmeasurable is None:
        lines.append(f"Stop target: {target:g}% of roofline.")
    lines.append(f"Make exactly one proposal with propose_edit. It is {keep_rule}; otherwise it is reverted and you "
                 f"get the reason. Earlier iterations are folded to one line each; read_version shows any version.")
    return "\n".join(lines)
