"""The tools the model may call, their JSON schemas, and one-line summaries for the chat.

Every tool returns a :class:`ToolOutcome`: ``output`` is what the model reads, ``summary`` the
one line the person sees. A refusal (a path outside the workspace, a diff that does not apply) is
an outcome with ``ok=False``, so the model can correct itself; it is not an exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from kerneltui.core.agent import override_proposals
from kerneltui.core.agent.conversation import ToolCall, ToolSpec
from kerneltui.core.agent.diffs import DiffError, apply_unified_diff
from kerneltui.core.agent.search import format_hits
from kerneltui.core.agent.search.grep import (
    DEFAULT_MAX,
    MOST_AFTER,
    MOST_MAX,
    SOURCES_HELP,
    GrepError,
    GrepQuery,
    format_grep,
    grep,
    grep_files,
)
from kerneltui.core.agent.tool_outcome import ToolFailure, ToolOutcome
from kerneltui.core.agent.versions import ASM_STAGES, Unavailable, profile_brief, read_asm
from kerneltui.core.agent.workspace import WorkspaceError
from kerneltui.core.redact import redacted

if TYPE_CHECKING:
    from kerneltui.core.agent.host import ToolHost


_STAGES = [s for s in ASM_STAGES if s != "source"]

TOOL_SPECS: list[ToolSpec] = [
    ToolSpec("read_file", "Read a text file of the task (e.g. kernel.py, reference.py, task.toml) or under "
             "context/ (notes and cloned docs) or installed/<package>/ (the installed DSLs' sources, as grep_context "
             "names them). Returns numbered lines, at most 400 per call.",
             {"type": "object", "properties": {
                 "path": {"type": "string", "description": "relative to the task folder, or starting with context/ or installed/"},
                 "start_line": {"type": "integer", "minimum": 1},
                 "end_line": {"type": "integer", "minimum": 1}},
              "required": ["path"]}),
    ToolSpec("list_files", "List a folder of the task or under context/.",
             {"type": "object", "properties": {"path": {"type": "string", "description": "default: the task folder"}}}),
    ToolSpec("search_context", "Ranked full-text search of context/ (curated notes on Triton, CuTe DSL, PTX/SASS, "
             "Hopper/H200, plus any cloned docs such as cutlass) and of the installed DSLs' own sources "
             "(installed/…, labelled with their version). Returns file:line hits with snippets; read one "
             "with read_file. For an exact name or signature, grep_context.",
             {"type": "object", "properties": {
                 "query": {"type": "string", "description": "a few words or identifiers, e.g. 'wgmma fence'"},
                 "limit": {"type": "integer", "minimum": 1, "maximum": 20},
                 "under": {"type": "string", "description": "only search below this folder, e.g. context/cutlass"}},
              "required": ["query"]}),
    ToolSpec("grep_context", "Exact search: a regular expression (or literal text) over context/ and the installed "
             "DSL packages' own sources and docs (the triton, CuTe DSL `cutlass` and TileLang versions the kernel "
             "runs with: installed/<package>/…). Returns path:line: text, labelled with the package and version; "
             "read more with read_file. Use it for a signature (def program_id\\(), every use of a name, a constant.",
             {"type": "object", "properties": {
                 "pattern": {"type": "string", "description": "a Python regular expression, searched line by line"},
                 "literal": {"type": "boolean", "description": "search the pattern as plain text"},
                 "ignore_case": {"type": "boolean"},
                 "glob": {"type": "string", "description": "only these files, e.g. '*.py' or 'installed/triton/*'"},
                 "source": {"type": "string", "description": SOURCES_HELP + " (default all)"},
                 "count": {"type": "boolean", "description": "only the number of matches per file"},
                 "max": {"type": "integer", "minimum": 1, "maximum": MOST_MAX, "description": f"default {DEFAULT_MAX}"},
                 "after": {"type": "integer", "minimum": 0, "maximum": MOST_AFTER,
                           "description": "lines to show after each match"}},
              "required": ["pattern"]}),
    ToolSpec("latest_results", "The latest verification results of the kernel file as it is now: every rung "
             "(prechecks, compile, run, correctness, benchmark, roofline …) with its numbers or error.",
             {"type": "object", "properties": {}}),
    ToolSpec("read_asm", "Compiler output of the current kernel version: one stage (ptx, sass, ttgir, ttir, llir, "
             "mlir), optionally one kernel, a line range, or only lines containing a string.",
             {"type": "object", "properties": {
                 "stage": {"type": "string", "enum": _STAGES},
                 "kernel": {"type": "string"},
                 "start_line": {"type": "integer", "minimum": 1},
                 "end_line": {"type": "integer", "minimum": 1},
                 "grep": {"type": "string", "description": "keep only lines containing this (case-insensitive)"}},
              "required": ["stage"]}),
    ToolSpec("profile_brief", "The Nsight Compute summary of the current version (bound, throughput, occupancy, "
             "stall reasons), when it was profiled.", {"type": "object", "properties": {}}),
    ToolSpec("trace_regions", "The intra-kernel trace of the current version, when it was traced: per named "
             "region the median time per CTA, its spread across CTAs, its share of the kernel and the overlap "
             "between regions, with the tracing overhead (traced vs untraced median).",
             {"type": "object", "properties": {}}),
    ToolSpec("read_version", "The text of any version of the kernel file by its hash (or the hash's first 8+ "
             "characters): a proposal's, a kept or reverted one, any version checked before. Numbered lines, at "
             "most 400 per call.",
             {"type": "object", "properties": {
                 "version": {"type": "string", "description": "the version's hash, as a folded iteration names it"},
                 "start_line": {"type": "integer", "minimum": 1},
                 "end_line": {"type": "integer", "minimum": 1}},
              "required": ["version"]}),
    ToolSpec("run_candidate", "Verify a candidate kernel without changing the kernel file: the whole loop "
             "(or the given rungs) on a scratch copy. Give the full new file as source, or a unified diff "
             "against the current kernel file.",
             {"type": "object", "properties": {
                 "source": {"type": "string", "description": "the complete new kernel file"},
                 "diff": {"type": "string", "description": "a unified diff against the current kernel file"},
                 "rungs": {"type": "array", "items": {"type": "string"}}}}),
    ToolSpec("propose_edit", "Propose a change to the kernel file. It is verified on a scratch copy first; the "
             "person (or auto mode) then accepts, rejects or redirects it. Give the full new file as source, or "
             "a unified diff against the current kernel file, and a short rationale (what and why it should "
             "help). One coherent change per proposal.",
             {"type": "object", "properties": {
                 "rationale": {"type": "string"},
                 "source": {"type": "string", "description": "the complete new kernel file"},
                 "diff": {"type": "string", "description": "a unified diff against the current kernel file"}},
              "required": ["rationale"]}),
    override_proposals.SPEC,
]
TOOL_NAMES = [t.name for t in TOOL_SPECS]


def summarise_call(call: ToolCall) -> str:
    """One line for the chat: ``search_context('wgmma layout')``."""
    a = call.arguments
    if call.name == "read_version":
        return f"read_version({str(a.get('version', ''))[:16]!r})"
    if call.name == "read_file":
        where = f", {a.get('start_line', 1)}-{a['end_line']}" if a.get("end_line") else ""
        return f"read_file({a.get('path', '')!r}{where})"
    if call.name == "list_files":
        return f"list_files({a.get('path', '.')!r})"
    if call.name == "search_context":
        return f"search_context({a.get('query', '')!r})"
    if call.name == "grep_context":
        where = f", source={a['source']!r}" if a.get("source") else ""
        return f"grep_context({a.get('pattern', '')!r}{where})"
    if call.name == "read_asm":
        extra = f", grep={a['grep']!r}" if a.get("grep") else ""
        return f"read_asm({a.get('stage', '')!r}{extra})"
    if call.name == override_proposals.NAME:
        return f"{call.name}({a.get('stage', '')}{', ' + str(a['kernel']) if a.get('kernel') else ''})" + \
            (f": {str(a['rationale'])[:60]}" if a.get("rationale") else "")
    if call.name in ("run_candidate", "propose_edit"):
        what = "diff" if a.get("diff") else ("full file" if a.get("source") else "nothing")
        rationale = f": {str(a['rationale'])[:60]}" if a.get("rationale") else ""
        return f"{call.name}({what}){rationale}"
    return f"{call.name}()"


async def run_tool(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    handler = _HANDLERS.get(call.name)
    if handler is None:
        return ToolOutcome(False, f"unknown tool {call.name}",
                           f"there is no tool named {call.name!r}; the tools are: {', '.join(TOOL_NAMES)}")
    if call.argument_error:
        return ToolOutcome(False, "malformed arguments", f"{call.name}: {call.argument_error}")
    try:
        return redacted(await handler(chat, call, turn_id))
    except (ToolFailure, WorkspaceError, DiffError, Unavailable) as exc:
        return redacted(ToolOutcome(False, str(exc).splitlines()[0][:160], str(exc)))


def _text_arg(call: ToolCall, name: str, required: bool = False) -> str:
    value = call.arguments.get(name)
    if value is None or value == "":
        if required:
            raise ToolFailure(f"{call.name} needs {name!r}")
        return ""
    if not isinstance(value, str):
        raise ToolFailure(f"{call.name}: {name!r} must be a string, not {type(value).__name__}")
    return value


def _bool_arg(call: ToolCall, name: str) -> bool:
    value = call.arguments.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ToolFailure(f"{call.name}: {name!r} must be true or false")
    return value


def _int_arg(call: ToolCall, name: str) -> int | None:
    value = call.arguments.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ToolFailure(f"{call.name}: {name!r} must be an integer")
    try:
        return int(value)
    except ValueError as exc:
        raise ToolFailure(f"{call.name}: {name!r} must be an integer, not {value!r}") from exc


async def _read_file(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    path = _text_arg(call, "path", required=True)
    output, summary = chat.workspace.read(path, _int_arg(call, "start_line"), _int_arg(call, "end_line"))
    chat.note_file_read(path)
    return ToolOutcome(True, summary, output)


async def _list_files(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    path = _text_arg(call, "path") or "."
    real, shown = chat.workspace.resolve(path)
    if not real.exists():
        hint = " (see context/README.md in kerneltui on what to put there)" if shown.startswith("context") else ""
        raise ToolFailure(f"{shown} does not exist{hint}")
    output, summary = chat.workspace.list(path)
    return ToolOutcome(True, summary, output)


async def _search_context(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    query = _text_arg(call, "query", required=True)
    limit = max(1, min(20, _int_arg(call, "limit") or 8))
    under = _text_arg(call, "under") or None
    hits, note = await chat.search_context(query, limit, under)
    output = format_hits(hits, query)
    if note:
        output = note + "\n" + output
    return ToolOutcome(True, f"{len(hits)} hits for {query!r}" + (f" ({note})" if note else ""), output)


async def _grep_context(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    max_matches = _int_arg(call, "max")
    after = _int_arg(call, "after")
    query = GrepQuery(_text_arg(call, "pattern", required=True), literal=_bool_arg(call, "literal"),
                      ignore_case=_bool_arg(call, "ignore_case"), glob=_text_arg(call, "glob"),
                      max_matches=max(1, min(MOST_MAX, max_matches or DEFAULT_MAX)), count=_bool_arg(call, "count"),
                      after=max(0, min(MOST_AFTER, after or 0)), source=_text_arg(call, "source") or "all")
    try:
        query.compiled()
        plan = await asyncio.to_thread(grep_files, chat.index.folders, query.source, query.glob)
        result = await asyncio.to_thread(grep, query, plan)
    except GrepError as exc:
        raise ToolFailure(f"grep_context: {exc}") from exc
    where = f" in {len(result.counts)} files" if result.counts else ""
    summary = f"{result.total:,} matches{where}" + (" (incomplete)" if result.stopped else "")
    return ToolOutcome(True, summary, format_grep(result))


async def _latest_results(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    report, fresh = await chat.latest_report()
    label = "latest run of the kernel file" + (" (run just now: there was none yet)" if fresh else "")
    return ToolOutcome(True, f"{'PASS' if report.ok else 'FAIL'} · {len(report.results)} rungs",
                       chat.feedback(report, label, chat.target.read()))


async def _read_asm(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    stage = _text_arg(call, "stage", required=True)
    report, _ = await chat.latest_report()
    text = read_asm(chat.task, report.source_hash, stage, _text_arg(call, "kernel") or None,
                    _int_arg(call, "start_line"), _int_arg(call, "end_line"), _text_arg(call, "grep") or None)
    return ToolOutcome(True, text.splitlines()[0][:160], text)


async def _profile_brief(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    report, _ = await chat.latest_report()
    text = profile_brief(chat.task, report)
    return ToolOutcome(True, text.splitlines()[0][:160] if text else "profile brief", text)


async def _trace_regions(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    from kerneltui.core.trace.buffer import TraceFormatError
    from kerneltui.core.trace.summary import brief

    report, _ = await chat.latest_report()
    try:
        text = brief(chat.task.version_dir(report.source_hash))
    except TraceFormatError as exc:
        raise Unavailable(f"the saved trace cannot be read: {exc}") from exc
    if text is None:
        result = report.result("trace")
        if result is not None and result.status in ("fail", "skip"):
            raise Unavailable(f"the trace rung {'failed' if result.status == 'fail' else 'was skipped'}: "
                              f"{result.error or result.summary}")
        raise Unavailable("this version was not traced: the trace rung runs on demand on a GPU, for kernels that "
                          "mark regions with kerneltui.ktrace (run_candidate with rungs=['trace'])")
    return ToolOutcome(True, text.splitlines()[0][:160], text)


MIN_VERSION_CHARS = 6
MAX_VERSION_LINES = 400


async def _read_version(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    prefix = _text_arg(call, "version", required=True).strip().lower()
    if len(prefix) < MIN_VERSION_CHARS or any(c not in "0123456789abcdef" for c in prefix):
        raise ToolFailure(f"read_version: {prefix!r} is not a version hash (hex, at least {MIN_VERSION_CHARS} "
                          f"characters, as a folded iteration or a trial names it)")
    found = chat.version_text(prefix)
    if found is None:
        raise ToolFailure(f"read_version: no version {prefix} in this session's proposals or the task's history "
                          f"(or more than one starts so: give more characters)")
    digest, where, text = found
    lines = text.splitlines()
    start = max(1, _int_arg(call, "start_line") or 1)
    end = min(len(lines), _int_arg(call, "end_line") or start + MAX_VERSION_LINES - 1, start + MAX_VERSION_LINES - 1)
    head = f"version {digest} of {chat.task.kernel_file} ({where}): {len(lines)} lines"
    if start > 1 or end < len(lines):
        head += f", showing {start}-{end}"
    body = "\n".join(f"{n:>6}  {lines[n - 1]}" for n in range(start, end + 1))
    return ToolOutcome(True, head, head + "\n" + body)


def candidate_source(chat: ToolHost, call: ToolCall) -> tuple[str, str, str]:
    """(base text, new text, kind) from a source or diff argument."""
    source = _text_arg(call, "source")
    diff = _text_arg(call, "diff")
    if source and diff:
        raise ToolFailure(f"{call.name}: give either source (the whole file) or diff, not both")
    if not source and not diff:
        raise ToolFailure(f"{call.name} needs the new kernel: source (the whole file) or diff (a unified diff)")
    base = chat.target.read()
    if diff:
        return base, apply_unified_diff(base, diff, chat.task.kernel_file), "diff"
    return base, source, "full"


async def _run_candidate(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    _, new, _ = candidate_source(chat, call)
    rungs = call.arguments.get("rungs")
    if rungs is not None and (not isinstance(rungs, list) or not all(isinstance(r, str) for r in rungs)):
        raise ToolFailure("run_candidate: rungs must be a list of rung names")
    try:
        report = await chat.verify_source(new, origin="proposal", record=False, rungs=rungs or None)
    except ValueError as exc:  # an unknown rung name
        raise ToolFailure(f"run_candidate: {exc}") from exc
    return ToolOutcome(report.ok, f"{'PASS' if report.ok else 'FAIL'} (not applied)",
                       chat.feedback(report, "candidate (the kernel file was not changed)", new))


async def _propose_edit(chat: ToolHost, call: ToolCall, turn_id: str) -> ToolOutcome:
    rationale = _text_arg(call, "rationale", required=True)
    base, new, kind = candidate_source(chat, call)
    if new == base:
        raise ToolFailure("propose_edit: the proposal is identical to the current kernel file; nothing to propose")
    proposal = await chat.make_proposal(base, new, kind, rationale, turn_id, call.id,
                                           submitted_diff=_text_arg(call, "diff"))
    return ToolOutcome(True, chat.proposal_summary(proposal), chat.proposal_tool_text(proposal))


Handler = Callable[["ToolHost", ToolCall, str], Awaitable[ToolOutcome]]
_HANDLERS: dict[str, Handler] = {
    "read_file": _read_file,
    "list_files": _list_files,
    "search_context": _search_context,
    "grep_context": _grep_context,
    "latest_results": _latest_results,
    "read_asm": _read_asm,
    "profile_brief": _profile_brief,
    "trace_regions": _trace_regions,
    "read_version": _read_version,
    "run_candidate": _run_candidate,
    "propose_edit": _propose_edit,
    override_proposals.NAME: override_proposals.propose,
}


def check_handlers() -> None:
    """Every spec has a handler and vice versa (called by the tests)."""
    assert set(_HANDLERS) == set(TOOL_NAMES), (set(_HANDLERS) ^ set(TOOL_NAMES))

