"""Unified diffs from the model, our own hunks, and per-hunk application."""

from __future__ import annotations

import pytest

from kerneltui.core.agent.diffs import (
    DiffError,
    apply_hunk_subset,
    apply_unified_diff,
    hunks_between,
    unified_diff,
)

BASE = "".join(f"line {i}\n" for i in range(1, 31))
NEW = BASE.replace("line 3\n", "line three\n").replace("line 25\n", "line 25\nline 25b\n")


def test_hunks_between_finds_separate_changes():
    hunks = hunks_between(BASE, NEW)
    assert [h.header for h in hunks] == ["@@ -1,6 +1,6 @@", "@@ -23,6 +23,7 @@"]
    assert (hunks[0].added, hunks[0].removed, hunks[1].added, hunks[1].removed) == (1, 1, 1, 0)
    assert "-line 3" in hunks[0].lines and "+line three" in hunks[0].lines


def test_subset_applies_only_chosen_hunks():
    assert apply_hunk_subset(BASE, NEW, {0}) == BASE.replace("line 3\n", "line three\n")
    assert apply_hunk_subset(BASE, NEW, {1}) == BASE.replace("line 25\n", "line 25\nline 25b\n")
    assert apply_hunk_subset(BASE, NEW, {0, 1}) == NEW
    assert apply_hunk_subset(BASE, NEW, set()) == BASE
    with pytest.raises(DiffError, match="no hunk 5"):
        apply_hunk_subset(BASE, NEW, {5})


def test_our_diff_round_trips():
    assert apply_unified_diff(BASE, unified_diff(BASE, NEW, "kernel.py")) == NEW


def test_model_diff_with_wrong_line_numbers_and_bare_headers():
    diff = "--- a/kernel.py\n+++ b/kernel.py\n@@ -10,3 +10,3 @@\n line 2\n-line 3\n+line three\n line 4\n"
    assert apply_unified_diff(BASE, diff) == BASE.replace("line 3\n", "line three\n")
    bare = "@@\n line 24\n line 25\n+line 25b\n"
    assert apply_unified_diff(BASE, bare) == BASE.replace("line 25\n", "line 25\nline 25b\n")


def test_blank_context_line_without_its_space():
    base = "a\n\nb\n"
    diff = "@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n"
    assert apply_unified_diff(base, diff) == "a\n\nc\n"


def test_pure_insertion_hunk():
    diff = "@@ -2,0 +3,1 @@\n+inserted\n"
    assert apply_unified_diff("one\ntwo\nthree\n", diff) == "one\ntwo\ninserted\nthree\n"


def test_a_diff_that_does_not_apply_says_where():
    diff = "@@ -1,3 +1,3 @@\n line 1\n line 2\n-line 99\n+x\n"
    with pytest.raises(DiffError) as info:
        apply_unified_diff(BASE, diff, "kernel.py")
    message = str(info.value)
    assert "hunk 1 does not apply to kernel.py" in message and "line 3" in message and "line 99" in message


def test_no_hunks():
    with pytest.raises(DiffError, match="no hunks found"):
        apply_unified_diff(BASE, "just some text")


def test_trailing_newline_is_kept():
    assert apply_unified_diff("a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n+c\n") == "a\nc"
