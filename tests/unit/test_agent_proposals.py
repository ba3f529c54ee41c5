"""The proposal state machine, independent of any run."""

from __future__ import annotations

import pytest

from kerneltui.core.agent.proposals import (
    ACCEPTED,
    PENDING,
    REJECTED,
    STALE,
    TRIAL,
    TRIAL_DONE,
    UNDONE,
    Proposal,
    ProposalBook,
    ProposalError,
)
from kerneltui.core.task import source_hash

BASE = "a = 1\nb = 2\nc = 3\n" + "".join(f"x{i} = {i}\n" for i in range(10)) + "z = 26\n"
NEW = BASE.replace("a = 1", "a = 10").replace("z = 26", "z = 260")


def make(pid: str = "p1") -> Proposal:
    return Proposal(id=pid, file="kernel.py", rationale="bigger", kind="full", base_source=BASE,
                    base_hash=source_hash(BASE), new_source=NEW, new_hash=source_hash(NEW))


def test_happy_path_and_undo():
    p = make()
    assert p.state == PENDING and len(p.hunks) == 2
    for state in (TRIAL, TRIAL_DONE, ACCEPTED, UNDONE):
        p.move(state)
    assert [s for s, _ in p.history] == [PENDING, TRIAL, TRIAL_DONE, ACCEPTED, UNDONE]


@pytest.mark.parametrize("ending", [ACCEPTED, REJECTED, STALE])
def test_decisions_are_final(ending):
    p = make()
    p.move(ending)
    with pytest.raises(ProposalError, match=f"is {ending}"):
        p.move(TRIAL)
    assert not p.is_open


def test_cannot_skip_back_to_trial():
    p = make()
    p.move(TRIAL)
    p.move(TRIAL_DONE)
    with pytest.raises(ProposalError):
        p.move(TRIAL)


def test_event_dict_has_what_the_ui_needs():
    data = make().to_dict()
    assert data["id"] == "p1" and data["state"] == PENDING
    assert data["added"] == 2 and data["removed"] == 2
    assert [h["header"] for h in data["hunks"]] == ["@@ -1,4 +1,4 @@", "@@ -11,4 +11,4 @@"]
    assert data["diff"].startswith("--- a/kernel.py")


def test_book_ids_and_lookup():
    book = ProposalBook()
    p = make(book.next_id())
    book.add(p)
    assert p.id == "p1" and book.next_id() == "p2"
    assert book.open_for("kernel.py") == [p]
    with pytest.raises(ProposalError, match="no proposal 'p9'"):
        book.get("p9")
