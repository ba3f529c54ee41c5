"""The ``dump`` rung: the compiler's output for this version, kept beside it and summarised.

The check worker gathers every stage its backend produces per kernel specialisation (with no GPU:
compiled ahead of time for ``--arch``, default the task's, sm_90a); the parent disassembles the
cubins to SASS, builds the source maps and the resource and instruction reports, and writes them
to ``<version>/dump`` (``core.asm.writer``). The summary reads ``26 regs · 0 spills · 4 HGMMA ·
LDG.E.128 · occ 50%`` for the specialisation the benchmark runs.
"""

from __future__ import annotations

import asyncio
from typing import cast

from kerneltui.core.asm.artifact import ArtifactError, KernelArtifact
from kerneltui.core.asm.tools import Toolset
from kerneltui.core.asm.writer import DumpResult, variant_headline, write_dump
from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.judging import CaseRef, Judging
from kerneltui.core.rungs.result import RungResult, fail, ok, skip, warn
from kerneltui.core.rungs.rung_metrics import DumpMetrics
from kerneltui.core.worker.contract.replies import DumpReply
from kerneltui.core.worker.contract.seeds import seed_for


async def run(ctx: RunContext) -> RungResult:
    if not ctx.task.backend_spec.dumps:
        return skip("dump", f"the {ctx.task.backend} backend has no kernels of its own to dump")
    worker = await ctx.check_worker()
    arch = dump_arch(ctx)
    judging = await ctx.judging()
    keys, cases = await case_inputs(ctx, judging)
    try:
        reply = cast(DumpReply, await worker.request("dump", {"arch": arch, "cases": cases},
                                                     timeout=ctx.timeout("dump"), on_progress=ctx.progress_for("dump")))
    finally:
        judging.release(keys)
    notes = [str(n) for n in reply["notes"]]
    try:
        artifacts = [KernelArtifact.from_json(a, ctx.task.backend) for a in reply["artifacts"]]
    except ArtifactError as exc:
        return fail("dump", f"the {ctx.task.backend} backend returned an unusable dump: {exc}")
    if not artifacts:
        why = "; ".join(notes) or "no kernel was launched by any case"
        return warn("dump", f"nothing to dump: {why}", details="\n".join(notes))
    progress = ctx.progress_for("dump")
    tools = await asyncio.to_thread(Toolset.discover)
    result = await asyncio.to_thread(
        write_dump, ctx.version_dir / "dump", artifacts, arch=reply["arch"] or arch,
        backend=ctx.task.backend, source_roots=list(reply["source_roots"]),
        task_files=sorted(ctx.files), tools=tools, progress=progress, notes=notes)
    summary = str(result.index.get("summary") or "")
    # The index's summary metrics (core.asm.writer.summarise), read back from its JSON.
    metrics = cast(DumpMetrics, dict(result.index.get("metrics") or {}))
    metrics["arch"] = result.index.get("arch")
    metrics["dump_dir"] = str(result.dump_dir)
    metrics["on_gpu"] = reply["on_gpu"]
    ctx.data.dump = {"dir": str(result.dump_dir), "summary": summary, "metrics": metrics}
    details = describe(result, notes)
    problems = result.problems + [p for v in result.variants for p in v.problems]
    if problems or any("could not compile" in n for n in notes):
        first = (problems or [n for n in notes if "could not compile" in n])[0]
        return warn("dump", f"{summary} · {first}" if summary else first, metrics=metrics, details=details)
    return ok("dump", summary, metrics=metrics, details=details)


async def case_inputs(ctx: RunContext, judging: Judging) -> tuple[list[str], dict[str, object]]:
    """Inputs of every test case and of the first benchmark case (the specialisation the benchmark
    runs), made by the judge: the dump runs the kernel's host code on each to learn its launches."""
    cases = [*ctx.task.tests, *ctx.task.benchmarks[:1]]
    keys: list[str] = []
    out: dict[str, object] = {}  # case index → its inputs as a wire value
    for index, case in enumerate(cases):
        ref = CaseRef(index, dict(case.params), seed_for(index, case.seed, 0), case.label)
        key, out[str(index)] = await judging.inputs(ref, ctx.timeout("dump"), reference=False, rolling=False,
                                                    limit=ctx.step_limit("dump"))
        keys.append(key)
    return keys, out


def dump_arch(ctx: RunContext) -> str:
    """The architecture to dump for: ``--arch``, else the GPU's, else the task's (default sm_90a)."""
    if ctx.options.arch:
        return ctx.options.arch
    device_arch = ctx.device.get("arch") if ctx.device else None
    return str(device_arch or ctx.task.arch)


def describe(result: DumpResult, notes: list[str]) -> str:
    lines = [f"dump: {result.dump_dir}", f"arch: {result.index.get('arch')}"]
    tools = result.index.get("tools") or {}
    for name in ("nvdisasm", "cuobjdump", "ptxas"):
        tool = tools.get(name)
        lines.append(f"{name}: " + (f"{tool.get('version') or '?'} from {tool.get('origin')} ({tool.get('path')})"
                                    if tool else "not found"))
    for v in result.variants:
        head = " · ".join(variant_headline(v.resources, v.mix)) or "no cubin"
        mark = "*" if v.primary else " "
        lines.append(f"{mark} {v.kernel} [{v.variant}]  {head}")
        cases = v.metadata.get("cases") or []
        if cases:
            lines.append(f"    cases: {', '.join(map(str, cases[:6]))}" + (f" +{len(cases) - 6}" if len(cases) > 6 else ""))
        if v.metadata.get("autotune"):
            lines.append(f"    autotune: {v.metadata['autotune']}")
        if v.resources is not None and v.resources.occupancy:
            lines.append(f"    {v.resources.occupancy.get('text')}")
        if v.mix is not None:
            groups = [("tensor", v.mix.tensor), ("global ld", v.mix.global_loads), ("global st", v.mix.global_stores),
                      ("async copy", v.mix.async_copies), ("shared", v.mix.shared), ("local", v.mix.local),
                      ("barriers", v.mix.barriers), ("branches", v.mix.branches)]
            for name, table in groups:
                if table:
                    lines.append(f"    {name}: " + ", ".join(f"{n}× {op}" for op, n in sorted(table.items(), key=lambda kv: -kv[1])[:5]))
            lines.append(f"    {v.mix.total} instructions ({v.mix.source})")
        stages = ", ".join(s for s in ("cuda", "ttir", "ttgir", "mlir", "llir", "ptx", "sass") if s in v.stages)
        lines.append(f"    stages: {stages}")
        for problem in v.problems:
            lines.append(f"    ! {problem}")
    for problem in result.problems:
        lines.append(f"! {problem}")
    for note in notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)
