"""How hits are ranked: which words are required, how fields weigh, what kind of file a hit is in.

1. **The best words are required, not all.** A query's words are ordered from the rarest (fewest
   chunks contain it) to the commonest; the rarest is required, and each next one is required too as
   long as a chunk (``min_matches``) still contains all the required words. The others only add
   to the score, so "grouped ordering of program ids for L2 cache reuse" is not lost for want of one
   word, and "fp8 gemm scaling" does not drown in chunks that say "gemm" alone. A name (an acronym,
   an identifier, a word with digits: ``TVM``, ``GEMV``, ``tl.reduce``, ``sm_120``) counts as
   ``name_rarity`` times rarer than it is: it is what the question is about, where a plain word as
   rare ("overhead" in "TVM FFI … with low overhead") is often how the question says it.
2. **BM25 over fields** (SQLite FTS5's ``bm25()``): a word in the chunk's title (the function, class
   or heading it is) or in the file's path counts more than one in its prose (comments, docstrings,
   Markdown), which counts more than one in code.
3. **The kind of file**: examples, tutorials and documentation (kerneltui's notes among them) weigh
   more, tests, build scripts, change logs and a compiler's own sources less. Meta documents (change logs, a
   README's "Changelog" section, meeting notes, the index page of an examples folder) and a compiler's or
   driver's internals (its C++ passes, TableGen, a backend's compiler and driver) mention everything once:
   they weigh less unless the question asks for them ("changelog", "meeting", "compiler", "backend" …).
4. **The clone a query names**: a word that is the name of a top-level folder holding a repository
   ("fused softmax triton kernel", with clones of triton and cutlass side by side) asks for that
   folder: its hits come first, from whichever level of required words they came, and hits elsewhere
   only after them.
5. **The definition of a name the query asks for** (``tl.load``, ``from_dlpack``, ``CollectiveBuilder``):
   the library chunks whose title defines it (``def load``, ``class CollectiveBuilder``) are searched
   for on their own and weigh ``definition`` times more, wherever the required words left them: a
   reference file's definition holds few of a question's other words, and examples that call the
   name would otherwise come first. An example's own helper of that name is not its definition.
6. **A file named after the question** (``swizzle.hpp`` for "swizzle shared memory layout",
   ``splitk_gemm.cu`` for "split-k gemm with a reduction"): a file whose name is made of the query's
   words, its rarest among them, is where a person would look first, yet its chunks seldom hold the
   question's other words. The best two such files are searched for on their own and weigh
   ``named_file`` times more, wherever the required words left them.
7. **The language or framework a question names** ("… in cutlass C++", "… in the CuTe DSL", Triton,
   Gluon, TileLang, Python): its files weigh ``framework`` times more, so a C++ question is not answered
   by the Python DSL that wraps the same call, nor a Triton question by CUTLASS.
8. **Spread over files**: a file's best chunk stands for it; its other matching chunks are named
   with it (``also: lines …``) instead of taking the next slots. A family of near-duplicate files
   (``near_duplicates``: variants of one example side by side) does not crowd out the rest: each file after
   its family's best weighs ``family`` times less, and those that fall out of the hits are named with it
   (``similar: …``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from kerneltui.core.agent.search.tokens import Term, camel_parts


@dataclass(frozen=True)
class Ranking:
    path: float = 2.0  # bm25 weights of the four indexed fields
    title: float = 4.0
    doc: float = 2.5
    code: float = 1.0
    docs: float = 1.3  # Markdown, reST, notebooks, text; and files under a docs folder
    examples: float = 1.3  # files under examples/, tutorials/ …
    tests: float = 0.5  # files under test/ or named test_*
    build: float = 0.3  # build scripts and configuration: CMakeLists.txt, *.cmake, Makefile, setup.py, *.yml …
    history: float = 0.4  # change logs, release notes, meeting notes: they mention everything once
    index_page: float = 0.5  # the README or index of an examples or tutorials folder: a list of what is there
    internals: float = 0.7  # a compiler's own sources (C++ under a lib/ folder, TableGen .td, MLIR .mlir): they
    # share a question's words ("maxnreg", "convert layout") but seldom teach how to use the thing
    min_matches: int = 1  # a word is required only while this many chunks still match all required words (3 until
    # 2026-12-06: the one chunk with every word then lost to chunks repeating the rarest ones; bench/RESULTS.md)
    name_rarity: float = 3.0  # a name in the query (``TVM``, ``tl.reduce``) is ordered as if this many times rarer
    candidates: int = 200  # chunks ranked by bm25 before the kind of file and the spread over files apply
    also: int = 3  # other chunks of a hit's file named with it
    support: float = 0.3  # a file's score adds this share of its second-best chunk's (and its square of the third's)
    path_cover: float = 1.0  # a hit gains up to this share of its score for the query words in its file's path
    title_cover: float = 0.5  # … and in its title
    definition: float = 1.5  # a chunk defining a name the query asks for (``tl.load``, ``from_dlpack``): its
    # score times this, found whichever words it lacks (0: no such search)
    named_file: float = 1.5  # a file named after the query's words (``swizzle.hpp`` for "swizzle shared memory
    # layout"): its best chunk's score times this, found whichever words it lacks (0: no such search)
    named_files: int = 2  # … for at most this many files, the best by bm25: a guide to the page, not the page
    framework: float = 2.0  # a file of a language or framework the question names (C++, CuTe DSL, Triton …)
    family: float = 0.7  # a near-duplicate of a better file (``near_duplicates``) weighs this much: 1.0 leaves
    # them be; one file per family lost the variants that answer too (the 149 questions over a cutlass clone
    # alone, 2026-12-07: p@5 0.458 at 1.0, 0.446 one per family, 0.455 at 0.7; best in top 5 85, 86, 87)


DEFAULT = Ranking()

_DOC_SUFFIX = re.compile(r"\.(md|markdown|rst|txt|ipynb)$", re.I)
_DOC_DIR = re.compile(r"(^|/)(docs?|documentation|media/docs)/", re.I)
_EXAMPLE = re.compile(r"(^|/)(examples?|tutorials?|notebooks?|samples?)(/|$)|(^|/)[^/]*(example|tutorial)[^/]*$",
                      re.I)
_TEST = re.compile(r"(^|/)(tests?|unittests?|testing|testbed)(/|$)|(^|/)(test_[^/]*|[^/]*_tests?\.[a-z]+)$", re.I)


_BUILD = re.compile(r"(^|/)(CMakeLists\.txt|Makefile|setup\.py|[^/]*\.(cmake|ya?ml|toml|cfg|ini))$", re.I)
_INTERNALS = re.compile(r"(^|/)lib/.*\.(cpp|cc|c|h|hpp)$|\.(td|mlir)$"  # a compiler's passes, TableGen, MLIR
                        r"|(^|/)backends?/(?!.*(tutorial|example))"  # triton's backends: compiler.py, driver.c …
                        r"|(^|/)driver\.(c|cc|cpp|py)$|(^|/)include/hip/", re.I)
_HISTORY = re.compile(r"(^|/)(CHANGELOG|CHANGES|RELEASE|HISTORY|NEWS)[^/]*$|(^|/)meetups?/", re.I)
_HISTORY_TITLE = re.compile(r"\b(change ?logs?|what'?s new|release notes|news)\b", re.I)
_INDEX_PAGE = re.compile(r"(^|/)(examples?|tutorials?|notebooks?|samples?)(/(python|cpp|cute_?dsl|gluon))*"
                         r"/(README|index)(\.\w+)?$", re.I)
# A question that asks for what a kind of file holds: then that kind weighs as any other file.
_ASKS = {"history": re.compile(r"\b(change ?logs?|changes|releases?|news|what'?s new|meet(ings?|ups?)|history)\b",
                               re.I),
         "internals": re.compile(r"\b(compilers?|backends?|drivers?|lowering|mlir|llvm|tablegen|tt[gi]?ir|dialects?"
                                 r"|hip|rocm|passes)\b", re.I),
         "index": re.compile(r"\b(readme|index|overview|list of)\b", re.I)}


def asked_kinds(query: str) -> frozenset[str]:
    """The kinds of file that weigh less (``history``, ``internals``, ``index``) which a question asks for."""
    return frozenset(kind for kind, pattern in _ASKS.items() if pattern.search(query))


def title_prior(title: str, ranking: Ranking = DEFAULT, asked: frozenset[str] = frozenset()) -> float:
    """How much a chunk weighs by its heading: a README's "Changelog" section is a change log."""
    return ranking.history if "history" not in asked and _HISTORY_TITLE.search(title) else 1.0


