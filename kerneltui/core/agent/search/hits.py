"""A search hit, its snippet read from the file itself, and the text the model reads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kerneltui.core.agent.search.folders import ContextFolder, read_inside

SNIPPET_CONTEXT = 2  # lines shown either side of the best-matching line
SNIPPET_CHARS = 160
SIMILAR_SHOWN = 4  # near-duplicate files named with a hit
# A line that only brings names in (an import, an include, a using-declaration) names every word of a
# question about what it imports, and answers none: its words count for this share of a line's.
_IMPORT_LINE = re.compile(r"\s*(import\s|from\s+\S+\s+import\s|#\s*include\b|using\s+namespace\b)")
IMPORT_SHARE = 0.3


@dataclass
class Hit:
    folder: ContextFolder
    path: str  # relative to its folder, with "/"
    start_line: int  # the chunk's first line (1-based); a valid line of the file
    end_line: int  # its last line, at most the file's line count
    line: int  # the best-matching line of the chunk
    score: float  # higher is better
    title: str = ""  # what the chunk is: a function, a class, a heading
    snippet: list[tuple[int, str]] = field(default_factory=list)
    also: list[tuple[int, int]] = field(default_factory=list)  # other matching line ranges of the same file
    shown: str = ""  # how read_file names it (context/… or an absolute path)
    sampled: int = 0  # when the words are very common: the number of matches it was ranked among
    similar: list[str] = field(default_factory=list)  # near-duplicate files that matched too (ranking.spread)


def _needles(words: list[str]) -> list[str]:
    # "configs" should find "config": compare without a plural ending.
    return [w[:-1] if len(w) > 4 and w.endswith("s") else w for w in words]


def read_snippet(hit: Hit, words: list[str]) -> bool:
    """Fill the hit's best line and snippet from the file as it is now; False when the hit no longer
    holds (the file is gone, unreadable, or shorter than the hit)."""
    data = read_inside(hit.folder.path, hit.path)
    if data is None:
        return False
    # Only the lines up to the hit's end are split and decoded (a hit can be deep in a large file).
    raw = data.split(b"\n", hit.end_line)[:hit.end_line]
    if raw and not raw[-1] and len(raw) < hit.end_line:
        raw.pop()  # the empty piece after a final line break is not a line
    lines = [line.decode("utf-8", errors="replace").rstrip("\r") for line in raw]
    if hit.start_line > len(lines):
        return False
    hit.end_line = min(hit.end_line, len(lines))
    needles = _needles(words)
    best, best_count = hit.start_line, -1.0
    for number in range(hit.start_line, hit.end_line + 1):
        text = lines[number - 1]
        low = text.lower()
        count = float(sum(1 for w in needles if w in low))
        if count and _IMPORT_LINE.match(text):
            count *= IMPORT_SHARE
        if count > best_count:
            best, best_count = number, count
    hit.line = best
    lo, hi = max(hit.start_line, best - SNIPPET_CONTEXT), min(hit.end_line, best + SNIPPET_CONTEXT)
    hit.snippet = [(n, lines[n - 1][:SNIPPET_CHARS]) for n in range(lo, hi + 1)]
    return True


def format_hits(hits: list[Hit], query: str) -> str:
    if not hits:
        return (f"no hits for {query!r} in context/. Try other words or an identifier (CamelCase and snake_case "
                f"names match their parts), or list_files('context') to see what is there.")
    out = [f"{len(hits)} hits for {query!r} (best first; read one with read_file(path, start_line, end_line)):"]
    sampled = max(h.sampled for h in hits)
    if sampled:
        out.append(f"(these words are very common: ranked among the first {sampled:,} matches only; "
                   f"add a more specific word for better hits)")
    for n, hit in enumerate(hits, 1):
        what = f" · {hit.title}" if hit.title else ""
        version = f"  [{hit.folder.label}]" if hit.folder.label else ""  # an installed package's version
        out.append(f"{n}. {hit.shown or hit.path}:{hit.line}{version}  (lines {hit.start_line}-{hit.end_line}{what})")
        out.extend(f"     {number:>5}  {text}" for number, text in hit.snippet)
        if hit.also:
            out.append("     also: " + ", ".join(f"lines {a}-{b}" for a, b in hit.also))
        if hit.similar:
            names = [s.rsplit("/", 1)[-1] for s in hit.similar[:SIMILAR_SHOWN]]
            more = f" and {len(hit.similar) - SIMILAR_SHOWN} more" if len(hit.similar) > SIMILAR_SHOWN else ""
            out.append("     similar: " + ", ".join(names) + more + " (variants beside it)")
    return "\n".join(out)
