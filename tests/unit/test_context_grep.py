"""grep_context: exact search over context/ and the installed DSL packages, in a child process under a time limit."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kerneltui.cli import main
from kerneltui.core.agent.search.folders import ContextFolder
from kerneltui.core.agent.search.grep import GrepError, GrepQuery, format_grep, grep, grep_files
from kerneltui.core.agent.search.installed import DslPackage, installed_packages
from kerneltui.core.agent.workspace import Workspace, WorkspaceError


@pytest.fixture
def context(tmp_path: Path) -> Path:
    root = tmp_path / "context"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "layout.py").write_text(
        "import math\n\n\ndef make_layout(shape,\n                stride=None):\n    return shape\n\n\n"
        "def make_layout_tv(a, b):\n    return make_layout(a)\n"
    )
    (root / "lib" / "notes.md").write_text("# Layouts\n\nCall make_layout(shape) to build one.\n")
    (root / "lib" / "blob.txt").write_bytes(b"make_layout\x00\x01\x02")
    (root / "lib" / "logo.png").write_bytes(b"make_layout")
    return root


def _grep(root: Path, query: GrepQuery, packages=(), time_limit_s: float = 4.0):
    folders = [ContextFolder(root, "configured"), *(ContextFolder(p.root, "installed", p) for p in packages)]
    plan = grep_files(folders, query.source, query.glob)
    return grep(query, plan, time_limit_s=time_limit_s)


def test_a_pattern_finds_every_line_with_file_and_line(context: Path):
    result = _grep(context, GrepQuery(r"def make_layout\w*\(", after=1))
    text = format_grep(result)
    assert "context/lib/layout.py:4: def make_layout(shape," in text
    assert "context/lib/layout.py-5-                 stride=None):" in text  # the signature goes on
    assert "context/lib/layout.py:9: def make_layout_tv(a, b):" in text
    assert result.total == 2 and "notes.md" not in text
    assert result.skipped["binary"] == 1  # blob.txt; logo.png is not a text kind at all
    assert "2 matches of the pattern" in text.splitlines()[0] and "[context/]" in text


def test_literal_text_glob_count_and_the_cap(context: Path):
    literal = _grep(context, GrepQuery("make_layout(", literal=True))
    assert literal.total == 3  # layout.py:4 and 10, notes.md:3
    only_md = _grep(context, GrepQuery("make_layout(", literal=True, glob="*.md"))
    assert [m.file.shown for m in only_md.matches] == ["context/lib/notes.md"] and only_md.matches[
        0
    ].line == 3
    counted = format_grep(_grep(context, GrepQuery("make_layout", count=True)))
    assert "context/lib/layout.py: 3" in counted and "context/lib/notes.md: 1" in counted
    capped = _grep(context, GrepQuery("make_layout", max_matches=2))
    assert len(capped.matches) == 2 and capped.total == 4
    assert "(the first 2 of 4 matches" in format_grep(capped)
    ignored = _grep(context, GrepQuery("MAKE_LAYOUT_TV", ignore_case=True))
    assert [(m.file.shown, m.line) for m in ignored.matches] == [("context/lib/layout.py", 9)]


def test_a_bad_pattern_or_source_says_what_to_do(context: Path):
    with pytest.raises(
        GrepError, match=r"not a regular expression: missing \), unterminated subpattern.*literal"
    ):
        GrepQuery("def f(").compiled()
    with pytest.raises(GrepError, match="unknown source 'pytorch'"):
        grep_files([ContextFolder(context, "configured")], "pytorch")


def test_a_file_over_the_size_limit_is_skipped_and_said(context: Path):
    (context / "big.txt").write_text("make_layout\n" + "x" * (2 * 1024 * 1024 + 10))
    result = _grep(context, GrepQuery("make_layout", glob="*.txt"))
    assert result.total == 0 and result.skipped["larger than 2 MB"] == 1
    assert "skipped: 1 larger than 2 MB" in format_grep(result)


def test_a_catastrophic_pattern_is_stopped_and_named(context: Path):
    (context / "lib" / "zz_many_a.md").write_text("a" * 40 + "!\n")
    started = time.perf_counter()
    result = _grep(context, GrepQuery(r"(a+)+b"), time_limit_s=0.5)
    took = time.perf_counter() - started
    assert took < 10  # without the kill this takes hours
    assert "context/lib/zz_many_a.md: the pattern backtracks too much" in result.stopped
    assert format_grep(result).splitlines()[1].startswith("incomplete: stopped after")


def _fake_dsl(site: Path, version: str) -> DslPackage:
    """A real package folder with distribution metadata, on a search path of its own."""
    package = site / "fakedsl"
    (package / "language").mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "language" / "core.py").write_text("def program_id(axis):\n    return axis\n")
    (package / "compiler").mkdir(exist_ok=True)
    (package / "compiler" / "passes.py").write_text("def program_id_pass():\n    pass\n")
    for old in site.glob("fakedsl-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    meta = site / f"fakedsl-{version}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakedsl\nVersion: {version}\n")
    return DslPackage("fakedsl", "Fake DSL", ("fakedsl",), ("language",))


def test_installed_packages_are_found_without_import_and_labelled_with_their_version(
    tmp_path: Path, context: Path
):
    site = tmp_path / "site"
    table = (_fake_dsl(site, "1.2.3"), DslPackage("not_installed_dsl", "None", ("none",), ("language",)))
    found = installed_packages(table, [str(site)])
    assert [(p.name, p.version, p.parts) for p in found] == [("fakedsl", "1.2.3", ("language",))]
    result = _grep(context, GrepQuery(r"def program_id"), packages=found)
    text = format_grep(result)
    # only the language folder: the compiler's program_id_pass is not the API
    assert "[fakedsl 1.2.3]\ninstalled/fakedsl/language/core.py:1: def program_id(axis):" in text
    assert "passes.py" not in text
    assert "fakedsl 1.2.3 (installed/fakedsl/language/)" in text.splitlines()[0]
    assert [m.file.shown for m in _grep(context, GrepQuery("program_id", source="context")).matches] == []


def test_read_file_reads_an_installed_package_and_nothing_beside_it(tmp_path: Path):
    site = tmp_path / "site"
    _fake_dsl(site, "1.0")
    (site / "secret.txt").write_text("not a package file")
    task = tmp_path / "task"
    task.mkdir()
    ws = Workspace(task, (), (("fakedsl", site / "fakedsl"),))
    text, summary = ws.read("installed/fakedsl/language/core.py")
    assert "1  def program_id(axis):" in text and summary.startswith("installed/fakedsl/language/core.py:1-2")
    with pytest.raises(WorkspaceError, match="outside the task folder"):
        ws.read("installed/fakedsl/../secret.txt")
    with pytest.raises(WorkspaceError, match="installed/ holds the DSL packages' own sources"):
        ws.read("installed/numpy/core.py")


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_the_installed_triton_gives_program_ids_signature(context: Path):
    triton = next(p for p in installed_packages() if p.name == "triton")
    core = (triton.root / "language" / "core.py").read_text().splitlines()
    line = next(n for n, text in enumerate(core, 1) if text.startswith("def program_id("))
    result = _grep(context, GrepQuery(r"def program_id\(", source="triton"), packages=[triton])
    assert f"installed/triton/language/core.py:{line}: {core[line - 1]}" in format_grep(result)
    assert triton.label.startswith("triton ") and triton.version


def test_the_command_greps_and_exits_by_what_it_found(context: Path, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("KERNELTUI_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNELTUI_CONFIG", str(tmp_path / "no-config.toml"))
    monkeypatch.setenv("KERNELTUI_AGENT_CONTEXT_DIR", str(context))
    assert (
        main(["context", "--grep", "make_layout(", "--literal", "--glob", "*.py", "--source", "context"]) == 0
    )
    out = capsys.readouterr().out
    assert "context/lib/layout.py:10:     return make_layout(a)" in out
    assert main(["context", "--grep", "make_layout", "--source", "context", "--count", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["path"]: c["matches"] for c in data["counts"]}["context/lib/layout.py"] == 3
    assert main(["context", "--grep", "no_such_name_anywhere", "--source", "context"]) == 1
    assert "0 matches" in capsys.readouterr().out
    assert main(["context", "--grep", "f(", "--source", "context"]) == 2
    assert "not a regular expression" in capsys.readouterr().err
    assert main(["context", "--grep", "x", "--source", "context", "words"]) == 2


def test_finding_the_installed_packages_imports_none_of_them():
    """The parent never imports torch or a DSL: the packages are located and their version read from metadata."""
    code = ("import sys\nfrom kerneltui.core.agent.search.installed import installed_packages\n"
            "found = installed_packages()\n"
            "print(sorted({'torch', 'triton', 'cutlass', 'tilelang'} & set(sys.modules)), len(found))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "[]", out
