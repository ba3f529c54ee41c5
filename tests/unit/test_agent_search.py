"""Context search: a real SQLite FTS5 index over small folders (no clones needed)."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import tomllib
from pathlib import Path

import pytest

from kerneltui import paths
from kerneltui.core.agent.search import ContextFolder, ContextIndex, context_folders, format_hits, notes_dir
from kerneltui.core.agent.search.folders import read_inside, scan, task_context_refusal
from kerneltui.core.agent.search.ranking import DEFAULT, file_prior, is_name, named_after

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "context"
    (root / "cutlass" / "include" / "cute").mkdir(parents=True)
    (root / "notes").mkdir()
    (root / ".git").mkdir()
    (root / "notes" / "hopper.md").write_text(
        "# Hopper\n\nThe H200 has 132 SMs.\n\nwgmma needs a warpgroup fence before the first MMA.\n")
    (root / "cutlass" / "include" / "cute" / "layout.hpp").write_text(
        "\n".join(["// layouts"] * 50 + ["auto l = make_layout(make_shape(4, 8), make_stride(8, 1));"]
                  + ["// more"] * 50) + "\n")
    (root / "cutlass" / "include" / "cute" / "copy.hpp").write_text("template <class T> void copy_atom() {}\n")
    (root / ".git" / "HEAD.txt").write_text("wgmma should not be found here\n")
    (root / "notes" / "blob.md").write_bytes(b"\x00binary wgmma")
    return root


def _index(root: Path, tmp_path: Path) -> ContextIndex:
    index = ContextIndex(root, db_path=tmp_path / "idx.sqlite3")
    index.refresh()
    return index


def _found(root: Path, tmp_path: Path, query: str, limit: int = 8, **ranking: float) -> list[str]:
    """The hits' paths for ``query`` over ``root`` (indexed, or brought up to date), with the ranking's
    fields in ``ranking`` changed: a rule's test searches with the rule and without it."""
    index = ContextIndex(root, db_path=tmp_path / "idx.sqlite3", ranking=dataclasses.replace(DEFAULT, **ranking))
    index.refresh()
    return [h.path for h in index.search(query, limit)]


def test_index_and_rank(folder: Path, tmp_path: Path):
    index = ContextIndex(folder, db_path=tmp_path / "idx.sqlite3")
    stats = index.refresh()
    assert stats.files == 4 and stats.added == 4  # .git skipped; the binary file is listed but yields no chunks
    hits = index.search("wgmma fence")
    assert [h.path for h in hits] == ["notes/hopper.md"]
    assert hits[0].line == 5 and "warpgroup fence" in dict(hits[0].snippet)[5]
    layout = index.search("make_layout")
    assert layout[0].path == "cutlass/include/cute/layout.hpp" and layout[0].line == 51
    assert layout[0].start_line <= 51 <= layout[0].end_line <= 101
    assert "context/cutlass/include/cute/layout.hpp:51" in format_hits(layout, "make_layout")


def test_path_words_count(folder: Path, tmp_path: Path):
    assert _index(folder, tmp_path).search("copy")[0].path == "cutlass/include/cute/copy.hpp"


def test_the_rarest_words_are_required_not_all(folder: Path, tmp_path: Path):
    index = _index(folder, tmp_path)
    assert {h.path for h in index.search("wgmma nonexistentword")} == {"notes/hopper.md"}
    assert index.search("nonexistentword") == []


def test_under_limits_the_folder(folder: Path, tmp_path: Path):
    index = _index(folder, tmp_path)
    assert index.search("layouts", under="context/notes") == []
    assert index.search("layouts", under="context/cutlass")[0].path.endswith("layout.hpp")


def test_refresh_sees_changes(folder: Path, tmp_path: Path):
    index = _index(folder, tmp_path)
    note = folder / "notes" / "hopper.md"
    note.write_text("# Hopper\nTMA multicast across a cluster\n")
    os.utime(note, ns=(1, 1))  # a different mtime even on coarse clocks
    (folder / "cutlass" / "include" / "cute" / "copy.hpp").unlink()
    (folder / "notes" / "new.md").write_text("stmatrix stores fragments\n")
    stats = index.refresh()
    assert (stats.added, stats.updated, stats.removed) == (1, 1, 1)
    assert index.search("wgmma") == []
    assert index.search("multicast")[0].path == "notes/hopper.md"
    assert index.search("stmatrix")[0].path == "notes/new.md"
    assert index.refresh().describe().endswith("s") and index.refresh().added == 0


def test_ensure_fresh_skips_a_recent_index(folder: Path, tmp_path: Path):
    index = ContextIndex(folder, db_path=tmp_path / "idx.sqlite3")
    assert index.ensure_fresh(300) is not None
    assert index.ensure_fresh(300) is None


def test_very_common_words_are_ranked_on_a_sample(tmp_path: Path):
    root = tmp_path / "context"
    root.mkdir()
    for i in range(60):
        (root / f"f{i}.md").write_text("tile " * 30 + "\n" + ("tile\n" * 200))
    index = _index(root, tmp_path)
    hits = index.search("tile", budget_s=0.0)
    assert len(hits) == 8 and all(h.sampled for h in hits)
    assert "very common" in format_hits(hits, "tile")


