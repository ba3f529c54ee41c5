"""The kernel engineer's abbreviations: forms of one thing that neither stemming nor camel case connects.

A question says "shared memory", the code says ``smem``; "cache directory" is ``TRITON_CACHE_DIR``;
"fp8" is ``float8``. The porter stemmer already joins ``allocate``/``allocation``/``alloc`` and
plurals, and camel case is split elsewhere, so this table holds only what those miss: abbreviations
nothing else. Each group's forms match each other, in a query only (the index is unchanged). Only
abbreviations with one meaning in kernel code are listed: ``mem`` or ``reg`` alone would match far
more than memory or registers. Left out after measuring (bench/RESULTS.md): the spellings of number
formats (``fp8``/``float8``: ``float8`` is in every FP8 type name, and "fp8 gemm" then finds type
definitions before FP8 GEMMs) and ``tmem`` for "tensor memory" (the phrase as one term lost Triton's
tcgen05 tutorials; measured again on 2026-12-07 over a cutlass clone: p@5 0.468 → 0.463 with it, the
CUTLASS tcgen05 examples lost the same way). A transaction count is ``tx`` and a thread block a ``cta``
(no change on those questions; for the ones that spell them).
"""

from __future__ import annotations

_GROUPS: tuple[tuple[str, ...], ...] = (
    ("shared memory", "smem"),
    ("global memory", "gmem"),
    ("shuffle", "shfl"),
    ("directory", "dir"),
    ("environment", "env"),
    ("synchronize", "sync"),
    ("configuration", "config"),
    ("parameter", "param"),
    ("argument", "arg"),
    ("initialize", "init"),
    ("implementation", "impl"),
    ("pointer", "ptr"),
    ("cumulative sum", "cumsum"),
    ("cumulative product", "cumprod"),
    ("transaction", "tx"),
    ("thread block", "threadblock", "cta"),
)

# Each form (as a tuple of lower-case words) → the other forms of its group.
FORMS: dict[tuple[str, ...], tuple[tuple[str, ...], ...]] = {}
for _group in _GROUPS:
    _forms = [tuple(f.split()) for f in _group]
    for _form in _forms:
        FORMS[_form] = tuple(f for f in _forms if f != _form)
LONGEST = max(len(f) for f in FORMS)


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def form_at(words: list[str], start: int) -> tuple[int, tuple[tuple[str, ...], ...]]:
    """The longest form of the table that starts at ``words[start]`` (lower case; plural or singular):
    how many words it spans, and the other forms of its group; (0, ()) when none does."""
    for length in range(min(LONGEST, len(words) - start), 0, -1):
        key = tuple(_singular(w) for w in words[start:start + length])
        others = FORMS.get(key) or FORMS.get(tuple(words[start:start + length]))
        if others:
            return length, others
    return 0, ()
