"""bench/context_search.py's scores: precision@5 and what limits it (the answers known, the answers
found but placed 6-10), from hand-made rankings."""

from __future__ import annotations

import pytest

from bench.context_search import Question, score


def _question(query: str, answers: tuple[str, ...]) -> Question:
    return Question(query, "tune", best=answers[:1], also=answers[1:])


def test_precision_counts_a_file_once_and_what_the_known_answers_allow() -> None:
    two = _question("two answers", ("a", "b"))
    six = _question("six answers", ("a", "b", "c", "d", "e", "f"))
    ranked = {"two answers": ["a", "a", "x", "y", "z", "b"],  # "a" twice is one answer; "b" at place 6
              "six answers": ["a", "x", "b", "y", "z", "c", "d", "e", "q", "r"]}
    s = score([two, six], ranked)
    assert s.precision_at_5 == pytest.approx((1 / 5 + 2 / 5) / 2)
    assert s.ceiling_at_5 == pytest.approx((2 / 5 + 5 / 5) / 2)  # two answers can fill two of five slots
    assert s.precision_at_5_of_known == pytest.approx((1 / 2 + 2 / 5) / 2)
    # Open slots: 1 for "two answers" (b), 3 for "six answers"; answers at places 6-10 could fill 1 and 3.
    assert (s.open_slots, s.waiting_in_6_to_10) == (4, 4)
    assert s.best_in_top_5 == 1.0


def test_an_answer_beyond_place_ten_does_not_count_as_waiting() -> None:
    q = _question("q", ("a", "b"))
    s = score([q], {"q": ["a", "v", "w", "x", "y", "z1", "z2", "z3", "z4", "z5", "b"]})
    assert (s.open_slots, s.waiting_in_6_to_10) == (1, 0)
    assert s.recall_at_10 == 0.5
