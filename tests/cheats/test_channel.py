"""The reply channel accepts only frames sealed with the worker's key, in order (hack 4)."""

from __future__ import annotations

import pytest

from kerneltui.core.worker.contract.protocol import HEADER, ForgedFrame, Signer, Verifier, encode, new_key


def _payload(frame: bytes) -> bytes:
    (length,) = HEADER.unpack(frame[: HEADER.size])
    assert len(frame) == HEADER.size + length
    return frame[HEADER.size:]


def test_sealed_frames_open_in_order() -> None:
    key = new_key()
    signer, verifier = Signer(key), Verifier(key)
    for i in range(3):
        assert verifier.open(_payload(signer.seal({"id": i, "ok": True}))) == {"id": i, "ok": True}


def test_an_unsealed_frame_is_rejected() -> None:
    verifier = Verifier(new_key())
    with pytest.raises(ForgedFrame, match="authentication code"):
        verifier.open(_payload(encode({"id": 1, "ok": True, "result": {"ok": True}})))


def test_a_frame_sealed_with_another_key_is_rejected() -> None:
    forged = Signer(new_key()).seal({"id": 1, "ok": True})
    with pytest.raises(ForgedFrame):
        Verifier(new_key()).open(_payload(forged))


def test_a_replayed_genuine_frame_is_rejected() -> None:
    key = new_key()
    signer, verifier = Signer(key), Verifier(key)
    first = _payload(signer.seal({"id": 1, "ok": True, "result": {"ok": True}}))
    verifier.open(first)
    with pytest.raises(ForgedFrame):
        verifier.open(first)  # the frame counter moved on
