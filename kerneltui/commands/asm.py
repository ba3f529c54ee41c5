"""``kerneltui asm TASK``: print what the compiler made of the current kernel (PTX, SASS, TTGIR, …).

Reads the current version's dump (``.kerneltui/versions/<hash>/dump``); when there is none yet (or
it was made for another ``--arch``), runs the compile and dump rungs first. For plain SSH sessions
and for the agent: ``--source-line N`` shows only what line N became, ``--annotate`` prefixes each
asm line with its source line, ``--diff VERSION`` compares with another version.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from kerneltui.commands.common import (
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USAGE,
    add_format_options,
    load_or_report,
    print_json,
)

STAGES = ("sass", "ptx", "ttgir", "ttir", "llir", "mlir", "cuda")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("asm", help="print a kernel's PTX / SASS / TTGIR … for the current version")
    p.add_argument("task", help="a task directory, a KernelBench problem file or a GPU MODE directory")
    p.add_argument("--kernel", help="use this kernel file instead of the task's own")
    p.add_argument("--stage", choices=STAGES, help="which stage to print (default: sass, else ptx)")
    p.add_argument("--name", help="which kernel (default: the one the benchmark runs)")
    p.add_argument("--variant", help="which specialisation, by label or a prefix of it (default: the benchmark's)")
    p.add_argument("--diff", metavar="VERSION",
                   help="compare with another version: a source-hash prefix, a version folder, or 'prev'")
    p.add_argument("--raw", action="store_true", help="with --diff: compare the text as is (offsets, line info)")
    p.add_argument("--arch", help="target architecture for ahead-of-time compiles (default: the GPU's, else sm_90a)")
    p.add_argument("--source-line", type=int, metavar="N", help="only the asm lines that source line N produced")
    p.add_argument("--annotate", action="store_true", help="prefix each asm line with the source line behind it")
    p.add_argument("--list", action="store_true", help="list kernels, specialisations, stages and resources")
    p.add_argument("--json", action="store_true", help="print one JSON object (for scripts and the agent)")
    p.add_argument("--refresh", action="store_true", help="dump again even if this version has a dump")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto", help="syntax colours")
    add_format_options(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from kerneltui.core.asm.store import Dump, DumpLookupError, DumpMissing
    from kerneltui.core.task import source_hash

    task = load_or_report(args, args.task, args.kernel)
    if isinstance(task, int):
        return task
    version_dir = task.version_dir(source_hash(task.kernel_source()))
    dump: Dump | None = None
    try:
        dump = Dump.load(version_dir)
    except DumpMissing:
        dump = None
    wanted_arch = args.arch
    if dump is not None and wanted_arch and dump.arch != wanted_arch:
        dump = None
    if dump is None or args.refresh:
        code = _run_dump(task, args)
        if code != EXIT_OK:
            return code
        try:
            dump = Dump.load(version_dir)
        except DumpMissing as exc:
            print(f"kerneltui: {exc}", file=sys.stderr)
            return EXIT_FAIL
    try:
        if args.list:
            return _list(dump, args)
        variant = dump.variant(args.name, args.variant)
        if args.diff:
            return _diff(task, dump, version_dir, variant, args)
        stage = args.stage or ("sass" if "sass" in variant.stages else "ptx" if "ptx" in variant.stages
                               else (variant.stage_names or ["ptx"])[0])
        return _show(dump, variant, stage, task.kernel_file, args)
    except (DumpLookupError, DumpMissing) as exc:
        print(f"kerneltui: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _run_dump(task: Any, args: argparse.Namespace) -> int:
    from kerneltui.core.events import Event, RungFinished, RungProgress
    from kerneltui.core.loop_factory import check_once
    from kerneltui.core.rungs.context import RunOptions

    def emit(event: Event) -> None:
        if isinstance(event, RungProgress):
            print(f"  {event.rung}: {event.message}", file=sys.stderr, flush=True)
        elif isinstance(event, RungFinished):
            print(event.result.line(), file=sys.stderr, flush=True)

    print(f"no dump of this version yet: compiling {task.name} for the dump", file=sys.stderr, flush=True)
    options = RunOptions(rungs=["dump"], arch=args.arch, origin="asm", record=False)
    report = asyncio.run(check_once(task, options, emit=emit))
    dump_result = report.result("dump")
    if dump_result is None or dump_result.status in ("fail", "skip"):
        failed = next((r for r in report.results if r.status == "fail"), dump_result)
        reason = (failed.error or failed.summary) if failed else "the dump did not run"
        print(f"kerneltui: no dump: {reason}", file=sys.stderr)
        return EXIT_FAIL
    return EXIT_OK


def _header(dump: Any, variant: Any, stage: str) -> str:
    from kerneltui.core.asm.writer import variant_headline

    parts = variant_headline(variant.resources, variant.mix)
    return f"# {variant.kernel} [{variant.label}] · {stage} · {dump.arch}" + (f" · {' · '.join(parts)}" if parts else "")


def _show(dump: Any, variant: Any, stage: str, kernel_file: str, args: argparse.Namespace) -> int:
    text = dump.stage_text(variant, stage)
    lines = text.splitlines()
    line_map = dump.line_map(variant, stage)
    source_file = variant.source_file or kernel_file
    if args.source_line is not None:
        hits = line_map.asm_lines_for(source_file, args.source_line)
        if args.json:
            print_json({"kernel": variant.kernel, "variant": variant.label, "stage": stage, "source_file": source_file,
                        "source_line": args.source_line,
                        "lines": [{"line": n, "text": lines[n - 1]} for n in hits if n <= len(lines)]})
            return EXIT_OK
        print(_header(dump, variant, stage), file=sys.stderr)
        if not hits:
            produced = line_map.source_lines(source_file)
            print(f"{source_file}:{args.source_line} produced no {stage} lines"
                  + (f"; lines that did: {_ranges(produced)}" if produced else ""), file=sys.stderr)
            return EXIT_FAIL
        previous = None
        for n in hits:
            if previous is not None and n != previous + 1:
                print("  ...")
            print(f"{n:6d}  {_colour(lines[n - 1], stage, args)}")
            previous = n
        return EXIT_OK
    if args.json:
        print_json({"kernel": variant.kernel, "variant": variant.label, "stage": stage, "arch": dump.arch,
                    "text": text, "resources": variant.resources.to_dict() if variant.resources else None,
                    "mix": variant.mix.to_dict() if variant.mix else None,
                    "source_map": {str(k): [str(f) for f in v] for k, v in line_map.frames.items()}})
        return EXIT_OK
    print(_header(dump, variant, stage), file=sys.stderr)
    if args.annotate:
        task_files = dump.task_files or None
        width = max((len(str(f)) for f in (line_map.source_of(n, task_files) for n in line_map.frames) if f), default=0)
        for n, line in enumerate(lines, start=1):
            frame = line_map.source_of(n, task_files)
            where = f"{frame.file}:{frame.line}" if frame else ""
            print(f"{where:<{width}} | {_colour(line, stage, args)}")
        return EXIT_OK
    sys.stdout.write(_colour(text, stage, args) if _use_colour(args) else text)
    return EXIT_OK


def _list(dump: Any, args: argparse.Namespace) -> int:
    from kerneltui.core.asm.writer import variant_headline

    if args.json:
        print_json({"arch": dump.arch, "summary": dump.summary, "problems": dump.problems,
                    "kernels": [{"kernel": v.kernel, "variant": v.label, "primary": v.primary, "stages": v.stage_names,
                                 "cases": v.metadata.get("cases"),
                                 "resources": v.resources.to_dict() if v.resources else None}
                                for v in dump.variants()]})
        return EXIT_OK
    print(f"arch {dump.arch} · {dump.summary}")
    for v in dump.variants():
        mark = "*" if v.primary else " "
        print(f"{mark} {v.kernel} [{v.label}]  {' · '.join(variant_headline(v.resources, v.mix))}")
        print(f"    stages: {', '.join(v.stage_names)}")
        cases = v.metadata.get("cases") or []
        if cases:
            print(f"    cases: {', '.join(map(str, cases))}")
        if v.metadata.get("autotune"):
            print(f"    autotune: {v.metadata['autotune']}")
        if v.resources and v.resources.occupancy:
            print(f"    {v.resources.occupancy.get('text')}")
    for problem in dump.problems:
        print(f"! {problem}")
    return EXIT_OK


def _diff(task: Any, dump: Any, version_dir: Any, variant: Any, args: argparse.Namespace) -> int:
    from kerneltui.core.asm.diff import diff_dumps
    from kerneltui.core.asm.store import Dump, find_version

    other_dir = find_version(task.versions_dir, args.diff, exclude=version_dir)
    other = Dump.load(other_dir)
    stage = args.stage or ("sass" if "sass" in variant.stages else "ptx")
    diffs = diff_dumps(other, dump, stage, kernel=args.name, raw=args.raw)
    if args.json:
        print_json({"old": other_dir.name, "new": version_dir.name, "stage": stage,
                    "kernels": [{"kernel": d.kernel, "old_variant": d.old_label, "new_variant": d.new_label,
                                 "added": d.added, "removed": d.removed, "note": d.note,
                                 "resources": {k: list(v) for k, v in d.resources.items()},
                                 "opcodes": {k: list(v) for k, v in d.opcodes.items()}, "diff": d.lines}
                                for d in diffs]})
        return EXIT_OK
    print(f"# {stage}: {other_dir.name[:12]} → {version_dir.name[:12]}", file=sys.stderr)
    for d in diffs:
        print(d.headline())
        for line in d.lines:
            print(_colour(line, "diff", args) if _use_colour(args) else line)
    return EXIT_OK


def _use_colour(args: argparse.Namespace) -> bool:
    if args.color == "always":
        return True
    if args.color == "never":
        return False
    return sys.stdout.isatty()


def _colour(text: str, stage: str, args: argparse.Namespace) -> str:
    if not _use_colour(args):
        return text
    from pygments import highlight
    from pygments.formatters import Terminal256Formatter

    from kerneltui.core.asm.lexers import lexer_for_stage

    lexer = lexer_for_stage(stage) if stage != "diff" else _diff_lexer()
    out = highlight(text, lexer, Terminal256Formatter())
    return out if text.endswith("\n") else out.rstrip("\n")


def _diff_lexer() -> Any:
    from pygments.lexers import DiffLexer

    return DiffLexer()


def _ranges(values: list[int]) -> str:
    out: list[str] = []
    start = prev = None
    for v in values:
        if start is None:
            start = prev = v
        elif prev is not None and v == prev + 1:
            prev = v
        else:
            out.append(f"{start}" if start == prev else f"{start}-{prev}")
            start = prev = v
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
    return ", ".join(out)
