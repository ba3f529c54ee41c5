"""Context search: a real SQLite FTS5 index over a small folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kerneltui.core.agent.search import ContextIndex, format_hits, query_terms


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


def test_query_terms_split_identifiers_and_drop_stopwords():
    assert query_terms("how to use make_layout with cute::Tensor") == [["make", "layout"], ["cute", "tensor"]]
    assert query_terms("the of") == []


def test_index_and_rank(folder: Path, tmp_path: Path):
    index = ContextIndex(folder, db_path=tmp_path / "idx.sqlite3")
    stats = index.refresh()
    assert stats.files == 4 and stats.added == 4  # .git skipped; the binary file is listed but yields no chunks
    hits = index.search("wgmma fence")
    assert [h.path for h in hits] == ["notes/hopper.md"]
    assert hits[0].line == 5 and "warpgroup fence" in dict(hits[0].snippet)[5]
    layout = index.search("make_layout")
    assert layout[0].path == "cutlass/include/cute/layout.hpp"
    assert layout[0].line == 51 and layout[0].start_line == 41
    assert "context/cutlass/include/cute/layout.hpp:51" in format_hits(layout, "make_layout")


def test_path_words_count(folder: Path, tmp_path: Path):
    index = ContextIndex(folder, db_path=tmp_path / "idx.sqlite3")
    index.refresh()
    assert index.search("copy")[0].path == "cutlass/include/cute/copy.hpp"


def test_any_word_when_not_all_match(folder: Path, tmp_path: Path):
    index = ContextIndex(folder, db_path=tmp_path / "idx.sqlite3")
    index.refresh()
    paths = {h.path for h in index.search("wgmma nonexistentword")}
    assert paths == {"notes/hopper.md"}


def test_under_limits_the_folder(folder: Path, tmp_path: Path):
    index = ContextIndex(folder, db_path=tmp_path / "idx.sqlite3")
    index.refresh()
    assert index.search("layouts", under="context/notes") == []
    assert index.search("layouts", under="context/cutlass")[0].path.endswith("layout.hpp")


def test_refresh_sees_changes(folder: Path, tmp_path: Path):
    index = ContextIndex(folder, db_path=tmp_path / "idx.sqlite3")
    index.refresh()
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
    index = ContextIndex(root, db_path=tmp_path / "idx.sqlite3")
    index.refresh()
    hits = index.search("tile", budget_s=0.0)
    assert len(hits) == 8 and all(h.sampled for h in hits)
    assert "very common" in format_hits(hits, "tile")
