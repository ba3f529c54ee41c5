"""The benchmark's derived input sets keep what honest kernels exploit and never repeat a set."""

from __future__ import annotations

import torch

from kerneltui.core.worker.child.fresh_inputs import derive


def test_a_derived_set_keeps_symmetry_triangles_and_integers_and_is_new() -> None:
    a = torch.randn(16, 16)
    base = (a + a.T, torch.triu(torch.randn(16, 16)), torch.arange(10), 3)
    sets = [derive(torch, base, seed) for seed in range(8)]
    for sym, tri, idx, scalar in sets:
        assert torch.equal(sym, sym.T)  # a kernel that computes half of a symmetric product stays right
        assert torch.equal(tri, torch.triu(tri))
        assert torch.equal(idx, base[2]) and idx.data_ptr() != base[2].data_ptr() and scalar == 3
        assert not torch.equal(sym, base[0])
    firsts = {float(s[0][0, 0]) for s in sets}
    assert len(firsts) == len(sets)  # every set differs from every other
    assert torch.equal(derive(torch, base, 5)[0], sets[5][0])  # the judge can make a set again
