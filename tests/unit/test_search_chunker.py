"""Chunks follow each file kind's structure; every chunk has words in it and a valid line range."""

from __future__ import annotations

import json
import re

import pytest

from kerneltui.core.agent.search.chunker import chunk_text, kind_of
from kerneltui.core.agent.search.chunks import MAX_LINES, Chunk

LICENSE = "".join(f"# Copyright (c) 2024 Somebody. All rights reserved. {i}\n" for i in range(3)) + \
    "# SPDX-License-Identifier: BSD-3-Clause\n"

PYTHON = LICENSE + '''"""Matrix multiplication tutorial."""

import triton
import triton.language as tl


# The kernel: one program per output tile.
@triton.autotune(configs=[], key=["M"])
@triton.jit
def matmul_kernel(a_ptr, b_ptr, M):
    """Multiply A and B.

    Grouped ordering improves L2 reuse.
    """
    pid = tl.program_id(0)
    return pid


class Runner:
    """Runs the kernel."""

    def run(self):
        return 1
''' + "".join(f"\n    def method_{i}(self):\n        # step {i}\n" + "        x = 1\n" * 12 + "        return x\n"
              for i in range(8)) + '''

# %%
# Benchmark
# ---------
# Compare with cuBLAS.
''' + "".join(f"bench_{i} = run({i})\n" for i in range(14))

CUDA = """/***************************************************************************************************
 * Copyright (c) 2024 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 **************************************************************************************************/
/*! \\file
    \\brief Swizzle functions for shared memory layouts.
*/
#include "cute/config.hpp"
#include "cute/numeric/integer_sequence.hpp"

namespace cute {

/// A generic Swizzle functor: XORs the BBits starting at MBase + SShift into those at MBase.
template <int BBits, int MBase, int SShift = BBits>
struct Swizzle
{
  static constexpr int num_bits = BBits;

  template <class Offset>
  CUTE_HOST_DEVICE constexpr static
  auto
  apply(Offset const& offset)
  {
    return offset ^ shiftr(offset & yyy_msk, msk_sft);  // the XOR
  }
};

__global__ void add_kernel(float const* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] += x[i]; }
}

} // end namespace cute

////////////////////////////////////////////////////////////////////////////////////////////////////
"""

MARKDOWN = """# CuTe Layouts

A layout maps coordinates to indices.

## Coalesce

Coalescing merges modes.

```python
# this is a comment, not a heading
layout = make_layout((2, 4))
```

## Composition

""" + "".join(f"Composition line {i}.\n" for i in range(150)) + """
### Tiny
ok
"""

RST = """Debugging Triton
================

Intro text.

Using the Interpreter
---------------------

Set the environment variable. For example::

    TRITON_INTERPRET=1 python main.py

.. code-block:: python

    import triton

Back to prose.
"""


def _notebook() -> str:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Async pipeline\n", "\n", "Producer and consumer warps.\n"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [
            {"name": "stdout", "output_type": "stream", "text": ["done\n"] * 30}],
         "source": ["import cutlass.cute as cute\n", "# make the pipeline\n", "pipeline = make_pipeline(stages=4)\n"]},
        {"cell_type": "markdown", "metadata": {}, "source": "## Consumer release\nThe consumer releases the buffer."},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def _check_invariants(name: str, text: str, chunks: list[Chunk]) -> None:
    lines = text.split("\n")
    count = len(lines) - 1 if text.endswith("\n") else len(lines)
    assert chunks, f"{name}: no chunks"
    last_end = 0
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= count, (name, c.start_line, c.end_line, count)
        assert c.start_line > last_end, f"{name}: chunks overlap"
        last_end = c.end_line
        assert re.search(r"[^\W_]", c.doc + c.code), f"{name}: a chunk without a word at {c.start_line}"
        assert re.search(r"[^\W_]", lines[c.start_line - 1]) and re.search(r"[^\W_]", lines[c.end_line - 1])
        assert c.end_line - c.start_line < MAX_LINES + 10


@pytest.mark.parametrize("name,text", [("tutorial.py", PYTHON), ("swizzle.hpp", CUDA), ("add.cu", CUDA),
                                       ("layout.md", MARKDOWN), ("debugging.rst", RST), ("pipe.ipynb", _notebook()),
                                       ("notes.txt", "alpha\n\nbeta\n" * 40)])
def test_every_kind_gives_valid_chunks(name: str, text: str):
    chunks, note = chunk_text(name, text)
    assert note == ""
    _check_invariants(name, text, chunks)


def test_kinds_by_suffix():
    assert [kind_of(n) for n in ("a.py", "b.cuh", "c.hpp", "d.md", "e.rst", "f.ipynb", "CMakeLists.txt")] == \
        ["python", "c", "c", "markdown", "rst", "notebook", "text"]


def test_python_chunks_are_definitions_with_their_comments_and_docstrings():
    chunks, _ = chunk_text("tutorial.py", PYTHON)
    kernel = next(c for c in chunks if "def matmul_kernel" in c.title)
    assert "The kernel: one program per output tile" in kernel.doc  # the comment above the definition joins it
    assert "Grouped ordering improves L2 reuse" in kernel.doc and "Grouped ordering" not in kernel.code
    assert "pid = tl.program_id(0)" in kernel.code and "@triton.autotune" in kernel.code
    assert not any("Copyright" in c.doc for c in chunks)  # the licence is left out
    assert chunks[0].start_line > 4
    methods = [c for c in chunks if "class Runner > def method_" in c.title]
    assert len(methods) >= 3  # a class too long for one chunk is cut at its methods
    cell = next(c for c in chunks if "Compare with cuBLAS" in c.doc)  # a "# %%" cell starts a chunk of its own
    assert PYTHON.split("\n")[cell.start_line - 2] == "# %%" and "def method_" not in cell.code


