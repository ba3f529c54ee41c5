"""The framed-JSON protocol between the parent and a worker.

Each message is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. It runs over
the worker's original stdin/stdout, which the worker moves to private descriptors before any
candidate code is imported (the candidate's prints go to stderr), so the same protocol works over a
local pipe and over ``ssh host python -m kerneltui.core.worker.child.serve``.

Parent → worker: ``{"id": n, "op": str, "args": {...}}``.
Worker → parent: ``{"id": n, "event": "progress", "message": str, "fraction": float|None}`` any
number of times, then ``{"id": n, "ok": true, "result": {...}}`` or
``{"id": n, "ok": false, "error": {"type", "message", "traceback", "file", "line"}}``.
The worker greets once with ``{"event": "ready", "info": {...}}`` when its imports are done.

**Authenticated replies.** Candidate code runs inside the worker and can write to any descriptor
the process holds, including the private one that carries replies. So the parent draws a key per
worker and sends it as the very first frame (``{"key": hex}``, before any candidate code exists);
every frame the worker sends is ``HMAC-SHA256(key, frame number ‖ body)`` followed by the body.
A frame written by anything else, or a genuine frame replayed or reordered, fails the MAC and the
parent discards the worker (``ForgedFrame``). The worker keeps the key only inside an OpenSSL HMAC
object, never as a Python string.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import struct
from collections.abc import Mapping
from typing import IO, Any

HEADER = struct.Struct(">I")
MAX_MESSAGE = 512 * 1024 * 1024
MAC_BYTES = 32
COUNTER = struct.Struct(">Q")


class ProtocolError(Exception):
    pass


class ForgedFrame(ProtocolError):
    """A frame on the reply channel that the worker's harness did not write."""


def new_key() -> bytes:
    return secrets.token_bytes(32)


class Signer:
    """Worker side: seals each outgoing body with the frame number and the key."""

    def __init__(self, key: bytes) -> None:
        self._mac = hmac.new(key, digestmod=hashlib.sha256)  # holds the key; copies sign each frame
        self._count = 0

    def seal(self, message: Mapping[str, object]) -> bytes:
        body = _body(message)
        mac = self._mac.copy()
        mac.update(COUNTER.pack(self._count))
        mac.update(body)
        self._count += 1
        payload = mac.digest() + body
        return HEADER.pack(len(payload)) + payload


class Verifier:
    """Parent side: opens sealed frames in order; anything else raises ForgedFrame."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._count = 0

    def open(self, payload: bytes) -> dict[str, Any]:
        if len(payload) < MAC_BYTES:
            raise ForgedFrame(f"a {len(payload)}-byte frame with no authentication code")
        mac, body = payload[:MAC_BYTES], payload[MAC_BYTES:]
        want = hmac.new(self._key, COUNTER.pack(self._count) + body, hashlib.sha256).digest()
        if not hmac.compare_digest(mac, want):
            raise ForgedFrame(f"frame #{self._count} does not carry the worker's authentication code")
        self._count += 1
        return decode_body(body)


def _body(message: Mapping[str, object]) -> bytes:
    return json.dumps(message, separators=(",", ":"), default=_default).encode("utf-8")


def encode(message: Mapping[str, object]) -> bytes:
    body = _body(message)
    return HEADER.pack(len(body)) + body


def _default(value: Any) -> Any:
    # numpy scalars and paths reach the protocol from worker code; keep them readable.
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "__fspath__"):
        return str(value)
    raise TypeError(f"cannot send {type(value).__name__} over the worker protocol")


def decode_body(body: bytes) -> dict[str, Any]:
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"garbled message from worker: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("worker message is not an object")
    return message


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    """Blocking read of one message; None at end of stream."""
    header = _read_exact(stream, HEADER.size)
    if header is None:
        return None
    (length,) = HEADER.unpack(header)
    if length > MAX_MESSAGE:
        raise ProtocolError(f"message of {length} bytes is over the limit")
    body = _read_exact(stream, length)
    if body is None:
        raise ProtocolError("stream ended inside a message")
    return decode_body(body)


def _read_exact(stream: IO[bytes], n: int) -> bytes | None:
    chunks = []
    remaining = n
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            if remaining == n:
                return None
            raise ProtocolError("stream ended inside a message")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
