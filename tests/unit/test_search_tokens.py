"""Code-aware words: camel case, snake case, dotted names, plural and singular (through a real index)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kerneltui.core.agent.search import ContextIndex
from kerneltui.core.agent.search.tokens import (
    camel_parts,
    definition_match,
    expansion,
    path_text,
    query_terms,
)


def test_camel_parts():
    assert camel_parts("TensorDescriptor") == ("Tensor", "Descriptor")
    assert camel_parts("CuTeDSL") == ("Cu", "Te", "DSL")
    assert camel_parts("TiledMMA") == ("Tiled", "MMA")
    assert camel_parts("PersistentTileSchedulerSm90StreamK")[:3] == ("Persistent", "Tile", "Scheduler")
    assert camel_parts("make_layout") == () and camel_parts("SM90") == () and camel_parts("tensor") == ()


def test_expansion_adds_parts_and_joins_of_tiny_parts_once():
    words = expansion("see CuTeDSL and TensorDescriptor, TensorDescriptor again; make_layout").split()
    assert {"cu", "te", "dsl", "cute", "tensor", "descriptor"} <= set(words)
    assert len(words) == len(set(words))
    assert "make" not in words  # snake_case is split by the tokenizer itself


def test_path_words_name_the_language():
    text = path_text("examples/python/CuTeDSL/tutorial/04_tma_load.py")
    assert "04_tma_load" in text and "cute" in text.split() and "python" in text.split()


def test_query_terms_split_identifiers_and_drop_stopwords():
    fts = [t.fts() for t in query_terms("how to use make_layout with cute::Tensor", joins=False)]
    assert fts == ['("make layout" OR makelayout)', '("cute tensor" OR cutetensor)']
    assert query_terms("the of how") == []
    dotted = query_terms("tl.dot", joins=False)[0]
    assert dotted.alternatives[0] == '"tl dot"'
    camel = query_terms("TensorDescriptor")[0]
    assert camel.alternatives == ("tensordescriptor", '"tensor descriptor"')
    stream = query_terms("stream-K")[0]
    assert "streamk" in stream.alternatives
    joined = query_terms("tensor descriptor")
    assert all("tensordescriptor" in t.alternatives for t in joined)  # two words also match as one
    assert any(a.endswith("*") for a in query_terms("swizzle", prefixes=True)[0].alternatives)


@pytest.fixture
def index(tmp_path: Path) -> ContextIndex:
    root = tmp_path / "context"
    (root / "python" / "CuTeDSL").mkdir(parents=True)
    (root / "python" / "CuTeDSL" / "tma_copy.py").write_text(
        "def run():\n    desc = TensorDescriptor(x, [64, 64])\n    return desc\n")
    (root / "autotune.md").write_text("# Autotuning\n\nGive several configs and a key.\n")
    (root / "layouts.md").write_text("# Layouts\n\nCall make_layout with a shape and a stride.\n")
    (root / "dot.py").write_text('def dot(a, b):\n    """Multiply with tl.dot: the input precision is tf32."""\n')
    ix = ContextIndex(root, db_path=tmp_path / "idx.sqlite3")
    ix.refresh()
    return ix


def _paths(index: ContextIndex, query: str) -> list[str]:
    return [h.path for h in index.search(query)]


def test_plural_and_singular_match(index: ContextIndex):
    assert _paths(index, "config")[0] == "autotune.md"  # the text says "configs"
    assert _paths(index, "autotune keys")[0] == "autotune.md"


def test_camel_case_snake_case_and_dotted_names_match(index: ContextIndex):
    assert _paths(index, "tensor descriptor")[0] == "python/CuTeDSL/tma_copy.py"
    assert _paths(index, "TensorDescriptor")[0] == "python/CuTeDSL/tma_copy.py"
    assert _paths(index, "CuTe DSL tma")[0] == "python/CuTeDSL/tma_copy.py"
    assert _paths(index, "make_layout")[0] == "layouts.md"
    assert _paths(index, "make layout")[0] == "layouts.md"
    assert _paths(index, "tl.dot precision")[0] == "dot.py"


def test_abbreviations_match_the_words_they_stand_for(tmp_path: Path):
    root = tmp_path / "context"
    root.mkdir()
    (root / "alloc.py").write_text("def carve(smem_bytes):\n    buf = smem_alloc(smem_bytes)\n    return buf\n")
    (root / "knobs.py").write_text('CACHE = env_str("TRITON_CACHE_DIR", default_cache_dir())\n')
    (root / "prose.md").write_text("# Memory\n\nShared state lives in memory that the host owns.\n")
    ix = ContextIndex(root, db_path=tmp_path / "idx.sqlite3")
    ix.refresh()
    assert _paths(ix, "shared memory")[0] == "alloc.py"  # "shared memory" is one term that smem matches
    assert _paths(ix, "cache directory environment")[0] == "knobs.py"
    shared = query_terms("swizzle shared memory")
    assert [t.word for t in shared] == ["swizzle", "shared memory"] and "smem" in shared[1].alternatives
    assert "dir" in query_terms("directories")[0].alternatives  # plural too
    assert "smem" not in query_terms("shared memory", vocabulary=False)[1].alternatives


def test_prepositions_are_not_required_words(tmp_path: Path):
    root = tmp_path / "context"
    root.mkdir()
    (root / "debugging.md").write_text("# Debugging a kernel\n\nTo print values from a kernel, call device_print.\n")
    for n in range(3):  # code that happens to say "inside" next to the other words
        (root / f"pass_{n}.cpp").write_text(f"// kernel values printed inside loop {n}\nint print_{n}(int values);\n")
    ix = ContextIndex(root, db_path=tmp_path / "idx.sqlite3")
    ix.refresh()
    assert _paths(ix, "print values from inside a kernel")[0] == "debugging.md"
    assert [t.word for t in query_terms("print values from inside a kernel")] == ["print", "values", "kernel"]


def test_names_written_as_code_are_looked_up_as_definitions():
    assert '"def load"' in definition_match("tl.load")  # a dotted name is defined by its last part
    assert '"def from dlpack"' in definition_match("from_dlpack")
    assert '"struct collectivebuilder"' in definition_match("CollectiveBuilder")
    assert definition_match("swizzle") == definition_match("CuTe") == ""  # plain words, a name of tiny parts


def test_cumulative_sum_is_cumsum():
    [term, *_] = query_terms("cumulative sum scan along an axis")
    assert term.word == "cumulative sum" and "cumsum" in term.alternatives


def test_prose_meets_identifiers_in_code(tmp_path: Path):
    """A question in words finds the code that spells it as one identifier: three neighbouring words match a
    camel-case name joined, and the field's abbreviations match the words they stand for."""
    root = tmp_path / "context"
    root.mkdir()
    (root / "barrier.py").write_text("def arrive(bar, n):\n    mbarrier_arrive_expect_tx(bar, n)\n")
    (root / "ws.py").write_text("def run():\n    cfg = WarpSpecializeConfig(stages=3)\n    return cfg\n")
    (root / "block.cu").write_text("__global__ void k() {\n  int cta_rank = blockIdx.x;\n}\n")
    (root / "prose.md").write_text("# Memory\n\nThe tensor cores read memory; a warp waits at a barrier.\n")
    ix = ContextIndex(root, db_path=tmp_path / "idx.sqlite3")
    ix.refresh()
    assert _paths(ix, "arrive expect transaction")[0] == "barrier.py"
    assert _paths(ix, "warp specialize config")[0] == "ws.py"
    assert _paths(ix, "WarpSpecializeConfig")[0] == "ws.py"  # the whole identifier still matches
    assert _paths(ix, "thread block rank")[0] == "block.cu"
