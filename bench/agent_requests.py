"""What `kerneltui ask --auto` sends a model, per request and per iteration, on one fixed script.

Method
  * A loopback server speaking the Anthropic or OpenAI streaming format (``tests/llm_server.py``)
    answers a fixed script whatever the requests say; the real ``anthropic``/``openai`` SDKs talk to
    it through ``--base-url``. The task is a copy of vector_add whose kernel is wrong (``x - y``).
    Iteration 1 reads the kernel, then proposes an edit that does not compile (a NameError on line
    12); iteration 2 proposes a still wrong kernel (``x * y``); iteration 3 the fix. Each proposal is
    one request answered with the ``propose_edit`` call, then one answered with a short comment:
    7 requests in all. Trials run on this machine's CPU (Triton interpreter), one seed per case.
  * For every request the server records its body's size in bytes and the auto iteration it belongs
    to (the last "Auto mode, iteration N" the conversation holds).
  * Tokens are estimated, not counted by a tokenizer: one token per 4 bytes of the JSON of each
    prompt part (tool, system block, message block). The server reports that estimate as the
    request's usage, so kerneltui's own meter (its ``tokens:`` line) counts the same numbers.
  * Prompt caching is emulated from the providers' documentation, not measured on their services.
    Anthropic: a prefix is cached only up to a ``cache_control`` mark, written by the request that
    marks it and read by a later request whose prompt starts with it (the longest such prefix; at
    least 1,024 tokens). OpenAI: automatic; a request reads the longest prefix, in whole prompt
    parts, that it shares with an earlier request, rounded down to 128 tokens, from 1,024 tokens on.
  * Before and after: ``--before REV`` runs the same script on ``git archive REV`` of this
    repository (the code before a change) and then on this tree.

Run:  python bench/agent_requests.py [--before REV] [--provider anthropic|openai|both] [--no-record]
Prints the tables and appends them to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.llm_server import (  # noqa: E402 - the repository root must be on the path first
    SSE,
    LLMServer,
    Recorded,
    anthropic_stream,
    openai_chat_stream,
    without_marks,
)

RESULTS = ROOT / "bench" / "RESULTS.md"
BYTES_PER_TOKEN = 4
MIN_CACHED_TOKENS = 1024
OPENAI_CACHE_STEP = 128
ITERATION = re.compile(r"Auto mode, iteration (\d+) of")


def tokens(part: Any) -> int:
    return math.ceil(len(json.dumps(part, ensure_ascii=False).encode()) / BYTES_PER_TOKEN)


@dataclass
class Counted:
    iteration: int
    size: int
    input_tokens: int
    cache_read: int
    cache_write: int
    output_tokens: int


@dataclass
class CacheModel:
    """The prompt as a list of parts (tools, system, message blocks) and the prefixes cached so far."""

    provider: str
    written: set[tuple[str, ...]] = field(default_factory=set)
    seen: list[tuple[str, ...]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def parts(self, body: dict[str, Any]) -> tuple[list[str], list[int]]:
        """The prompt's parts in cache order, as canonical JSON, and the indexes carrying a cache mark."""
        raw: list[Any] = list(body.get("tools") or [])
        system = body.get("system")
        if self.provider == "anthropic":
            raw += system if isinstance(system, list) else ([{"type": "text", "text": system}] if system else [])
            for message in body.get("messages") or []:
                content = message["content"]
                blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
                raw += [{"role": message["role"], **block} for block in blocks]
        else:
            raw += list(body.get("messages") or [])
        marks = [i for i, part in enumerate(raw) if isinstance(part, dict) and "cache_control" in part]
        return [json.dumps(without_marks(p), sort_keys=True, ensure_ascii=False) for p in raw], marks

    def count(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """(total input tokens, read from the cache, written to it) for one request."""
        parts, marks = self.parts(body)
        sizes = [math.ceil(len(p.encode()) / BYTES_PER_TOKEN) for p in parts]
        total = sum(sizes)
        prefix_tokens = [0]
        for size in sizes:
            prefix_tokens.append(prefix_tokens[-1] + size)
        key = tuple(parts)
        with self.lock:
            if self.provider == "anthropic":
                read_len = max((n for n in range(1, len(parts) + 1) if key[:n] in self.written), default=0)
                read = prefix_tokens[read_len] if prefix_tokens[read_len] >= MIN_CACHED_TOKENS else 0
                write = 0
                for mark in marks:
                    if prefix_tokens[mark + 1] >= MIN_CACHED_TOKENS and key[:mark + 1] not in self.written:
                        self.written.add(key[:mark + 1])
                if marks:
                    write = max(0, prefix_tokens[max(marks) + 1] - read) if prefix_tokens[max(marks) + 1] >= \
                        MIN_CACHED_TOKENS else 0
                return total, read, write
            shared = 0
            for earlier in self.seen:
                n = 0
                while n < min(len(earlier), len(key)) and earlier[n] == key[n]:
                    n += 1
                shared = max(shared, n)
            self.seen.append(key)
            read = prefix_tokens[shared] // OPENAI_CACHE_STEP * OPENAI_CACHE_STEP
            return total, (read if read >= MIN_CACHED_TOKENS else 0), 0


def script(good: str) -> list[tuple[str, list[tuple[str, dict[str, Any]]]]]:
    """(text, tool calls) of each reply, in order."""
    broken = good.replace("    y = tl.load(y_ptr + offs, mask=mask)",
                          "    y = tl.load(y_ptr + offs, mask=mask) + undefined_name")
    still_wrong = good.replace("x + y, mask=mask", "x * y, mask=mask")
    return [
        ("Let me read the kernel first.", [("read_file", {"path": "kernel.py"})]),
        ("Adding the second operand once more.", [("propose_edit", {"rationale": "fold y in", "source": broken})]),
        ("The trial failed to compile; I will fix that next.", []),
        ("Multiplying instead.", [("propose_edit", {"rationale": "product", "source": still_wrong})]),
        ("Still wrong; the sum it must be.", []),
        ("The reference adds x and y.", [("propose_edit", {"rationale": "x + y, not x - y", "source": good})]),
        ("The trial passes.", []),
    ]


class ScriptedServer:
    """Answers the script in order, with usage computed from each request, and records what it counted."""

    def __init__(self, provider: str, replies: list[tuple[str, list[tuple[str, dict[str, Any]]]]]) -> None:
        self.provider = provider
        self.replies = list(replies)
        self.cache = CacheModel(provider)
        self.counted: list[Counted] = []
        self.server = LLMServer().start()
        for n in range(len(self.replies)):
            self.server.push(lambda recorded, n=n: self.answer(n, recorded))

    def answer(self, n: int, recorded: Recorded) -> SSE:
        text, calls = self.replies[n]
        total, read, write = self.cache.count(recorded.body)
        found = ITERATION.findall(json.dumps(recorded.body, ensure_ascii=False))
        output = tokens(text) + sum(tokens(arguments) for _, arguments in calls)
        self.counted.append(Counted(int(found[-1]) if found else 0, recorded.size, total, read, write, output))
        uses = [(f"call_{n}_{i}", name, [json.dumps(arguments)]) for i, (name, arguments) in enumerate(calls)]
        if self.provider == "anthropic":
            return anthropic_stream(text=[text], tool_uses=uses, usage=(total - read - write, output),
                                    cache=(read, write))
        return openai_chat_stream(text=[text], tool_calls=uses, usage=(total, output, read))

    @property
    def url(self) -> str:
        return self.server.url + ("/v1" if self.provider == "openai" else "")

    def stop(self) -> None:
        self.server.stop()


@dataclass
class RunOutcome:
    label: str
    provider: str
    counted: list[Counted]
    meter_line: str
    stop_reason: str
    seconds: float


def run_once(label: str, code: Path, provider: str, work: Path) -> RunOutcome:
    task = work / f"task-{label}-{provider}"
    shutil.copytree(ROOT / "kerneltui" / "examples" / "vector_add", task,
                    ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    good = (task / "kernel.py").read_text()
    (task / "kernel.py").write_text(good.replace("x + y, mask=mask", "x - y, mask=mask"))
    server = ScriptedServer(provider, script(good))
    key = "sk-bench-0123456789abcdef"
    env = dict(os.environ, PYTHONPATH=str(code), KERNELTUI_CONFIG=str(work / "no-config.toml"),
               KERNELTUI_CACHE_DIR=str(work / f"cache-{label}"), KERNELTUI_SESSIONS_DIR=str(work / "sessions"),
               KERNELTUI_AGENT_TRIAL_SEEDS="1", KERNELTUI_AGENT_MAX_RETRIES="0",
               KERNELTUI_AGENT_CONTEXT_DIR=str(ROOT / "context"), KERNELTUI_AGENT_API_KEY=key,
               ANTHROPIC_API_KEY=key, OPENAI_API_KEY=key)
    command = [sys.executable, "-m", "kerneltui", "ask", str(task), "make it correct", "--provider", provider,
               "--model", "bench-model", "--base-url", server.url, "--auto", "3", "--json"]
    started = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, cwd=work)
    finally:
        server.stop()
    seconds = time.perf_counter() - started
    try:
        data = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{label}: kerneltui ask printed no JSON (exit {proc.returncode}):\n{proc.stderr[-2000:]}") from None
    usage = data.get("usage") or {}
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{label}: exit {proc.returncode}: {proc.stderr[-2000:]}")
    meter = ", ".join(f"{k}={usage[k]}" for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                                  "cache_write_tokens", "cache_hits", "requests") if k in usage)
    return RunOutcome(label, provider, server.counted, meter or json.dumps(usage),
                      (data.get("auto") or {}).get("stop_reason", ""), seconds)


