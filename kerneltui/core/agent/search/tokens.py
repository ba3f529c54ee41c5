"""Code-aware words: what the index stores besides the text, and what a query asks for.

SQLite's FTS5 does the heavy part: its ``porter`` tokenizer over ``unicode61`` lower-cases, splits
on anything that is not a letter or digit (so ``make_layout`` and ``tl.dot`` are two words each) and
stems (``examples`` and ``example`` are one word, so are ``configs`` and ``config``). What it cannot
do is split ``TensorDescriptor`` or ``CuTeDSL``: for those the index text gets the parts appended
(``tensor descriptor``, ``cu te dsl``) and the joins of tiny parts (``cute``), once per chunk, and a
query word written in camel case asks for the whole word or its parts.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import lru_cache

from kerneltui.core.agent.search.vocabulary import form_at

# English glue, question words and prepositions: never worth requiring ("print values from inside a kernel"
# would require "inside", rarer in code than the words that matter), and they only dilute BM25.
STOPWORDS = frozenset("""a an and are as at be by can do does for from how i in into is it its of on or the
this that to use used using what when where which why with without we you your my me should
about above across after along among around before behind below between beyond during inside onto outside
over per through toward towards under until upon via within""".split())
# A lower-case letter (or digit) followed by an upper-case one, or an upper-case run before a capitalised
# word: the places where camel case starts a new part.
_HUMP = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+[A-Za-z]*")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
TINY = 2  # camel parts this short ("Cu", "Te") are also joined with their neighbours ("CuTe")


@lru_cache(maxsize=1 << 16)
def camel_parts(word: str) -> tuple[str, ...]:
    """``TensorDescriptor`` → (Tensor, Descriptor); () when the word has no camel humps."""
    if not _HUMP.search(word):
        return ()
    parts = tuple(_PART.findall(word))
    return parts if len(parts) > 1 else ()


# Everything but letters and digits becomes a space, so str.split() finds the words (much faster
# than a regular expression over megabytes of code).
_SPACES = str.maketrans({c: " " for c in string.punctuation})


def expansion(text: str) -> str:
    """The extra words the index stores for ``text``: camel parts, then joins of tiny parts, each once."""
    seen: set[str] = set()
    out: list[str] = []
    words = set(text.translate(_SPACES).split())
    # Most words have no camel humps; sifting them out in a comprehension first is the cheaper loop.
    for word in [w for w in words if not (w.islower() or w.isupper() or w.isdigit())]:
        parts = camel_parts(word)
        if not parts:
            continue
        extra = [p.lower() for p in parts]
        extra += [(a + b).lower() for a, b in zip(parts, parts[1:], strict=False) if min(len(a), len(b)) <= TINY]
        for p in extra:
            if p not in seen:
                seen.add(p)
                out.append(p)
    return " ".join(out)


def with_expansion(text: str) -> str:
    extra = expansion(text)
    return f"{text}\n{extra}" if extra else text


@dataclass(frozen=True)
class Term:
    """One word of a query, as FTS5 alternatives: the word itself, or its parts in a row."""

    word: str  # as typed
    alternatives: tuple[str, ...]  # FTS5 expressions (bare words or quoted phrases), any of which matches

    def fts(self) -> str:
        return self.alternatives[0] if len(self.alternatives) == 1 else "(" + " OR ".join(self.alternatives) + ")"


_DEFINERS = ("def", "class", "struct")


def definition_match(word: str) -> str:
    """For a query word that names a symbol (``tl.load``, ``from_dlpack``, ``CollectiveBuilder``): an FTS5
    expression that matches the chunks whose title defines it, the definition being the last dotted part
    (``tl.load`` is defined as ``def load``). "" for a plain word.

    The title must hold the name right after ``def``, ``class`` or ``struct`` (titles list what a
    chunk holds, calls and statements too, and ``load`` alone is in a hundred of them); a camel-case
    name is in a title whole and, appended, as its parts."""
    last = word.rsplit(".", 1)[-1] if "." in word.strip(".") else word
    pieces = _WORD.findall(last.replace("_", " "))
    parts = [p.lower() for piece in pieces for p in (camel_parts(piece) or (piece,))]
    # Camel case names a symbol when two of its parts are words ("CuTe" is a name, not a definition)
    named = ("_" in word.strip("_") or "." in word.strip(".")
             or sum(len(p) > TINY for p in camel_parts(word)) > 1)
    if not named or not parts:
        return ""
    forms = [parts, ["".join(parts)]] if len(parts) > 1 else [parts]
    return "title : (" + " OR ".join(_quoted([d, *form]) for d in _DEFINERS for form in forms) + ")"


def _quoted(words: list[str]) -> str:
    return '"' + " ".join(words) + '"'


def query_terms(query: str, prefixes: bool = False, joins: bool = True, vocabulary: bool = True) -> list[Term]:
    """The words of a query worth searching for, each with the forms that match it.

    ``make_layout`` and ``tl.dot`` match as phrases ("make layout", "tl dot"), ``TensorDescriptor``
    as the word or the phrase of its parts. Code is indexed without its camel-case parts, so the
    other way round works from the query: with ``joins`` two neighbouring words also match as one
    ("tensor descriptor" finds ``TensorDescriptor``, "CuTe DSL" ``CuTeDSL``, "stream-K" ``StreamK``),
    and with ``prefixes`` a word of four letters or more also matches the words it starts
    ("swizzle" finds ``SwizzleLayout``). With ``vocabulary`` a word or words of the abbreviations
    table (``vocabulary``) also match the other forms ("shared memory" is one term that ``smem``
    matches too). Stop words are dropped, and so are repeats.
    """
    words: list[list[str]] = []
    raws: list[str] = []
    for raw in query.split():
        pieces = _WORD.findall(raw)
        if not pieces or (len(pieces) == 1 and pieces[0].lower() in STOPWORDS):
            continue
        words.append(pieces)
        raws.append(raw)
    singles = [p[0].lower() if len(p) == 1 else "" for p in words]
    terms: list[Term] = []
    seen: set[tuple[str, ...]] = set()
    n = 0
    while n < len(words):
        raw, pieces = raws[n], words[n]
        span, others = form_at(singles, n) if vocabulary and singles[n] else (0, ())
        low = [p.lower() for p in pieces]
        alternatives: list[str] = []
        if span > 1:  # several words of the table read as one term: the phrase, joined, or another form
            raw = " ".join(raws[n:n + span])
            low = singles[n:n + span]
            alternatives += [_quoted(low), "".join(low)]
        elif len(pieces) > 1:
            alternatives.append(_quoted(low))
            alternatives.append("".join(low))  # stream-K → streamk, make_layout → makelayout
        else:
            alternatives.append(low[0])
            parts = camel_parts(pieces[0])
            if parts:
                alternatives.append(_quoted([p.lower() for p in parts]))
            elif prefixes and len(low[0]) >= 4 and low[0].isalpha():
                alternatives.append(low[0] + "*")
        if joins and len(pieces) == 1 and span <= 1:
            # The runs of two and three neighbouring words this one is in, joined: code keeps a camel-case
            # name whole ("warp specialize config" is WarpSpecializeConfig).
            for first in range(max(0, n - 2), n + 1):
                for size in (2, 3):
                    run = words[first:first + size]
                    if len(run) == size and first + size > n and all(len(w) == 1 for w in run):
                        alternatives.append("".join(w[0] for w in run).lower())
        for form in others:
            alternatives += [form[0]] if len(form) == 1 else [_quoted(list(form)), "".join(form)]
        n += max(span, 1)
        key = tuple(dict.fromkeys(alternatives))
        if key in seen:
            continue
        seen.add(key)
        terms.append(Term(raw, key))
    return terms


def path_text(rel: str) -> str:
    """The words of a file's path, for the index: every folder and the name, split, plus its language."""
    words = rel.replace("/", " ").replace(".", " ")
    dot = rel.rfind(".")
    language = _LANGUAGE.get(rel[dot:].lower(), "") if dot > 0 else ""
    return with_expansion(f"{words} {language}".strip())


_LANGUAGE = {".py": "python", ".pyi": "python", ".ipynb": "python notebook", ".cu": "cuda", ".cuh": "cuda",
             ".md": "docs", ".rst": "docs", ".markdown": "docs"}
