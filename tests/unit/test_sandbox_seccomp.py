"""The seccomp filter that denies folder watches (``sandbox.seccomp``): its program and its effect."""

from __future__ import annotations

import pytest

from kerneltui.core.sandbox import seccomp, support


@pytest.mark.parametrize("arch", sorted(seccomp.WATCH_CALLS))
def test_every_watch_call_jumps_to_the_refusal_and_nothing_else_does(arch):
    code = seccomp.program(arch)
    refusal = len(code) - 1
    assert code[refusal][3] == 0x00050000 | 1  # EPERM
    numbers = {n for calls in seccomp.WATCH_CALLS[arch].values() for n in calls}
    to_refusal = {k for at, (op, jt, _jf, k) in enumerate(code) if op == 0x15 and jt and at + jt + 1 == refusal}
    assert to_refusal == numbers


def test_a_processor_without_a_table_is_named():
    assert "riscv64" in seccomp.unsupported_why("riscv64")


@pytest.mark.skipif(bool(seccomp.unsupported_why()), reason="no table for this processor")
def test_the_filter_refuses_inotify_in_a_child_and_not_here():
    assert support.watches_why() == ""
    assert not seccomp.watches_refused_here()  # the filter stayed in the child