def test_no_hit_points_past_the_end_of_its_file(tmp_path: Path):
    # A file of exactly 40 lines: the old 40-line cutting made an empty chunk at line 41 that won on the
    # path words alone, and read_file then refused the hit.
    root = tmp_path / "context"
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "tensor_descriptor.py").write_text("".join(f"field_{i} = {i}\n" for i in range(40)))
    index = _index(root, tmp_path)
    hits = index.search("tensor descriptor")
    assert hits and all(1 <= h.start_line <= h.line <= h.end_line <= 40 for h in hits)
    assert all(h.snippet and all(text.strip() for _, text in h.snippet) for h in hits)


def test_scraps_do_not_win(tmp_path: Path):
    # "fp8 gemm scaling" returned `////`, `}` and `run<Gemm>` tails: every chunk of a file whose path
    # matched scored the same, and BM25 favours the shortest.
    root = tmp_path / "context"
    (root / "fp8_gemm_scaling").mkdir(parents=True)
    body = "".join(f"  float scale_{i} = 1.f;  // scale of operand {i}\n" for i in range(37))
    (root / "fp8_gemm_scaling" / "example.cu").write_text(
        f"// fp8 GEMM with scaling factors\nint run() {{\n{body}}}\n\n" + "/" * 80 + "\n}\n")
    index = _index(root, tmp_path)
    hits = index.search("fp8 gemm scaling")
    assert hits
    for hit in hits:
        text = "\n".join(t for _, t in hit.snippet)
        assert any(ch.isalnum() for ch in text), hit


def test_one_hit_per_file_with_the_others_named(tmp_path: Path):
    root = tmp_path / "context"
    root.mkdir()
    sections = "".join(f"## Swizzle {i}\n\n" + "Swizzle the shared memory rows.\n" * 40 + "\n" for i in range(4))
    (root / "swizzle.md").write_text("# Swizzles\n\n" + sections)
    (root / "other.md").write_text("# Other\n\nA swizzle mentioned once.\n")
    hits = _index(root, tmp_path).search("swizzle shared memory")  # other.md: swizzle, but not shared memory
    assert [h.path for h in hits] == ["swizzle.md", "other.md"]
    assert hits[0].also and all(a <= b for a, b in hits[0].also)
    assert "also: lines" in format_hits(hits, "swizzle")


def test_examples_and_docs_outrank_tests(tmp_path: Path):
    root = tmp_path / "context"
    for sub in ("test/unit", "examples/tma", "docs"):
        (root / sub).mkdir(parents=True)
    text = "def tma_load():\n    # a TMA load of one tile into shared memory\n    return load_tile()\n"
    (root / "test" / "unit" / "test_tma_load.py").write_text(text)
    (root / "examples" / "tma" / "tma_load.py").write_text(text)
    (root / "docs" / "tma_load.md").write_text("# TMA load\n\nA TMA load of one tile into shared memory.\n")
    paths_found = [h.path for h in _index(root, tmp_path).search("tma load shared memory")]
    assert paths_found[-1] == "test/unit/test_tma_load.py"


# -- the folders searched ------------------------------------------------------------------------


def test_kerneltuis_notes_ship_as_package_data():
    names = {p.name for p in notes_dir().glob("*.md")}
    assert {"triton.md", "cute_dsl.md", "ptx_sass.md", "hopper_h200.md"} <= names
    assert notes_dir().is_relative_to(paths.package_dir())
    with open(ROOT / "pyproject.toml", "rb") as f:
        data = tomllib.load(f)["tool"]["setuptools"]["package-data"]["kerneltui"]
    assert "data/**/*" in data  # kerneltui/data/notes/*.md goes into the wheel


def test_the_folders_a_session_searches(tmp_path: Path):
    task = tmp_path / "task"
    (task / "context").mkdir(parents=True)
    configured = tmp_path / "clones"
    configured.mkdir()
    folders = context_folders(task, configured)
    assert [(f.origin, f.path) for f in folders] == [("task", (task / "context").resolve()),
                                                       ("configured", configured.resolve()),
                                                       ("notes", notes_dir().resolve())]
    assert [f.origin for f in context_folders(None, configured)] == ["configured", "notes"]
    assert [f.origin for f in context_folders(task, notes_dir())] == ["task", "configured"]  # each folder once


def test_task_configured_and_notes_are_all_searched(tmp_path: Path):
    task = tmp_path / "task"
    (task / "context").mkdir(parents=True)
    (task / "context" / "mine.md").write_text("# Mine\n\nOur own trick: warp shuffle reduction.\n")
    configured = tmp_path / "clones"
    configured.mkdir()
    (configured / "lib.md").write_text("# Library\n\nThe library does a warp shuffle reduction too.\n")
    (configured / "triton.md").write_text("# Not the shipped one\n\nshuffle\n")
    index = ContextIndex(context_folders(task, configured), db_path=tmp_path / "idx.sqlite3")
    index.refresh()
    hits = index.search("warp shuffle reduction")
    assert {(h.folder.origin, h.path) for h in hits} >= {("task", "mine.md"), ("configured", "lib.md")}
    notes = index.search("HGMMA wgmma")  # only kerneltui's notes say this
    assert notes and notes[0].folder.origin == "notes" and notes[0].shown.startswith("context/")
    shadowed = [h for h in index.search("tl.dot input precision") if h.folder.origin == "notes"]
    # The configured folder's triton.md hides the shipped one's name: the hit is named by its real path.
    assert shadowed and all(h.shown == str(notes_dir().resolve() / h.path) for h in shadowed if h.path == "triton.md")