def tables(outcomes: list[RunOutcome]) -> str:
    lines: list[str] = []
    for provider in sorted({o.provider for o in outcomes}):
        runs = [o for o in outcomes if o.provider == provider]
        head = " | ".join(f"{o.label} bytes | {o.label} tokens (cached)" for o in runs)
        lines += [f"**{provider}**, per request:", "", f"| request | iteration | {head} |",
                  "|---|---|" + "---|---|" * len(runs)]
        for n in range(max(len(o.counted) for o in runs)):
            cells = []
            iteration = ""
            for o in runs:
                if n < len(o.counted):
                    c = o.counted[n]
                    iteration = str(c.iteration)
                    cells.append(f"{c.size:,} | {c.input_tokens:,} ({c.cache_read:,})")
                else:
                    cells.append("– | –")
            lines.append(f"| {n + 1} | {iteration} | {' | '.join(cells)} |")
        lines += ["", f"**{provider}**, per auto iteration (estimated tokens; input = uncached + cache read + "
                      f"cache write):", "",
                  "| run | iteration | requests | request bytes | input tokens | uncached | cache read | cache write "
                  "| output tokens | input+output |", "|---|---|---|---|---|---|---|---|---|---|"]
        for o in runs:
            for iteration in sorted({c.iteration for c in o.counted}):
                cs = [c for c in o.counted if c.iteration == iteration]
                read, write = sum(c.cache_read for c in cs), sum(c.cache_write for c in cs)
                total, out = sum(c.input_tokens for c in cs), sum(c.output_tokens for c in cs)
                lines.append(f"| {o.label} | {iteration} | {len(cs)} | {sum(c.size for c in cs):,} | {total:,} | "
                             f"{total - read - write:,} | {read:,} | {write:,} | {out:,} | {total + out:,} |")
            cs = o.counted
            read, write = sum(c.cache_read for c in cs), sum(c.cache_write for c in cs)
            total, out = sum(c.input_tokens for c in cs), sum(c.output_tokens for c in cs)
            hits = sum(1 for c in cs if c.cache_read)
            lines.append(f"| {o.label} | all | {len(cs)} | {sum(c.size for c in cs):,} | {total:,} | "
                         f"{total - read - write:,} | {read:,} | {write:,} | {out:,} | {total + out:,} |")
            lines.append(f"| {o.label} | cache hits | {hits} of {len(cs)} requests | | | | | | | |")
        lines.append("")
        for o in runs:
            lines.append(f"- {o.label}: kerneltui's meter: {o.meter_line}; stop: {o.stop_reason or '(none)'}; "
                         f"{o.seconds:.0f} s")
        lines.append("")
    return "\n".join(lines)


