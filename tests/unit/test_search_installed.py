"""The ranked search over the installed DSL packages: their language indexed beside context/, each hit
labelled with the package's version, and a new version indexed afresh."""

from __future__ import annotations

from pathlib import Path

from kerneltui.core.agent.search import ContextIndex, format_hits
from kerneltui.core.agent.search.folders import ContextFolder, context_folders
from kerneltui.core.agent.search.installed import DslPackage, installed_packages

TABLE = (DslPackage("fakedsl", "Fake DSL", ("fakedsl",), ("language",)),)


def _install(site: Path, version: str) -> None:
    """A real package folder with its distribution metadata (one version at a time)."""
    package = site / "fakedsl"
    (package / "language").mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    core = package / "language" / "core.py"
    if not core.exists():
        core.write_text('def swizzle_rows(block):\n    """Permute the rows of a block so loads hit every bank."""\n'
                        "    return block\n")
    (package / "compiler").mkdir(exist_ok=True)
    (package / "compiler" / "lowering.py").write_text("def lower_swizzle_rows():\n    pass\n")
    for old in site.glob("fakedsl-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    meta = site / f"fakedsl-{version}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakedsl\nVersion: {version}\n")


def _index(tmp_path: Path, site: Path) -> ContextIndex:
    context = tmp_path / "context"
    context.mkdir(exist_ok=True)
    (context / "rows.md").write_text("# Rows\n\nHow to swizzle rows of shared memory, in prose.\n")
    folders = context_folders(None, context, installed_packages(TABLE, [str(site)]))
    return ContextIndex(folders, db_path=tmp_path / "index.sqlite3")


def test_an_installed_package_is_searched_and_labelled_with_its_version(tmp_path: Path):
    site = tmp_path / "site"
    _install(site, "1.2.3")
    index = _index(tmp_path, site)
    assert [f.origin for f in index.folders][-1] == "installed"
    index.refresh()
    hits = index.search("swizzle rows", 8)
    text = format_hits(hits, "swizzle rows")
    assert "installed/fakedsl/language/core.py:1  [fakedsl 1.2.3]" in text
    assert "lowering.py" not in text  # only the language is the API; the compiler is not indexed
    assert "context/rows.md" in text
    # a query that names the package puts it first
    named = index.search("fakedsl swizzle rows", 8)
    assert named[0].shown == "installed/fakedsl/language/core.py"
    report = next(r for r in index.report() if r.folder.origin == "installed")
    assert report.files == 1 and "the installed fakedsl 1.2.3" in report.folder.describe()


def test_a_new_version_is_indexed_afresh(tmp_path: Path):
    site = tmp_path / "site"
    _install(site, "1.0")
    _index(tmp_path, site).refresh()
    _install(site, "2.0")  # same files, same mtimes: only the version says they are another release's
    index = _index(tmp_path, site)
    stats = index.refresh()
    assert stats.removed == 1 and stats.added == 1
    hits = index.search("swizzle rows", 8)
    labels = [h.folder.label for h in hits if h.folder.origin == "installed"]
    assert labels == ["fakedsl 2.0"]
    assert index.refresh().added == 0  # and then it is up to date


def test_the_folders_of_a_session_end_with_the_installed_packages(tmp_path: Path):
    site = tmp_path / "site"
    _install(site, "1.0")
    folders = context_folders(None, tmp_path, installed_packages(TABLE, [str(site)]))
    assert [f.origin for f in folders] == ["configured", "notes", "installed"]
    assert folders[-1] == ContextFolder((site / "fakedsl").resolve(), "installed", folders[-1].package)
    assert folders[-1].label == "fakedsl 1.0"
