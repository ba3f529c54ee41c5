"""``tree.same_bits``: byte-for-byte equality of two tensors, where they are (the judge's check that
the kernel left its inputs alone, and the determinism call's comparison)."""

from __future__ import annotations

import torch

from kerneltui.core.worker.child.tree import bitwise_equal, same_bits


def test_the_same_bytes_are_the_same_whatever_the_values_mean() -> None:
    x = torch.tensor([1.0, float("nan"), -0.0])
    assert same_bits(x, x.clone(), torch)
    assert not same_bits(x, torch.tensor([1.0, float("nan"), 0.0]), torch)  # -0.0 == 0.0, not the same bytes
    assert not same_bits(x, x.to(torch.float64), torch)
    assert not same_bits(x, x.reshape(3, 1), torch)
    assert same_bits(torch.empty(0, 4), torch.empty(0, 4), torch)


def test_strided_views_bools_and_complex_numbers_compare_by_their_elements() -> None:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert same_bits(base.t(), base.t().contiguous(), torch)
    assert same_bits(base[:, ::2], base[:, ::2].clone(), torch)
    assert not same_bits(base[:, ::2], base[:, 1::2], torch)
    flags = torch.tensor([True, False, True])
    assert same_bits(flags, flags.clone(), torch) and not same_bits(flags, ~flags, torch)
    z = torch.tensor([1 + 2j, 3 - 1j])
    assert same_bits(z, z.clone(), torch) and not same_bits(z, z.conj().resolve_conj(), torch)


def test_structures_compare_leaf_by_leaf() -> None:
    a = (torch.ones(3), {"k": torch.zeros(2)}, 5)
    assert bitwise_equal(a, (torch.ones(3), {"k": torch.zeros(2)}, 5), torch)
    assert not bitwise_equal(a, (torch.ones(3), {"k": torch.zeros(2)}, 6), torch)
    assert not bitwise_equal(a, (torch.ones(3), {"k": torch.ones(2)}, 5), torch)


def test_contents_kept_as_copies_see_any_later_change(monkeypatch) -> None:
    from kerneltui.core.worker.child import tree

    out = (torch.arange(6, dtype=torch.float32), {"n": 3})
    kept = tree.contents(out, torch)
    assert [kind for _, kind, _ in kept.leaves] == ["copy", "value"]
    assert kept.same(out, torch)
    out[0][2] = -1.0  # a lazy result finished later, or a buffer reused by the next call
    assert not kept.same(out, torch)
    assert not kept.same((torch.arange(6, dtype=torch.float32), {"n": 4}), torch)
    assert not kept.same((torch.arange(6, dtype=torch.float32),), torch)


def test_contents_are_hashed_on_the_host_where_the_device_has_no_room_for_copies(monkeypatch) -> None:
    from kerneltui.core.worker.child import tree

    monkeypatch.setattr(tree, "_free_bytes", lambda device, torch: 0)
    out = [torch.ones(4), torch.zeros(2, dtype=torch.int64)]
    kept = tree.contents(out, torch)
    assert [kind for _, kind, _ in kept.leaves] == ["digest", "digest"]
    assert kept.same(out, torch)
    out[1][0] = 7
    assert not kept.same(out, torch)