def git_archive(rev: str, dest: Path) -> Path:
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REV", help="also run the script on this git revision, first")
    parser.add_argument("--provider", choices=["anthropic", "openai", "both"], default="both")
    parser.add_argument("--no-record", action="store_true", help="print only; do not append to bench/RESULTS.md")
    args = parser.parse_args()
    providers = ["anthropic", "openai"] if args.provider == "both" else [args.provider]
    work = Path(tempfile.mkdtemp(prefix="kerneltui-bench-agent-"))
    outcomes: list[RunOutcome] = []
    try:
        codes: list[tuple[str, Path]] = []
        if args.before:
            codes.append((f"before ({args.before[:10]})", git_archive(args.before, work / "before")))
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip() or "this tree"
        codes.append((f"after ({head})", ROOT))
        for label, code in codes:
            for provider in providers:
                print(f"running {label} with {provider} …", flush=True)
                outcomes.append(run_once(label.split(" ")[0], code, provider, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    import anthropic
    import openai

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    header = (f"## Agent requests: bytes per request, tokens per auto iteration, cache hits · "
              f"{time.strftime('%Y-%m-%d %H:%M')}\n\n"
              f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, anthropic "
              f"{anthropic.__version__}, openai {openai.__version__}, load average {load}. Command: "
              f"`python bench/agent_requests.py{' --before ' + args.before if args.before else ''} "
              f"--provider {args.provider}`. Runs: {', '.join(label for label, _ in codes)}. One run each: the "
              f"script is fixed, so bytes and tokens do not vary between runs (times do). Tokens are estimated "
              f"(4 bytes per token) and caching emulated from the providers' documentation (see the script's "
              f"docstring); not measured on the real services.\n")
    text = header + "\n" + tables(outcomes)
    print(text)
    if not args.no_record:
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write("\n" + text)
        print(f"appended to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