@lru_cache(maxsize=1 << 15)
def file_prior(rel: str, ranking: Ranking = DEFAULT, asked: frozenset[str] = frozenset()) -> float:
    """How much a hit in this file weighs by what the file is (1.0 for ordinary source); ``asked``: the kinds
    the question asks for (``asked_kinds``), which weigh as ordinary files."""
    if _BUILD.search(rel):
        return ranking.build
    if _HISTORY.search(rel) and "history" not in asked:
        return ranking.history
    if _TEST.search(rel):
        return ranking.tests
    if _INDEX_PAGE.search(rel) and "index" not in asked:
        return ranking.index_page
    weight = ranking.internals if _INTERNALS.search(rel) and "internals" not in asked else 1.0
    if _DOC_SUFFIX.search(rel) or _DOC_DIR.search(rel):
        weight *= ranking.docs
    if _EXAMPLE.search(rel):
        weight *= ranking.examples
    return weight


@dataclass(frozen=True)
class Framework:
    """A language or framework a question can name, and how its files are told: by path, or by the installed
    package they come from."""

    name: str
    asked: re.Pattern[str]  # the question names it
    path: re.Pattern[str]  # a file of it, by its path
    packages: frozenset[str] = frozenset()  # installed packages (search.installed) that are it


_CPP_SUFFIX = r"\.(h|hpp|hh|cuh|cu|cc|cpp|cxx|inl)$"
FRAMEWORKS: tuple[Framework, ...] = (
    Framework("C++", re.compile(r"(?<![\w+])(?:c\+\+|cpp|cxx)(?![\w+])", re.I), re.compile(_CPP_SUFFIX, re.I)),
    Framework("CuTe DSL", re.compile(r"\bcute[ _-]?dsl\b|\bpython ?dsl\b", re.I),
              re.compile(r"cute_?dsl|python_?dsl|(^|/)cute_dsl\.md$", re.I), frozenset({"cutlass"})),
    Framework("Gluon", re.compile(r"\bgluon\b", re.I), re.compile(r"gluon", re.I)),
    Framework("Triton", re.compile(r"\btriton\b", re.I), re.compile(r"(^|/)triton(/|\.md$)", re.I),
              frozenset({"triton"})),
    Framework("TileLang", re.compile(r"\btile[ _-]?lang\b", re.I), re.compile(r"tilelang", re.I),
              frozenset({"tilelang"})),
    Framework("Python", re.compile(r"\bpython\b", re.I), re.compile(r"\.(py|pyi|ipynb)$", re.I),
              frozenset({"triton", "cutlass", "tilelang"})),
)


