"""``kerneltui ask TASK "message"``: one agent turn (or N auto iterations) without the TUI.

Prints which API key is sent where (by the variable's name), the streamed reply, each tool call,
every proposal with its diff and trial results, and the tokens (cached and uncached) and cost.
Nothing touches the kernel file unless ``--apply`` is given: then proposals whose trial passed are
applied (checkpointed), and auto mode writes each kept version. Provider failures (no key, 401, 429,
no network, a reply cut off twice) exit with status 3 and a one-line reason on stderr, after what
was kept and applied before the failure is printed (and put in the JSON: ``applied``,
``kernel_changed``, ``final_diff``). Auto mode's exit status says what it came to (``AUTO_EXIT``,
listed in ``--help``), and its JSON says the same as ``outcome``; ``ok`` is true only when a version
was kept.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kerneltui.commands import engine_use
from kerneltui.commands.common import (
    EXIT_ENVIRONMENT,
    EXIT_OK,
    EXIT_USAGE,
    add_format_options,
    load_or_report,
    print_json,
)

if TYPE_CHECKING:
    from kerneltui.core.agent.proposals import ProposalData

EXIT_AGENT = 3
# Auto mode's outcome (core.agent.auto.OUTCOMES) → exit status; a script reads what happened from it.
AUTO_EXIT = {"improved": EXIT_OK, "made_correct": 4, "kept_nothing": 5, "budget": 6, "failed": EXIT_AGENT,
             "refused": EXIT_USAGE}
EXIT_STATUSES = """\
exit status:
  0 kept a faster version (auto mode), or the turn finished (one turn)
  4 made an incorrect kernel correct (auto mode: kept a correct version; no speed claim)
  5 kept nothing (auto mode: the iterations ran out or the agent stopped proposing)
  6 a token or money budget stopped it before anything was kept (auto mode)
  3 the provider failed (no key, 401, 429, no network, a reply cut off twice) or a budget has no price;
    or a fault of the machine (no space left, a folder kerneltui may not write, a bad setting) stopped a
    trial: "ERROR (environment)" with what to do, and that proposal has no verdict; what was kept before
    is in the output
  2 usage: a bad option, or auto mode could keep nothing here (a correct kernel and no benchmark)
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="ask the agent about a task (one turn, or --auto N iterations), headless",
                       epilog=EXIT_STATUSES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("task", help="a task directory, a KernelBench problem file or a GPU MODE directory")
    p.add_argument("message", help="what to ask (in auto mode: the goal)")
    p.add_argument("--provider", help="anthropic, openai, openai-compatible (vllm, ollama, llamacpp) or scripted")
    p.add_argument("--model", help="model name (default: the provider's default or [agent] model)")
    p.add_argument("--base-url", help="server address, e.g. http://localhost:8000/v1 for vLLM")
    p.add_argument("--api", choices=["chat", "responses"], help="OpenAI API flavour (default chat)")
    p.add_argument("--api-key-env", help="read the API key from this environment variable")
    p.add_argument("--script", help="scripted provider: the recorded turns (.toml or .json)")
    p.add_argument("--kernel", help="work on this kernel file instead of the task's own")
    p.add_argument("--context", help="the folder the agent searches (default: context/)")
    p.add_argument("--auto", type=int, metavar="N", help="auto mode: up to N iterations of propose → verify → keep")
    p.add_argument("--target", type=float, metavar="PCT", help="auto mode: stop at this %% of roofline")
    p.add_argument("--max-tokens", type=int, metavar="N", help="auto mode: stop after this many tokens")
    p.add_argument("--max-cost", type=float, metavar="USD", help="auto mode: stop after this much money")
    p.add_argument("--apply", action="store_true", help="apply proposals whose trial passed (auto: kept versions)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--no-session", action="store_true", help="do not write a session log")
    add_format_options(p)
    engine_use.add_option(p)
    p.set_defaults(func=main)