def test_c_chunks_follow_braces_and_namespaces():
    chunks, _ = chunk_text("swizzle.hpp", CUDA)
    titles = [c.title for c in chunks]
    assert any(t.startswith("struct Swizzle") for t in titles), titles
    swizzle = next(c for c in chunks if c.title.startswith("struct Swizzle"))
    assert "XORs the BBits" in swizzle.doc and "offset ^ shiftr" in swizzle.code
    assert "Swizzle functions for shared memory layouts" in chunks[0].doc  # the file's own comment is kept
    assert not any("Copyright" in c.doc for c in chunks)
    assert all("#include" not in c.code for c in chunks)  # includes match every header's words: left out
    assert any("__global__ void add_kernel" in c.code for c in chunks)
    assert CUDA.split("\n")[chunks[-1].end_line - 1].strip() != "/" * 100  # no trailing scrap


def test_c_titles_skip_templates_and_macros():
    text = "template <\n  class T,\n  class U\n>\nCUTLASS_HOST_DEVICE\nstatic void\nfixup(T t, U u) {\n  run(t);\n}\n"
    chunks, _ = chunk_text("fix.hpp", text * 3)
    assert chunks[0].title.startswith("static void fixup(T t, U u)")


def test_markdown_sections_carry_their_heading_chain():
    chunks, _ = chunk_text("layout.md", MARKDOWN)
    assert chunks[0].title.startswith("CuTe Layouts")
    coalesce = next(c for c in chunks if "CuTe Layouts > Coalesce" in c.title)
    assert "make_layout" in coalesce.code and "this is a comment" not in coalesce.doc  # a fence is code
    composition = [c for c in chunks if "Composition" in c.title]
    assert len(composition) >= 2  # a long section is cut
    assert all("# this is a comment" not in c.title for c in chunks)


def test_rst_headings_and_literal_blocks():
    chunks, _ = chunk_text("debugging.rst", RST)
    interp = next(c for c in chunks if "Debugging Triton > Using the Interpreter" in c.title)
    assert "TRITON_INTERPRET=1" in interp.code and "import triton" in interp.code
    assert "Back to prose" in interp.doc and "TRITON_INTERPRET" not in interp.doc


def test_notebook_cells_point_at_the_json_lines_of_their_source():
    text = _notebook()
    lines = text.split("\n")
    chunks, _ = chunk_text("pipe.ipynb", text)
    joined = " ".join(c.doc + " " + c.code for c in chunks)
    assert "Producer and consumer warps" in joined and "pipeline = make_pipeline(stages=4)" in joined
    assert "done" not in joined  # outputs are not indexed
    first = chunks[0]
    assert "Async pipeline" in first.title
    assert '"# Async pipeline\\n"' in lines[first.start_line - 1]
    code = next(c for c in chunks if "make_pipeline" in c.code)
    span = "\n".join(lines[code.start_line - 1:code.end_line])
    assert "make_pipeline" in span


def test_a_broken_notebook_is_read_as_text():
    chunks, note = chunk_text("broken.ipynb", '{"cells": [ this is not json\n')
    assert "plain text" in note and chunks and chunks[0].start_line == 1


@pytest.mark.parametrize("lines", [40, 80, 120])
def test_files_of_exactly_40k_lines_have_no_empty_tail(lines: int):
    text = "".join(f"value_{i} = {i}\n" for i in range(lines))
    chunks, _ = chunk_text("consts.py", text)
    assert chunks[-1].end_line == lines and all(c.end_line <= lines for c in chunks)
    _check_invariants("consts.py", text, chunks)


def test_scraps_join_a_neighbour():
    body = "int f() {\n" + "  x += 1;\n" * 60 + "}\n"
    text = body + "#endif // SM90\n" + "\n" * 3 + body.replace("f()", "g()")
    chunks, _ = chunk_text("two.cu", text)
    assert all(c.end_line - c.start_line >= 5 for c in chunks), [(c.start_line, c.end_line) for c in chunks]


def test_line_matches_finds_a_pattern_only_at_line_starts():
    from kerneltui.core.agent.search.chunks import line_matches

    text = "#include <a>\nint x; // #include <not this>\n  #include \"b.h\"\n"
    assert [text[s:e] for s, e in line_matches(r"[ \t]*#[ \t]*include\b[^\n]*", text)] == \
        ["#include <a>", '  #include "b.h"']
    assert line_matches(r"#", "x\ny") == []


def test_namespace_braces_are_found_by_keyword_not_by_a_longer_name():
    from kerneltui.core.agent.search.chunk_code import _transparent_opens

    code = "namespace cute { namespace detail {\nstruct my_namespace { };\n} }\nxnamespace y {}\n"
    assert sorted(_transparent_opens(code)) == [code.index("{"), code.index("{", code.index("detail"))]


def test_a_title_of_many_declarations_is_cut_as_if_all_were_named():
    """Titles of a header's small declarations are read only until the chunk's title is full: the same
    title as naming every one and cutting the joined text."""
    from kerneltui.core.agent.search.chunks import TITLE_CHARS

    names = [f"constexpr int tile_shape_constant_number_{i} = {i};" for i in range(30)]
    chunks, _ = chunk_text("consts.hpp", "\n".join(names) + "\n")
    assert chunks[0].title == "; ".join(n.rstrip("{ ") for n in names)[:TITLE_CHARS]
    assert len(chunks[0].title) == TITLE_CHARS