def asked_frameworks(query: str) -> tuple[Framework, ...]:
    """The languages and frameworks a question names."""
    return tuple(f for f in FRAMEWORKS if f.asked.search(query))


def in_framework(frameworks: tuple[Framework, ...], rel: str, package: str = "") -> bool:
    """Whether a file (its path in its folder; ``package``: the installed package it comes from) is of one of
    the named frameworks."""
    return any(package in f.packages or f.path.search(rel) for f in frameworks)


_NAME_PIECES = re.compile(r"[A-Za-z]+")


def named_after(rel: str, words: frozenset[str], rarest: frozenset[str]) -> bool:
    """Whether a file's name (less its extension and numbers) is made of the query's words only, the
    rarest among them (``words``, ``rarest``: stems, lower case): ``swizzle_layout.hpp`` for "swizzle
    shared memory layout", ``08-grouped-gemm.py`` for "grouped gemm", ``splitk_gemm.cu`` for "split-k
    gemm". A name of one common word (``layout.hpp``, ``gemm.py``) is not the question's unless that
    word is its rarest."""
    name = rel.rsplit("/", 1)[-1]
    base = name.rsplit(".", 1)[0] if "." in name else name
    pieces = [stem(p.lower()) for piece in _NAME_PIECES.findall(base) for p in (camel_parts(piece) or (piece,))]
    pieces = [p for p in pieces if len(p) > 1]
    return bool(pieces) and all(p in words for p in pieces) and any(p in rarest for p in pieces)


