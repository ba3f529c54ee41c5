"""The agent below the DSL: a hand-edited PTX (or Triton TTGIR) of the current version, proposed.

``propose_override`` takes the compiler's output of the kernel as it is now (the dump of its
version; the dump rung runs first when there is none), applies the model's edit (the whole stage,
or a unified diff against the compiler's text), and writes it as an override the way the asm
view's "edit this stage" does (``core.override``), in a folder of its own:
``.kerneltui/override/<version>-<hash of the edit>/``. The proposal is then one like any other:

* its diff is against the compiler's output (``base_source``), not against the kernel file;
* its trial is the loop on the kernel file as it is, built from the override folder
  (``RunOptions.override_folder``): ptxas assembles the edited PTX (CUDA C++), Triton compiles
  from the edited stage (its kernel override); the result is a version of its own, with its own
  hash, dump and history entry;
* accepted, the kernel file is not touched: the (possibly partly accepted or edited) text is what
  the override folder holds, and that build is recorded in the history as a version. Its base is
  the kernel file: a change to the file makes the proposal stale.

Which stages: CUDA C++ tasks PTX, Triton tasks PTX or TTGIR (``core.override.stages_of``: each
backend's ``BackendSpec.override``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kerneltui.core import override
from kerneltui.core.agent.conversation import ToolCall, ToolSpec
from kerneltui.core.agent.diffs import apply_unified_diff
from kerneltui.core.agent.proposals import Decision, OverrideTarget, Proposal
from kerneltui.core.agent.tool_outcome import ToolFailure, ToolOutcome
from kerneltui.core.task import Task, source_hash
from kerneltui.files import write_text_atomic

if TYPE_CHECKING:
    from kerneltui.core.agent.host import ToolHost

NAME = "propose_override"
SPEC = ToolSpec(
    NAME,
    "Propose a hand-edited PTX (CUDA C++ and Triton tasks) or TTGIR (Triton tasks) of the current kernel version, "
    "for when the compiler's output is what needs to change. Read it first with read_asm; give the edited stage "
    "as the whole text (source) or as a unified diff against the compiler's text (diff), the kernel's name when "
    "the version has several, and a rationale. It is verified like any proposal: built from your text (ptxas or "
    "Triton's kernel override), checked and benchmarked as a version of its own. Accepted, it stays a hand-edited "
    "build of the current kernel file, which does not change.",
    {"type": "object", "properties": {
        "stage": {"type": "string", "enum": ["ptx", "ttgir"]},
        "kernel": {"type": "string", "description": "which kernel (default: the one the benchmark runs)"},
        "rationale": {"type": "string"},
        "source": {"type": "string", "description": "the complete edited stage"},
        "diff": {"type": "string", "description": "a unified diff against the compiler's output of that stage"}},
     "required": ["stage", "rationale"]},
)


async def propose(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:

    args = call.arguments
    stage = str(args.get("stage") or "").upper()
    rationale = str(args.get("rationale") or "").strip()
    edited, diff = str(args.get("source") or ""), str(args.get("diff") or "")
    task = chat.task
    allowed = override.stages_of(task)
    if allowed is None:
        raise ToolFailure(f"{NAME}: hand-edited compiler output exists for {override.supported()} "
                          f"tasks; this is a {task.backend} task: change its source with propose_edit")
    if stage not in allowed:
        raise ToolFailure(f"{NAME}: a {task.backend} task can override {' or '.join(allowed)}, not {stage or 'nothing'}")
    if not rationale:
        raise ToolFailure(f"{NAME} needs a rationale")
    if bool(edited) == bool(diff):
        raise ToolFailure(f"{NAME} needs the edited {stage}: source (the whole text) or diff (against the compiler's "
                          "output), one of the two")
    kernel_text = chat.target.read()
    version, base, variant = await _compiler_output(chat, kernel_text, stage.lower(), args.get("kernel"))
    new = edited if edited else apply_unified_diff(base, diff, f"{variant.kernel}.{stage.lower()}")
    if new.strip() == base.strip():
        raise ToolFailure(f"{NAME}: the edited {stage} is the compiler's own; nothing to propose")
    version_dir = task.version_dir(version)
    key = override.specialisation_key(task, version_dir, stage, base)
    written = override.write(task, f"{version}-{source_hash(new)[:8]}", stage, base, key=key, edited=new)
    info: OverrideTarget = {"folder": written.rel_folder, "file": written.file.relative_to(task.root).as_posix(), "stage": stage,
            "kernel": written.kernel, "base_version": version, "key": key}
    p = await chat.make_proposal(base, new, "override", rationale, turn_id, call.id, submitted_diff=diff,
                                    override=info)
    return ToolOutcome(True, chat.proposal_summary(p),
                       f"hand-edited {stage} of {written.kernel} (version {version}), diffed against the compiler's "
                       f"output, written to {written.rel_folder}/\n" + chat.proposal_tool_text(p))


async def _compiler_output(chat: ToolHost, kernel_text: str, stage: str, kernel: Any) -> tuple[str, str, Any]:
    """(version, the compiler's text of ``stage``, the dump's variant) for the kernel file as it is."""
    from kerneltui.core.asm.store import Dump, DumpLookupError, DumpMissing

    version = source_hash(kernel_text)
    version_dir = chat.task.version_dir(version)
    try:
        dump = Dump.load(version_dir)
    except DumpMissing:
        report = await chat.verify_source(kernel_text, origin="verify", record=False, rungs=["dump"])
        try:
            dump = Dump.load(version_dir)
        except DumpMissing as exc:
            failed = next((r for r in report.results if r.status == "fail"), None)
            why = f": {failed.name} failed: {failed.error or failed.summary}" if failed else ""
            raise ToolFailure(f"{NAME}: the current version has no compiler output to edit{why}") from exc
    try:
        variant = dump.variant(str(kernel)) if kernel else dump.primary()
        return version, dump.stage_text(variant, stage), variant
    except (DumpLookupError, OSError) as exc:
        raise ToolFailure(f"{NAME}: {exc}") from exc


def accept_override(task: Task, p: Proposal, new: str, decision: Decision) -> None:
    """The accepted text (all of it, some hunks, or the person's edit) is what the override folder holds."""
    assert p.override is not None
    write_text_atomic(task.root / str(p.override["file"]), new)
    decision["override"] = p.override["folder"]
    decision["kernel_file_unchanged"] = True
