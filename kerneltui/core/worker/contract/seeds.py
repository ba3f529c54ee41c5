"""The seeds of a case's checks, which both sides name: the parent asks the judge for the inputs of
``seed_for(case, seed, k)`` (``core.rungs``), and the judge's runtime makes them from the same number."""

from __future__ import annotations

import random


def seed_for(case_index: int, case_seed: int | None, k: int) -> int:
    """Deterministic per-case seeds: the case's own seed first, then derived ones."""
    base = case_seed if case_seed is not None else 1000 + 17 * case_index
    if k == 0:
        return base
    return random.Random(base * 7919 + k).randrange(1, 2**31 - 1)
