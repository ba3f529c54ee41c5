"""Values across the judge/candidate boundary (CPU: files in the exchange folder, mapped shared)."""

from __future__ import annotations

import pytest
import torch

from kerneltui.core.worker.contract.wire import Exchange, WireError


@pytest.fixture()
def sides(tmp_path):
    return Exchange(torch, tmp_path, "j"), Exchange(torch, tmp_path, "c")


def test_nested_values_round_trip_with_their_layout(sides):
    judge, candidate = sides
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    value = (base.t(), {"w": base[1:, 2:], 3: [torch.float16, 2.5, None, "s"]}, torch.tensor([True, False]), 7)
    wire = judge.export(value, "k1")
    got = candidate.load(wire, "k1")
    assert isinstance(got, tuple) and got[3] == 7
    assert got[0].stride() == base.t().stride() and torch.equal(got[0], base.t())
    assert got[1]["w"].storage_offset() == base[1:, 2:].storage_offset() and torch.equal(got[1]["w"], base[1:, 2:])
    assert got[1][3] == [torch.float16, 2.5, None, "s"]
    assert got[2].dtype == torch.bool and got[2].tolist() == [True, False]


def test_both_sides_see_the_same_memory(sides):
    judge, candidate = sides
    wire, view = judge.export_with_view(torch.zeros(5), "k1")
    mapped = candidate.load(wire, "k1")
    mapped[2] = 4.0  # the kernel writes into its copy ...
    assert view.tolist() == [0, 0, 4.0, 0, 0]  # ... and the judge sees it in the shared memory


def test_a_copy_is_made_at_export(sides):
    judge, candidate = sides
    original = torch.ones(3)
    wire = judge.export(original, "k1")
    candidate.load(wire, "k1").fill_(9)
    assert original.tolist() == [1, 1, 1]


def test_release_removes_the_files(sides, tmp_path):
    judge, _ = sides
    judge.export((torch.ones(3), torch.zeros(2)), "k1")
    judge.export(torch.ones(3), "k2")
    assert len(list(tmp_path.iterdir())) == 3
    judge.release(["k1"])
    assert len(list(tmp_path.iterdir())) == 1
    judge.release()
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("change, message", [
    ({"file": "../escape"}, "must name a file"),
    ({"shape": [100]}, "reaches past the end"),
    ({"offset": 3}, "reaches past the end"),
    ({"dtype": "object"}, "unknown dtype"),
    ({"shape": "12"}, "list of integers"),
    ({"stride": [-1]}, "integer ≥ 0"),
    ({"nbytes": 10 ** 13}, "claims"),
])
def test_a_descriptor_from_the_other_side_is_checked_before_it_is_mapped(sides, change, message):
    judge, candidate = sides
    wire = judge.export(torch.ones(4), "k1")
    wire["$tensor"].update(change)
    with pytest.raises(WireError, match=message):
        candidate.load(wire, "k1")


def test_values_that_cannot_cross_say_what_they_are(sides):
    judge, _ = sides
    with pytest.raises(WireError, match="builtins.object cannot be passed"):
        judge.export((torch.ones(1), object()), "k1")
