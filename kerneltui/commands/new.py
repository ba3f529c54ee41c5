"""``kerneltui new DIR --from NAME``: scaffold a task from a bundled example."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from kerneltui.commands.common import EXIT_FAIL, EXIT_OK, EXIT_USAGE
from kerneltui.files import os_reason, write_bytes_atomic
from kerneltui.paths import examples_dir


def list_examples() -> list[str]:
    root = examples_dir()
    return sorted(p.name for p in root.iterdir() if (p / "task.toml").exists())


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("new", help="create a task directory from a bundled example")
    p.add_argument("dir", nargs="?", help="where to create the task")
    p.add_argument("--from", dest="source", default="vector_add", help="example name (see --list)")
    p.add_argument("--list", action="store_true", help="list the bundled examples")
    p.add_argument("--force", action="store_true", help="overwrite files in an existing directory")
    p.set_defaults(func=main)


def scaffold(name: str, target: Path, force: bool = False) -> Path:
    src = examples_dir() / name
    if not (src / "task.toml").exists():
        raise ValueError(f"no bundled example {name!r}; available: {', '.join(list_examples())}")
    if target.exists() and any(target.iterdir()) and not force:
        raise FileExistsError(f"{target} exists and is not empty (use --force to overwrite)")
    # --force replaces files a person may have edited: each whole or not at all (never a truncated kernel)
    shutil.copytree(src, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"),
                    copy_function=lambda s, d: write_bytes_atomic(Path(d), Path(s).read_bytes()))
    return target


def main(args: argparse.Namespace) -> int:
    if args.list:
        for name in list_examples():
            desc = ""
            import tomllib

            data = tomllib.loads((examples_dir() / name / "task.toml").read_text())
            desc = str(data.get("description", "")).strip().splitlines()[0] if data.get("description") else ""
            print(f"{name:<16} {data.get('backend', ''):<7} {desc}")
        return EXIT_OK
    if not args.dir:
        print("kerneltui new: give a directory (or --list)", file=sys.stderr)
        return EXIT_USAGE
    try:
        target = scaffold(args.source, Path(args.dir), args.force)
    except (ValueError, FileExistsError) as exc:
        print(f"kerneltui new: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"kerneltui new: cannot write {exc.filename or args.dir}: {os_reason(exc)}", file=sys.stderr)
        return EXIT_FAIL
    print(f"created {target} from {args.source}; run: kerneltui check {target}")
    return EXIT_OK
