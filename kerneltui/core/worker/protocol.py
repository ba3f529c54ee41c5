"""The framed-JSON protocol between the parent and a worker.

Each message is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON. It runs over
the worker's original stdin/stdout, which the worker moves to private descriptors before any
candidate code is imported (the candidate's prints go to stderr), so the same protocol works over a
local pipe and over ``ssh host python -m kerneltui.core.worker.child``.

Parent → worker: ``{"id": n, "op": str, "args": {...}}``.
Worker → parent: ``{"id": n, "event": "progress", "message": str, "fraction": float|None}`` any
number of times, then ``{"id": n, "ok": true, "result": {...}}`` or
``{"id": n, "ok": false, "error": {"type", "message", "traceback", "file", "line"}}``.
The worker greets once with ``{"event": "ready", "info": {...}}`` when its imports are done.
"""

from __future__ import annotations

import json
import struct
from typing import IO, Any

HEADER = struct.Struct(">I")
MAX_MESSAGE = 512 * 1024 * 1024


class ProtocolError(Exception):
    pass


def encode(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":"), default=_default).encode("utf-8")
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