class Printer:
    """Turns the session's events into terminal text (or collects them for --json)."""

    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self.reply: list[str] = []
        self.tool_calls: list[dict[str, Any]] = []
        self.errors: list[dict[str, str]] = []
        self.notices: list[str] = []
        self._open_line = False
        self._started: dict[str, str] = {}

    def out(self, text: str = "") -> None:
        if not self.json_mode:
            if self._open_line:
                print(flush=True)
                self._open_line = False
            print(text, flush=True)

    def __call__(self, event: Any) -> None:
        from kerneltui.core import events as ev

        if isinstance(event, ev.AgentTextDelta):
            self.reply.append(event.text)
            if not self.json_mode:
                print(event.text, end="", flush=True)
                self._open_line = not event.text.endswith("\n")
        elif isinstance(event, ev.AgentMessage):
            self.reply.append("\n")
            if self._open_line and not self.json_mode:
                print(flush=True)
                self._open_line = False
        elif isinstance(event, ev.ToolCallStarted):
            self._started[event.call_id] = event.summary
        elif isinstance(event, ev.ToolCallFinished):
            call = self._started.get(event.call_id, event.name)
            self.tool_calls.append({"call": call, "name": event.name, "ok": event.ok, "summary": event.summary,
                                    "duration_s": round(event.duration_s, 3)})
            status = "ok" if event.ok else "FAILED"
            self.out(f"  → {call}  {status}  {event.summary}  ({event.duration_s:.1f} s)")
        elif isinstance(event, ev.ProposalEvent):
            state = event.state
            decision = event.proposal.get("decision") or {}
            # Auto mode's own verdicts are printed once, by its "auto i/n" notice.
            if state in ("accepted", "rejected", "redirected", "stale", "superseded", "undone") and \
                    decision.get("by") != "auto":
                why = decision.get("reason") or ""
                self.out(f"  proposal {event.proposal_id}: {state}" + (f" — {why}" if why else ""))
        elif isinstance(event, ev.AgentError):
            self.errors.append({"kind": event.kind, "message": event.message})
        elif isinstance(event, ev.Notice) and event.source == "agent":
            self.notices.append(f"{event.level}: {event.message}")
            self.out(f"· {event.message}")