def is_library(rel: str) -> bool:
    """Whether a file is library code, not an example, a tutorial or a test: the place whose definition
    of a name is the name's (an example's own ``def make_tiled_mma`` is a helper of that example)."""
    return not (_EXAMPLE.search(rel) or _TEST.search(rel))


_NAME = re.compile(r"[A-Z]{2}|[a-z][A-Z]|[_.]|\d")  # an acronym, camel case, snake case, a dotted name, digits


def is_name(word: str) -> bool:
    """Whether a query word, as typed, names a thing (``TVM``, ``FastAccum``, ``tl.reduce``, ``fp8``)
    rather than being a plain word ("overhead", "matrix-vector")."""
    return bool(_NAME.search(word))


def required_terms(terms: list[Term], counts: list[int], enough: Callable[[str], bool],
                   name_rarity: float) -> list[Term]:
    """The query's words that every hit must contain: the rarest, then each next rarest while ``enough``
    chunks still contain all of them (``counts``: how many chunks contain each word; a name's count is
    divided by ``name_rarity``)."""
    ranked = sorted((c / name_rarity if is_name(t.word) else c, i, t)
                    for i, (t, c) in enumerate(zip(terms, counts, strict=True)) if c > 0)
    if not ranked:
        return []
    required = [ranked[0][2]]
    for _, _, term in ranked[1:]:
        if enough(" AND ".join(t.fts() for t in [*required, term])):
            required.append(term)
    return required


def match_expression(required: list[Term], terms: list[Term]) -> str:
    """An FTS5 query: all the required words, and any of the words (so every word adds to the score)."""
    must = " AND ".join(t.fts() for t in required)
    extra = [t for t in terms if t not in required]
    if not extra:
        return must
    return f"{must} AND ({' OR '.join(t.fts() for t in terms)})"


_SUFFIXES = ("ations", "ation", "ings", "ing", "ers", "er", "es", "ed", "s")