def test_what_is_indexed_and_what_is_skipped(tmp_path: Path):
    root = tmp_path / "context"
    (root / "media" / "docs" / "build").mkdir(parents=True)
    (root / "media" / "docs" / "build" / "building_with_clang.md").write_text("# Building with clang\n\nUse clang.\n")
    (root / "build").mkdir()
    (root / "build" / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE=Release\n")
    (root / "build" / "CMakeFiles").mkdir()  # a build tree: its cache and CMake's own folder
    (root / "build" / "generated.h").write_text("int generated_clang_thing;\n")
    (root / "notebooks").mkdir()
    (root / "notebooks" / "tour.ipynb").write_text(
        '{"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Tour of the pipeline\\n"]}], '
        '"metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    (root / "image.png").write_bytes(b"\x89PNG")
    (root / "big.txt").write_text("x" * (3 * 1024 * 1024))
    (root / "blob.md").write_bytes(b"\x00\x01binary")
    (root / "__pycache__").mkdir()
    index = _index(root, tmp_path)
    found = scan(root)
    assert set(found.files) == {"media/docs/build/building_with_clang.md", "notebooks/tour.ipynb", "blob.md"}
    assert index.search("building clang")[0].path == "media/docs/build/building_with_clang.md"  # a docs folder named build
    assert index.search("tour pipeline")[0].path == "notebooks/tour.ipynb"
    assert index.search("generated_clang_thing") == []
    report = index.report()[0]
    assert report.exists and report.files == 3
    assert report.counts["a CMake build folder"] == 1 and report.counts["too large"] == 1
    assert any("not a text kind" in why for why in report.counts)
    assert ("build", "skipped: a CMake build folder") in report.skipped
    assert any(p == "big.txt" and "larger than 2 MB" in why for p, why in report.skipped)
    assert ("blob.md", "not indexed: a binary file") in report.notes


def test_a_stray_build_file_does_not_make_a_folder_a_build_folder(tmp_path: Path):
    """triton's include/triton/Dialect/Gluon/ holds a CMakeCache.txt committed by mistake, and nothing else of a
    build: its sources are indexed. A folder is a build tree (or a virtual environment) by two of its marks."""
    root = tmp_path / "context"
    gluon = root / "triton" / "include" / "triton" / "Dialect" / "Gluon"
    (gluon / "IR").mkdir(parents=True)
    (gluon / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE=Release\n")
    (gluon / "IR" / "GluonOps.td").write_text("def Gluon_SetAutoLayoutOp : Gluon_Op<\"set_auto_layout\"> {}\n")
    builds = {"cmake": ("CMakeCache.txt", "CMakeFiles/"), "cmake-make": ("CMakeCache.txt", "Makefile"),
              "ninja": ("build.ninja", ".ninja_log"), "py-env": ("pyvenv.cfg", "bin/")}
    for name, marks in builds.items():
        for mark in marks:
            (root / name / mark).parent.mkdir(parents=True, exist_ok=True)
            if mark.endswith("/"):
                (root / name / mark).mkdir()
            else:
                (root / name / mark).write_text("x\n")
        (root / name / "generated.h").write_text("int generated_thing;\n")
    (root / "stray-ninja").mkdir()
    (root / "stray-ninja" / "build.ninja").write_text("rule cc\n")
    (root / "stray-ninja" / "notes.md").write_text("# How the ninja file is written\n")
    found = scan(root)
    assert "triton/include/triton/Dialect/Gluon/IR/GluonOps.td" in found.files
    assert "stray-ninja/notes.md" in found.files
    assert not any(rel.endswith("generated.h") for rel in found.files)
    assert {p for p, _ in found.skipped} >= set(builds)
    index = _index(root, tmp_path)
    assert index.search("set_auto_layout")[0].path == "triton/include/triton/Dialect/Gluon/IR/GluonOps.td"


def test_a_missing_folder_is_reported_not_an_error(tmp_path: Path):
    index = ContextIndex([ContextFolder(tmp_path / "nowhere", "configured")], db_path=tmp_path / "idx.sqlite3")
    assert not index.searchable()
    assert index.refresh().files == 0 and index.search("anything") == []
    assert index.report()[0].exists is False


# -- symbolic links never lead out of a folder ------------------------------------------------------


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "outside" / "passwd.txt"
    path.parent.mkdir()
    path.write_text("root:x:0:0:planted:/root:/bin/bash\n")
    return path


def test_a_link_out_of_the_folder_is_not_indexed_nor_returned(tmp_path: Path, secret: Path):
    root = tmp_path / "context"
    root.mkdir()
    (root / "real.md").write_text("# Shells\n\nbash is a shell; root owns /bin.\n")
    os.symlink(secret, root / "passwd.txt")
    os.symlink(secret.parent, root / "linked")  # a folder elsewhere
    inside = root / "inner.md"
    inside.write_text("# Inner\n\nroot bin bash inner\n")
    os.symlink(inside, root / "alias.md")  # a link to a file inside the folder is fine
    index = ContextIndex(root, db_path=tmp_path / "idx.sqlite3")
    index.refresh()
    hits = index.search("root bin bash")
    output = format_hits(hits, "root bin bash")
    assert "planted" not in output and "root:x:0:0" not in output
    assert {h.path for h in hits} <= {"real.md", "inner.md", "alias.md"} and hits
    con = sqlite3.connect(tmp_path / "idx.sqlite3")
    dump = "\n".join(con.iterdump())
    con.close()
    assert "planted" not in dump and "root:x:0:0" not in dump
    assert read_inside(root, "passwd.txt") is None and read_inside(root, "linked/passwd.txt") is None
    assert read_inside(root, "alias.md") is not None
    report = index.report()[0]
    assert any(p == "passwd.txt" and "outside the folder" in why for p, why in report.skipped)
    assert any(p == "linked" and "not followed" in why for p, why in report.skipped)


def test_a_file_swapped_for_a_link_after_indexing_is_not_read(tmp_path: Path, secret: Path):
    root = tmp_path / "context"
    root.mkdir()
    (root / "notes.md").write_text("# Notes\n\nroot bin bash\n")
    index = _index(root, tmp_path)
    (root / "notes.md").unlink()
    os.symlink(secret, root / "notes.md")
    assert "planted" not in format_hits(index.search("root bin bash"), "root bin bash")
    index.refresh()
    assert index.search("planted") == []


def test_a_task_context_that_is_a_link_is_not_searched(tmp_path: Path):
    task = tmp_path / "task"
    task.mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", task / "context")
    assert [f.origin for f in context_folders(task, tmp_path / "none")] == ["configured", "notes"]
    assert "symbolic link" in task_context_refusal(task) and "context_dir" in task_context_refusal(task)


@pytest.mark.slow
def test_a_large_refresh_cuts_files_in_worker_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from kerneltui.core.agent.search import index as index_module

    root = tmp_path / "context"
    root.mkdir()
    for i in range(12):
        (root / f"kernel_{i}.py").write_text(f'def kernel_{i}():\n    """Tile number {i} of the swizzle."""\n    return {i}\n')
    sequential = ContextIndex(root, db_path=tmp_path / "one.sqlite3")
    sequential.refresh()
    monkeypatch.setattr(index_module, "PARALLEL_FILES", 4)
    parallel = ContextIndex(root, db_path=tmp_path / "many.sqlite3")
    assert parallel.refresh().chunks_written == 12
    for query in ("swizzle tile", "kernel_7"):
        assert [(h.path, h.start_line) for h in parallel.search(query)] == \
            [(h.path, h.start_line) for h in sequential.search(query)]


def test_query_syntax_characters_are_words_not_operators(folder: Path, tmp_path: Path):
    index = _index(folder, tmp_path)
    for query in ('wgmma AND OR NOT "fence', "path:notes wgmma", "wgmma* ^fence -x", "NEAR(wgmma fence)", "()"):
        hits = index.search(query)
        assert all(h.path == "notes/hopper.md" for h in hits), query


def test_a_query_naming_a_top_level_folder_gets_its_files_first(tmp_path: Path):
    """With clones side by side, "softmax triton" asks for triton's softmax, however much cutlass says
    about softmax: triton's weaker hit ranks above cutlass's stronger ones, which still follow."""
    root = tmp_path / "context"
    for name in ("softmax.hpp", "softmax_epilogue.hpp", "online_softmax.hpp"):
        path = root / "cutlass" / "include" / "softmax" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("// Softmax: a numerically stable softmax over each row.\n"
                        "struct Softmax { float softmax(float x); };\n")
    (root / "triton" / "python").mkdir(parents=True)
    (root / "triton" / "python" / "ops.py").write_text(
        'def row_norm(x):\n    """Normalise each row of x: subtract its max, exponentiate, divide by the sum\n'
        '    (a softmax), in one pass over the row held in registers."""\n    return x\n')
    for i in range(6):
        (root / "triton" / "python" / f"other_{i}.py").write_text(f"def other_{i}():\n    return {i}\n")
    for clone in ("cutlass", "triton"):
        (root / clone / ".gitignore").write_text("build/\n")
    hits = ContextIndex(root, db_path=tmp_path / "idx.sqlite3")
    hits.refresh()
    found = [h.path for h in hits.search("softmax triton")]
    assert found[0] == "triton/python/ops.py"
    assert {p for p in found[1:] if p.startswith("cutlass/")} == \
        {f"cutlass/include/softmax/{n}" for n in ("softmax.hpp", "softmax_epilogue.hpp", "online_softmax.hpp")}
    # Without a word naming a folder nothing changes: the stronger cutlass hits lead.
    assert hits.search("softmax")[0].path.startswith("cutlass/")


def test_folder_names_are_read_again_after_a_refresh(tmp_path: Path):
    root = tmp_path / "context"
    (root / "cutlass" / ".github").mkdir(parents=True)
    (root / "cutlass" / "scan.hpp").write_text("// an inclusive scan over a warp\nvoid warp_scan();\n")
    index = ContextIndex(root, db_path=tmp_path / "idx.sqlite3")
    index.refresh()
    assert [h.path for h in index.search("scan triton")] == ["cutlass/scan.hpp"]
    (root / "triton" / ".git").mkdir(parents=True)
    (root / "triton" / "scan.py").write_text('def cumsum(x):\n    """A scan: the running sum of x."""\n')
    index.refresh()
    assert [h.path for h in index.search("scan triton")][0] == "triton/scan.py"


def test_a_file_at_the_top_names_no_folder(tmp_path: Path):
    """``swizzle.md`` at the top of the folder does not make "swizzle" a folder's name: other files
    that say swizzle are still found."""
    root = tmp_path / "context"
    (root / "src").mkdir(parents=True)
    (root / "swizzle.md").write_text("# Swizzle\n\nSwizzle the shared memory rows.\n")
    (root / "src" / "layout.py").write_text('def rows():\n    """A swizzle of the rows."""\n')
    found = [h.path for h in _index(root, tmp_path).search("swizzle shared")]
    assert found == ["swizzle.md", "src/layout.py"]


def test_only_the_folders_searched_name_folders(tmp_path: Path):
    """Another task's context/ shares the index file (one per configured folder): its top-level folders
    do not scope a search that does not include it."""
    configured = tmp_path / "clones"
    (configured / "cutlass" / ".git").mkdir(parents=True)
    (configured / "cutlass" / "scan.hpp").write_text("// an inclusive scan over a warp\nvoid warp_scan();\n")
    other = tmp_path / "other" / "context"
    (other / "triton" / ".git").mkdir(parents=True)
    (other / "triton" / "notes.md").write_text("# Scan\n\nNothing here.\n")
    db = tmp_path / "idx.sqlite3"
    ContextIndex([ContextFolder(configured, "configured"), ContextFolder(other, "task")], db_path=db).refresh()
    index = ContextIndex([ContextFolder(configured, "configured")], db_path=db)
    con = index._reader()
    assert index._clones(con, index._folder_ids(con)) == frozenset({"cutlass"})
    assert [h.path for h in index.search("scan triton")] == ["cutlass/scan.hpp"]


def test_the_folders_of_a_single_clone_name_no_clone(tmp_path: Path):
    """With a clone as the context folder itself, its ``python/`` is not a clone of its own: "… python
    example" still finds the example under ``examples/python/`` first."""
    root = tmp_path / "cutlass"
    (root / ".git").mkdir(parents=True)
    (root / "examples" / "python").mkdir(parents=True)
    (root / "python" / "lib").mkdir(parents=True)
    (root / "examples" / "python" / "tma_load.py").write_text(
        'def tma_load_example():\n    """A TMA load example: copy one tile with the TMA unit."""\n')
    (root / "python" / "lib" / "tma.py").write_text('def tma():\n    """TMA."""\n')
    found = [h.path for h in _index(root, tmp_path).search("TMA load python example")]
    assert found[0] == "examples/python/tma_load.py"


def test_the_definition_of_a_name_the_query_asks_for_comes_first(tmp_path: Path):
    root = tmp_path / "context"
    (root / "language").mkdir(parents=True)
    (root / "examples").mkdir()
    (root / "language" / "core.py").write_text(
        "def store(pointer, value):\n    return value\n\n\n"
        'def load(pointer, mask=None, cache_modifier="", eviction_policy=""):\n'
        '    """Return a tensor of data whose values are loaded from memory at the location of pointer."""\n'
        "    return pointer\n")
    for n in range(4):  # examples that call it, with more of the question's words than the definition
        (root / "examples" / f"kernel_{n}.py").write_text(
            "def kernel(x_ptr):\n    # the eviction policy and the cache modifier of each load\n"
            '    x = tl.load(x_ptr, eviction_policy="evict_last", cache_modifier=".cg")\n    return x\n')
    query = "tl.load eviction policy and cache modifier"
    assert _found(root, tmp_path, query)[0] == "language/core.py"
    assert _found(root, tmp_path, query, definition=0.0)[0].startswith("examples/")  # what the rule changes
    # An example's own helper of that name is not the definition.
    (root / "examples" / "helper.py").write_text('def load(p, cache_modifier="", eviction_policy=""):\n    return p\n')
    assert _found(root, tmp_path, query)[0] == "language/core.py"


def test_a_new_index_opened_while_another_connection_makes_it_keeps_what_that_one_wrote(folder: Path,
                                                                                        tmp_path: Path):
    """The TUI builds a new index in the background while a search, or a poll of when it was built,
    opens the same file: a connection that found no schema yet made it again once the other had
    committed and failed ("table folders already exists"); when that was the background build, the
    index stayed empty."""
    import threading
    import time

    from kerneltui.core.agent.search.index import _SCHEMA, SCHEMA_VERSION

    db = tmp_path / "idx.sqlite3"
    first = sqlite3.connect(db, timeout=60, isolation_level=None)
    first.execute("PRAGMA journal_mode=WAL")
    first.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
    # The first connection is making the schema and filling it, in one transaction not yet committed.
    first.execute("BEGIN IMMEDIATE")
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            first.execute(statement)
    first.execute("INSERT INTO meta VALUES('schema', ?)", (SCHEMA_VERSION,))
    first.execute("INSERT INTO folders(path, origin, refreshed_at) VALUES(?, 'configured', 1.0)", (str(folder),))
    second = ContextIndex(folder, db_path=db)
    seen: list[float | None] = []
    opener = threading.Thread(target=lambda: seen.append(second.refreshed_at()))
    opener.start()
    time.sleep(1.0)  # the second connection has read the meta table and waits for the write lock
    first.execute("COMMIT")
    opener.join(60)
    assert seen == [1.0]
    assert first.execute("SELECT path FROM folders").fetchall() == [(str(folder),)]
    first.close()


def test_a_file_named_after_the_question_is_found_without_its_other_words(tmp_path: Path):
    root = tmp_path / "context"
    (root / "include" / "cute").mkdir(parents=True)
    (root / "examples").mkdir()
    # The definition says neither "shared memory" nor "layout": the required words leave it out.
    (root / "include" / "cute" / "swizzle.hpp").write_text(
        "// A generic swizzle functor: XOR of the bits BBits above MBase, shifted by SShift\n"
        "template <int BBits, int MBase, int SShift>\nstruct Swizzle {\n  int apply(int offset);\n};\n")
    for n in range(4):  # kernels whose comments hold every word of the question
        (root / "examples" / f"gemm_{n}.py").write_text(
            f"def gemm_{n}(a, b):\n    # the shared memory layout of A, swizzled to avoid bank conflicts\n"
            "    smem_layout = make_layout(a)\n    return swizzle(smem_layout)\n")
    for n in range(4):  # … and more code on shared memory layouts: "swizzle" is the question's rarest word
        (root / "examples" / f"copy_{n}.py").write_text(f"def copy_{n}(a):\n    # a shared memory layout\n    return a\n")
    query = "swizzle shared memory layout"
    assert "include/cute/swizzle.hpp" in _found(root, tmp_path, query, 3)
    assert "include/cute/swizzle.hpp" not in _found(root, tmp_path, query, 3, named_file=0.0)  # what the rule changes


def test_which_file_names_are_named_after_a_question():
    words = frozenset({"split", "k", "splitk", "gemm", "reduction"})
    assert named_after("examples/06_splitK_gemm/splitk_gemm.cu", words, frozenset({"splitk", "split"}))
    assert named_after("tutorials/08-grouped-gemm.py", frozenset({"group", "gemm"}), frozenset({"group"}))
    # A name of the query's commonest word alone is not the question's; nor one with other words in it.
    assert not named_after("python/gemm.py", words, frozenset({"splitk", "split"}))
    assert not named_after("examples/hopper_splitk_gemm.cu", words, frozenset({"splitk", "split"}))


def test_a_compilers_own_sources_weigh_less_than_its_user_code():
    assert file_prior("triton/lib/Conversion/TritonGPUToLLVM/AllocateWarpGroups.cpp") < 1.0
    assert file_prior("triton/include/triton/Dialect/Triton/IR/TritonAttrDefs.td") < 1.0
    assert file_prior("triton/third_party/proton/Dialect/lib/ProtonToLLVM/Utility.mlir") < 1.0
    assert file_prior("triton/python/triton/runtime/autotuner.py") == 1.0  # the library a person calls
    assert file_prior("cutlass/include/cutlass/arch/reg_reconfig.h") == 1.0  # a header library is its API


def test_a_name_in_the_question_is_required_before_a_plain_word_as_rare(tmp_path: Path):
    # "TVM FFI … with low overhead": "overhead" is rarer in the folder than "TVM", yet the question is about
    # TVM FFI; required first, the rare plain words found three files that only say "low … overhead".
    root = tmp_path / "context"
    (root / "library").mkdir(parents=True)
    (root / "guides").mkdir()
    for n in range(3):
        (root / "library" / f"operation_{n}.h").write_text(
            f"// arguments {n} are passed to an initialized operation with low computational overhead\n"
            f"struct Arguments{n} {{ int m, n, k; }};\n")
    (root / "guides" / "tvm_ffi.md").write_text(
        "# Compiling with TVM FFI\n\nTVM FFI passes torch tensors to a compiled kernel, fast.\n")
    for n in range(4):
        (root / "guides" / f"ffi_{n}.md").write_text(f"# Note {n}\n\nThe TVM runtime and its FFI, part {n}.\n")
    query = "TVM FFI with low overhead"
    assert _found(root, tmp_path, query)[0] == "guides/tvm_ffi.md"
    assert _found(root, tmp_path, query, name_rarity=1.0)[0].startswith("library/")  # what the rule changes
    assert [w for w in ("TVM", "FastAccum", "tl.reduce", "fp8", "sm_120", "overhead", "matrix-vector", "CUTLASS")
            if is_name(w)] == ["TVM", "FastAccum", "tl.reduce", "fp8", "sm_120", "CUTLASS"]


def test_the_one_chunk_with_every_word_of_the_question_comes_first(tmp_path: Path):
    # Words are required while any chunk still holds them all: three short notes that say "parity" and
    # "phase" over and over do not outrank the one function that also says "mbarrier" (a word four other
    # files use too, so it is not the rarest). Required only while three chunks held them all, they did.
    root = tmp_path / "context"
    root.mkdir()
    for n in range(3):
        (root / f"phase_{n}.md").write_text("# Parity phase\n\nparity phase parity phase parity phase\n")
    for n in range(4):
        (root / f"mbarrier_{n}.py").write_text(f"def arrive_{n}(mbarrier):\n    return mbarrier\n")
    (root / "barrier.py").write_text(
        "def wait(bar, phase, parity, count, stage, ring, expected_bytes, timeout):\n"
        "    # block until the mbarrier completes this phase: try_wait on its parity, then flip the parity\n"
        "    # for the next stage of the ring buffer, counting the expected transaction bytes\n"
        "    return bar, count, stage, ring, expected_bytes, timeout\n")
    assert _found(root, tmp_path, "mbarrier parity phase")[0] == "barrier.py"
    assert _found(root, tmp_path, "mbarrier parity phase", min_matches=3)[0] != "barrier.py"  # the old rule


def test_a_question_naming_a_language_or_framework_prefers_its_files(tmp_path: Path):
    """"… in cutlass C++" asks for the C++ header, "… in the CuTe DSL" for the Python DSL, however much more the
    other says about the same call (the Python DSL's docs say make_tma_copy more often than the header)."""
    root = tmp_path / "context"
    header = root / "cutlass" / "include" / "cute" / "atom" / "copy_traits_sm90_tma.hpp"
    header.parent.mkdir(parents=True)
    header.write_text("// make_tma_copy: build the TMA copy atom for a global tensor and a shared memory layout\n"
                      "template <class T>\nauto make_tma_copy(T const& gtensor) { return gtensor; }\n")
    dsl = root / "cutlass" / "python" / "CuTeDSL" / "cute" / "nvgpu" / "cpasync" / "copy.py"
    dsl.parent.mkdir(parents=True)
    dsl.write_text('def make_tma_copy(op, gtensor, smem_layout):\n    """make_tma_copy builds a TMA copy atom: '
                   'make_tma_copy takes the global tensor and the shared memory layout (make_tma_copy)."""\n'
                   "    return op\n")
    (root / "cutlass" / ".git").mkdir()
    for n in range(3):  # other files, so that the words are not everywhere
        (root / "cutlass" / f"other_{n}.md").write_text(f"# Other {n}\n\nNothing about copies.\n")
    cpp = "make_tma_copy in cutlass C++"
    assert _found(root, tmp_path, cpp, framework=1.0)[0].endswith("copy.py")  # without the rule: the DSL
    assert _found(root, tmp_path, cpp)[0] == "cutlass/include/cute/atom/copy_traits_sm90_tma.hpp"
    assert _found(root, tmp_path, "make_tma_copy in the CuTe DSL")[0].endswith("cpasync/copy.py")
    assert _found(root, tmp_path, "make_tma_copy python")[0].endswith("cpasync/copy.py")


def test_a_cpp_functions_definition_is_found_as_a_python_one_is(tmp_path: Path):
    """C++ says no "def": the header that defines make_tma_copy is its definition all the same, and comes
    before the examples that call it with more of the question's words."""
    root = tmp_path / "context"
    (root / "include").mkdir(parents=True)
    (root / "examples").mkdir()
    (root / "include" / "copy_traits_sm90_tma.hpp").write_text(
        "template <class CopyOp, class GTensor>\nCUTE_HOST_RTC\nauto\n"
        "make_tma_copy(CopyOp const& op, GTensor const& gtensor)\n{\n  return op;\n}\n")
    for n in range(4):
        (root / "examples" / f"gemm_{n}.cu").write_text(
            "// the TMA copy of A with multicast over the cluster for each stage\n"
            "void run() {\n  auto tma = make_tma_copy(SM90_TMA_LOAD_MULTICAST{}, mA, cluster_size);\n}\n")
    query = "make_tma_copy multicast over the cluster"
    assert _found(root, tmp_path, query)[0] == "include/copy_traits_sm90_tma.hpp"
    assert _found(root, tmp_path, query, definition=0.0)[0].startswith("examples/")


def test_meta_documents_and_internals_weigh_less_unless_asked_for(tmp_path: Path):
    """Meeting notes, a README's change log, an examples index and a backend's compiler or driver mention a
    question's words without teaching the thing: the page that teaches it comes first, unless the question asks
    for the change log, the notes, the index or the compiler."""
    root = tmp_path / "context"
    words = "tma multicast cluster launch"
    files = {
        "docs/guide/sharing_loads.md": f"# Sharing loads\n\nA {words} shares one load between the CTAs.\n",
        "README.md": f"# Library\n\nA library.\n\n## Changelog\n\n- {words} {words}: {words} added.\n",
        "docs/meetups/2024-05/notes.md": f"# Meetup notes\n\n- {words}, {words}: {words} discussed.\n",
        "examples/README.md": f"# Examples\n\n- 01: {words}\n- 02: {words}\n- 03: {words}\n",
        "third_party/nvidia/backend/compiler.py": f"def make_llir(src):\n    # {words} {words}\n    return src\n",
        "third_party/amd/backend/driver.c": f"// {words} {words} {words}\nint launch(void) {{ return 0; }}\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for n in range(6):
        (root / f"other_{n}.md").write_text(f"# Other {n}\n\nAbout something else.\n")
    assert _found(root, tmp_path, words)[0] == "docs/guide/sharing_loads.md"
    assert _found(root, tmp_path, words, history=1.0, internals=1.0, index_page=1.0)[0] != "docs/guide/sharing_loads.md"
    assert _found(root, tmp_path, f"changelog {words}")[0] == "README.md"
    assert _found(root, tmp_path, f"meeting notes {words}")[0] == "docs/meetups/2024-05/notes.md"
    assert _found(root, tmp_path, f"index of examples {words}")[0] == "examples/README.md"
    assert _found(root, tmp_path, f"compiler backend {words}")[0].startswith("third_party/")
    assert file_prior("triton/third_party/amd/backend/include/hip/hip_runtime_api.h") < 1.0
    assert file_prior("triton/third_party/nvidia/backend/driver.c") < 1.0
    assert file_prior("triton/python/triton/backends/compiler.py") < 1.0
    assert file_prior("cutlass/examples/README.md") < file_prior("cutlass/examples/48_hopper/README.md")
    assert file_prior("triton/third_party/proton/tutorials/matmul.py") > 1.0  # a tutorial is no internal


def test_near_duplicate_files_do_not_crowd_out_the_canonical_one(tmp_path: Path):
    """Four variants of one example (b2b_mma_multistage.h, …_smem_accumulator.h, the implicit-GEMM pair) took the
    first places before the canonical mma_multistage.h: after the family's best, each weighs less, and those
    that fall out of the hits are named with it."""
    root = tmp_path / "context"
    variants = root / "examples" / "13_two_tensor_op_fusion" / "threadblock"
    variants.mkdir(parents=True)
    body = ("// A multistage mainloop: cp.async global to shared memory, software pipelined over the stages,\n"
            "// each stage waits on the cp.async group before the warp-level MMA of the tile.\n"
            "template <int Stages>\nstruct {name} {{ void operator()(); }};\n")
    for name in ("b2b_mma_multistage", "b2b_mma_multistage_smem_accumulator", "b2b_implicit_gemm_multistage",
                 "b2b_implicit_gemm_multistage_smem_accumulator"):
        (variants / f"{name}.h").write_text(body.format(name=name))
    canonical = root / "include" / "cutlass" / "gemm" / "threadblock" / "mma_multistage.h"
    canonical.parent.mkdir(parents=True)
    canonical.write_text("// Multistage mainloop: cp.async stages software pipelined before the warp-level MMA.\n"
                         "template <int Stages>\nclass MmaMultistage { void operator()(); };\n")
    for n in range(6):
        (root / f"other_{n}.md").write_text(f"# Other {n}\n\nAbout something else.\n")
    query = "multistage mainloop cp.async stages pipelined"
    assert _found(root, tmp_path, query, 2, family=1.0)[1].startswith("examples/")  # without the rule
    hits = ContextIndex(root, db_path=tmp_path / "idx.sqlite3").search(query, 2)
    assert [h.path for h in hits][1] == "include/cutlass/gemm/threadblock/mma_multistage.h"
    assert len(hits[0].similar) == 3  # the other three variants, named with the first
    assert "similar: " in format_hits(hits, query)
    assert len(_found(root, tmp_path, query, 8)) == 5  # with room, the variants are hits of their own


def test_a_hit_points_at_the_code_that_answers_not_at_the_imports(tmp_path: Path):
    """The import line names every word of the question (``from cutlass.pipeline import PipelineTmaAsync,
    CooperativeGroup``); the hit's line is where the pipeline is made, not the file's header."""
    root = tmp_path / "context"
    example = root / "examples" / "hopper" / "dense_gemm.py"
    example.parent.mkdir(parents=True)
    example.write_text(
        "import cutlass\nimport cutlass.pipeline as pipeline\n"
        "from cutlass.pipeline import PipelineTmaAsync, CooperativeGroup\n\n\n"
        "def make_pipeline(stages, barrier_storage):\n"
        "    # the producer's TMA loads arrive on the full barrier; two consumer warpgroups release it\n"
        "    consumers = CooperativeGroup(pipeline.Agent.Thread, 2)\n"
        "    return PipelineTmaAsync.create(num_stages=stages, consumer_group=consumers,\n"
        "                                   barrier_storage=barrier_storage)\n")
    (root / "other.md").write_text("# Other\n\nAbout something else.\n")
    [hit] = _index(root, tmp_path).search("pipeline tma async cooperative group")
    assert hit.path == "examples/hopper/dense_gemm.py"
    assert hit.line == 9, hit.snippet  # return PipelineTmaAsync.create(…), not line 3's import