def proposal_card(p: ProposalData) -> str:
    trial = p.get("trial") or {}
    lines = [f"proposal {p['id']} ({p['state']}) · {p['file']} · {len(p.get('hunks', []))} hunk(s) "
             f"+{p.get('added', 0)} −{p.get('removed', 0)}", f"  why: {p.get('rationale', '')}"]
    lines += ["  " + line for line in p.get("diff", "").splitlines()]
    lines.append(f"  trial: {'PASS' if trial.get('ok') else 'FAIL'} · {trial.get('headline', 'no trial')} "
                 f"· {trial.get('device', '')}")
    comparison = trial.get("comparison")
    if comparison and comparison.get("sentence"):  # against the file on disk, interleaved
        lines.append(f"  speed: {comparison['sentence']}")
    for r in trial.get("rungs", []):
        text = r.get("error") if r.get("status") == "fail" else r.get("summary")
        lines.append(f"    [{r.get('name')}] {r.get('status')}  {text or ''}".rstrip())
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    from kerneltui.config import ConfigError, flags_from_args, load_config
    from kerneltui.core.agent.settings import AGENT_FLAGS

    task = load_or_report(args, args.task, args.kernel)
    if isinstance(task, int):
        return task
    if args.auto is not None and args.auto < 1:
        print("kerneltui ask: --auto must be at least 1", file=sys.stderr)
        return EXIT_USAGE
    if args.auto is None and any(v is not None for v in (args.target, args.max_tokens, args.max_cost)):
        print("kerneltui ask: --target, --max-tokens and --max-cost apply to auto mode (add --auto N)",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        config = load_config(flags=flags_from_args(args, "agent", AGENT_FLAGS))
    except ConfigError as exc:
        print(f"kerneltui ask: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return asyncio.run(_ask(task, args, config))


async def _ask(task: Any, args: argparse.Namespace, config: Any) -> int:
    from kerneltui.commands.common import close_session_log, open_session_log, tee
    from kerneltui.core.agent import AutoLimits, ProviderError, open_chat
    from kerneltui.core.agent.checkpoints import KernelInMemory
    from kerneltui.core.agent.diffs import unified_diff
    from kerneltui.core.loop_factory import PoolKind, new_pool

    printer = Printer(args.json)
    log = open_session_log(task, "ask", getattr(args, "no_session", False), config)
    original = task.kernel_source()
    target = None if args.apply or args.auto is None else KernelInMemory(original, f"{task.kernel_file} (in memory)")
    engine = engine_use.engine_client(args)
    # With the engine, trials run there; this pool only serves a fallback (it starts nothing until then).
    own_pool = new_pool(PoolKind.STANDING, task.backend, task.arch) if engine is not None else None
    try:
        chat = open_chat(
            task, tee(printer, log), config, target=target, context_root=Path(args.context).resolve() if args.context else None,
            pool=own_pool,
        )
    except ProviderError as exc:
        close_session_log(log)
        return _fail(args, printer, exc.kind, exc.message)
    if engine is not None:
        chat.loop = engine_use.agent_loop(engine, task, args, chat.loop)
    chat.start()
    result: dict[str, Any] = {"task": task.name, "provider": chat.provider.name, "model": chat.provider.model,
                              "applied": [], "auto": None}
    error: ProviderError | None = None
    result["key"] = chat.provider.key_note()
    try:
        if args.auto is None:
            turn = await chat.send(args.message)
            error = turn.error
            if args.apply:  # a proposal verified before a provider failure is applied too
                for pid in turn.proposals:
                    p = chat.book.get(pid)
                    if p.is_open and p.trial is not None and p.trial.correct:
                        await chat.decide(pid, "accept", reason="applied by kerneltui ask --apply", by="cli")
                        result["applied"].append(pid)
                    elif p.is_open:
                        printer.out(f"  {pid} not applied: its trial did not pass")
        else:
            limits = AutoLimits(iterations=args.auto, target_pct_roofline=args.target, max_tokens=args.max_tokens,
                                max_cost_usd=args.max_cost, min_gain_pct=float(chat.settings.auto_min_gain_pct))
            auto = await chat.run_auto(args.message, limits)
            result["auto"] = auto.to_dict()
            error = ProviderError(auto.error["kind"], auto.error["message"]) if auto.error else None
            if args.apply:
                result["applied"] = list(auto.kept)
        proposals = [p.to_dict() for p in chat.book.proposals.values()]
        final = chat.target.read()
    finally:
        if log is not None:
            log.write_context(chat.conversation_json())
        close_session_log(log)
        await chat.close()
        if own_pool is not None:
            await own_pool.close()
    changed = final != original
    result.update(proposals=proposals, reply="".join(printer.reply).strip(), tool_calls=printer.tool_calls,
                  usage=chat.meter.usage_dict(), notices=printer.notices, error=None,
                  kernel_changed=changed and bool(args.apply),
                  final_diff=unified_diff(original, final, task.kernel_file) if changed else "")
    if not args.json:
        _print_outcome(args, printer, task.kernel_file, proposals, result)
        printer.out(f"tokens: {chat.meter.describe()}")
    if error is not None:
        return _fail(args, printer, error.kind, error.message, result)
    # A trial the machine stopped says nothing of its proposal: the turn did not come to an answer.
    fault = next(((p.get("trial") or {}).get("environment") for p in proposals
                  if (p.get("trial") or {}).get("environment")), None)
    if fault:
        return _fail(args, printer, "environment", fault, result, EXIT_ENVIRONMENT)
    if result["auto"] is not None:
        outcome = result["auto"]["outcome"]
        result["outcome"] = outcome
        if result["auto"]["refused"]:
            return _fail(args, printer, "auto", result["auto"]["stop_reason"], result, EXIT_USAGE)
        if outcome not in ("improved", "made_correct"):
            return _fail(args, printer, outcome, result["auto"]["stop_reason"], result, AUTO_EXIT[outcome])
        status = AUTO_EXIT[outcome]
    else:
        status = EXIT_OK
    if args.json:
        result["ok"] = True
        print_json(result)
    return status


def _print_outcome(args: argparse.Namespace, printer: Printer, kernel_file: str, proposals: list[ProposalData],
                   result: dict[str, Any]) -> None:
    """The proposals, then what happened to the kernel file: applied, found but not applied, or untouched."""
    for p in proposals:
        printer.out()
        printer.out(proposal_card(p))
    printer.out()
    if result["applied"]:
        printer.out(f"applied to {kernel_file}: {', '.join(result['applied'])} (checkpointed; undo in the TUI)")
        printer.out(result["final_diff"].rstrip() or f"({kernel_file} is back to its text before ask)")
    elif args.auto is not None and result["final_diff"]:
        printer.out(f"best version found (not applied; rerun with --apply to write {kernel_file}):")
        printer.out(result["final_diff"].rstrip())
    elif proposals and args.apply:
        printer.out(f"nothing applied to {kernel_file}: no proposal passed its trial")
    elif proposals:
        printer.out(f"nothing applied to {kernel_file} (use --apply to apply proposals whose trial passed)")


def _fail(args: argparse.Namespace, printer: Printer, kind: str, message: str,
          result: dict[str, Any] | None = None, status: int = EXIT_AGENT) -> int:
    if args.json:
        data = dict(result or {})
        if data.get("auto") is not None:
            data["outcome"] = data["auto"]["outcome"]
        data.update(ok=False, error={"kind": kind, "message": message})
        print_json(data)
    said = "ERROR (environment)" if kind == "environment" else kind  # as `check` and `watch` say it
    print(f"kerneltui ask: {said}: {message}", file=sys.stderr)
    return status