def stem(word: str) -> str:
    """A crude stem, only to tell whether a path or title contains a query word (the index uses porter)."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[:-len(suffix)]
    return word


@dataclass(frozen=True)
class Coverage:
    """How much of a query a short text (a path, a title) contains: each word weighted by its rarity."""

    needles: tuple[tuple[str, ...], ...]  # per query word, the stems that must all be in the text
    weights: tuple[float, ...]

    @classmethod
    def of(cls, terms: list[Term], counts: list[int], total: int) -> Coverage:
        needles = tuple(tuple(stem(p.lower()) for p in _PIECES.findall(t.word) if len(p) > 1) for t in terms)
        weights = tuple(math.log(1 + total / max(1, c)) for c in counts)
        return cls(needles, weights)

    def share(self, text: str) -> float:
        low = text.lower()
        total = sum(self.weights) or 1.0
        got = sum(w for parts, w in zip(self.needles, self.weights, strict=True) if parts and all(p in low for p in parts))
        return got / total


_PIECES = re.compile(r"[^\W_]+")


def named_tops(terms: list[Term], tops: frozenset[str]) -> frozenset[str]:
    """The top-level folders (a clone: ``triton``, ``cutlass``) that the query names by one of its words."""
    return frozenset(t.word.lower() for t in terms if t.word.lower() in tops)


def in_named(rel: str, named: frozenset[str]) -> bool:
    """Whether a file lies in one of the named top-level folders, or is a top-level file named after one
    (kerneltui's note ``triton.md``)."""
    top = rel.split("/", 1)[0].lower()
    return top in named or top.rsplit(".", 1)[0] in named


@dataclass
class Candidate:
    rowid: int
    folder: int
    rel: str
    start_line: int
    end_line: int
    title: str
    score: float  # bm25 (higher is better) times the file's prior


_FAMILY_PIECES = re.compile(r"[A-Za-z]+[0-9]*|[0-9]+")


@lru_cache(maxsize=1 << 14)
def _name_words(rel: str) -> tuple[str, str, frozenset[str]]:
    """A file's folder, suffix and the words of its name (numbers alone left out)."""
    folder, _, name = rel.rpartition("/")
    base, dot, suffix = name.rpartition(".")
    base = base if dot else name
    words = frozenset(p.lower() for piece in _FAMILY_PIECES.findall(base) for p in (camel_parts(piece) or (piece,))
                      if not p.isdigit() and len(p) > 1)
    return folder, suffix.lower() if dot else "", words


def near_duplicates(a: str, b: str) -> bool:
    """Whether two files are variants of one thing: in one folder, of one kind, their names sharing at least
    two words and most of the shorter name's (``b2b_mma_multistage.h`` and ``b2b_implicit_gemm_multistage.h``;
    not ``layout.hpp`` and ``layout_composed.hpp``, nor ``gemm_kernel.py`` and ``gemm_utils.py``)."""
    folder_a, suffix_a, words_a = _name_words(a)
    folder_b, suffix_b, words_b = _name_words(b)
    if folder_a != folder_b or suffix_a != suffix_b or not words_a or not words_b:
        return False
    shared = len(words_a & words_b)
    return shared >= 2 and shared >= 0.6 * min(len(words_a), len(words_b))


def spread(candidates: list[Candidate], limit: int, ranking: Ranking = DEFAULT) -> list[
        tuple[Candidate, list[Candidate], list[str]]]:
    """The best chunk of each file, best first, with the file's other matching chunks and the other files of
    its family of near-duplicates that matched (wherever they ranked)."""
    by_file: dict[tuple[int, str], list[Candidate]] = {}
    for c in sorted(candidates, key=lambda c: -c.score):
        by_file.setdefault((c.folder, c.rel), []).append(c)

    def file_score(group: list[Candidate]) -> float:
        # A file that answers in several places is a better answer than one with a single good chunk.
        return sum(c.score * ranking.support ** i for i, c in enumerate(group[:3]))

    ranked = sorted(by_file.values(), key=lambda group: -file_score(group))
    scored: list[tuple[list[Candidate], float, list[Candidate] | None]] = []  # files, score, family's best
    for group in ranked:
        head = next((g for g, _, first in scored if first is None and g[0].folder == group[0].folder
                     and near_duplicates(g[0].rel, group[0].rel)), None) if ranking.family < 1.0 else None
        score = file_score(group) * (ranking.family if head is not None else 1.0)
        scored.append((group, score, head))
    scored.sort(key=lambda item: -item[1])
    family: dict[int, list[str]] = {}
    for group, _, head in scored:
        if head is not None:
            family.setdefault(id(head), []).append(group[0].rel)
    return [(g[0], g[1:1 + ranking.also], family.get(id(g), [])) for g, _, _ in scored[:limit]]
