"""A real HTTP server on loopback that speaks the OpenAI and Anthropic streaming wire formats.

Tests queue replies (server-sent event streams or error responses); the real ``openai`` and
``anthropic`` SDK clients connect to it through ``base_url``, so their own request building, SSE
parsing, error classes and retries run exactly as they would against the real services. Every
request is recorded (path, headers, JSON body, its size in bytes) for assertions.

A slow stream (``SSE(pause_s=…)``) lets a client interrupt a reply mid-way. Faults: a stream cut
short (``truncated``: the body ends cleanly before the end marker) and a
connection dropped mid-stream (``SSE(cut=True)``: the socket closes inside the chunked body). A
reply may also be a function of the recorded request (to answer with usage computed from it).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class SSE:
    events: list[tuple[str | None, Any]]  # (event name or None, data: dict or raw string)
    cut: bool = False  # drop the connection after the events, inside the chunked body
    pause_s: float = 0.0  # wait between events: a slow stream, for a client to interrupt mid-reply


@dataclass
class ErrorReply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    size: int = 0  # bytes of the request body as sent


Reply = SSE | ErrorReply | Callable[[Recorded], SSE | ErrorReply]


def truncated(reply: SSE, keep: int) -> SSE:
    """The stream's first ``keep`` events, then a clean end of the body: no end marker."""
    return replace(reply, events=reply.events[:keep])


def dropped(reply: SSE, keep: int) -> SSE:
    """The stream's first ``keep`` events, then the connection is closed mid-body."""
    return replace(reply, events=reply.events[:keep], cut=True)


class LLMServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                recorded = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"{}"),
                                    size=len(raw) if length else 0)
                with server._lock:
                    server.requests.append(recorded)
                    reply = server.replies.pop(0) if server.replies else ErrorReply(
                        500, {"error": {"message": "test server: no reply queued", "type": "server_error"}})
                if callable(reply):
                    reply = reply(recorded)
                if isinstance(reply, ErrorReply):
                    data = json.dumps(reply.body).encode()
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for name, data in reply.events:
                    if reply.pause_s:
                        time.sleep(reply.pause_s)
                    payload = data if isinstance(data, str) else json.dumps(data)
                    text = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
                    chunk = text.encode()
                    try:
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                    except (BrokenPipeError, ConnectionResetError):
                        return  # the client stopped reading (an interrupted reply)
                if reply.cut:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> LLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)


# -- OpenAI Chat Completions ------------------------------------------------------------------------

def openai_chat_stream(text: list[str] = (), tool_calls: list[tuple[str, str, list[str]]] = (),  # type: ignore[assignment]
                       usage: tuple[int, int, int] | None = (100, 20, 0), model: str = "gpt-test",
                       finish: str | None = None, refusal: str | None = None) -> SSE:
    """Chunks as OpenAI streams them: role, content pieces, tool-call pieces by index, finish, usage, [DONE]."""

    def chunk(delta: dict[str, Any] | None, finish_reason: str | None = None, usage_obj: Any = None) -> tuple[None, Any]:
        data: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
                                "choices": [] if delta is None else
                                [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}]}
        if usage_obj is not None:
            data["usage"] = usage_obj
        return (None, data)

    events: list[tuple[str | None, Any]] = [chunk({"role": "assistant", "content": ""})]
    for piece in text:
        events.append(chunk({"content": piece}))
    if refusal:
        events.append(chunk({"refusal": refusal}))
    for index, (call_id, name, pieces) in enumerate(tool_calls):
        events.append(chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                             "function": {"name": name, "arguments": ""}}]}))
        for piece in pieces:
            events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    events.append(chunk({}, finish or ("tool_calls" if tool_calls else "stop")))
    if usage is not None:
        events.append(chunk(None, usage_obj={"prompt_tokens": usage[0], "completion_tokens": usage[1],
                                             "total_tokens": usage[0] + usage[1],
                                             "prompt_tokens_details": {"cached_tokens": usage[2]}}))
    events.append((None, "[DONE]"))
    return SSE(events)


def openai_error(status: int, message: str, code: str, kind: str = "invalid_request_error",
                 headers: dict[str, str] | None = None) -> ErrorReply:
    return ErrorReply(status, {"error": {"message": message, "type": kind, "param": None, "code": code}},
                      headers or {})


# -- OpenAI Responses -------------------------------------------------------------------------------

def openai_responses_stream(text: list[str] = (), tool_calls: list[tuple[str, str, list[str]]] = (),  # type: ignore[assignment]
                            usage: tuple[int, int] = (100, 20), model: str = "gpt-test") -> SSE:
    seq = iter(range(1000))
    response = {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "model": model,
                "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "sequence_number": next(seq), "response": response})]
    output: list[dict[str, Any]] = []
    if text:
        item = {"type": "message", "id": "msg_1", "status": "in_progress", "role": "assistant", "content": []}
        events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                      "sequence_number": next(seq), "item": item}))
        for piece in text:
            events.append(("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                "delta": piece, "logprobs": [], "sequence_number": next(seq)}))
        done = dict(item, status="completed",
                    content=[{"type": "output_text", "text": "".join(text), "annotations": []}])
        events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                                     "sequence_number": next(seq), "item": done}))
        output.append(done)
    for n, (call_id, name, pieces) in enumerate(tool_calls, start=len(output)):
        item_id = f"fc_{n}"
        item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": "",
                "status": "in_progress"}
        events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": n,
                                                      "sequence_number": next(seq), "item": item}))
        for piece in pieces:
            events.append(("response.function_call_arguments.delta", {
                "type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": n,
                "delta": piece, "sequence_number": next(seq)}))
        events.append(("response.function_call_arguments.done", {
            "type": "response.function_call_arguments.done", "item_id": item_id, "output_index": n,
            "arguments": "".join(pieces), "name": name, "sequence_number": next(seq)}))
        done = dict(item, arguments="".join(pieces), status="completed")
        events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": n,
                                                     "sequence_number": next(seq), "item": done}))
        output.append(done)
    final = dict(response, status="completed", output=output,
                 usage={"input_tokens": usage[0], "output_tokens": usage[1], "total_tokens": sum(usage),
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens_details": {"reasoning_tokens": 0}})
    events.append(("response.completed", {"type": "response.completed", "sequence_number": next(seq),
                                          "response": final}))
    return SSE(events)


# -- Anthropic Messages -----------------------------------------------------------------------------

def anthropic_stream(text: list[str] = (), tool_uses: list[tuple[str, str, list[str]]] = (),  # type: ignore[assignment]
                     usage: tuple[int, int] = (100, 20), cache: tuple[int, int] = (0, 0),
                     stop_reason: str | None = None, model: str = "claude-test") -> SSE:
    events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": usage[0], "output_tokens": 1,
                                         "cache_read_input_tokens": cache[0], "cache_creation_input_tokens": cache[1]}}})]
    index = 0
    if text:
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}}))
        events.append(("ping", {"type": "ping"}))
        for piece in text:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    for call_id, name, pieces in tool_uses:
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "tool_use", "id": call_id, "name": name,
                                                                 "input": {}}}))
        for piece in pieces:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta", "partial_json": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop_reason or ("tool_use" if tool_uses else "end_turn"),
                                               "stop_sequence": None},
                                     "usage": {"output_tokens": usage[1]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return SSE(events)


def without_marks(value: Any) -> Any:
    """A request body with Anthropic's ``cache_control`` marks taken out (they move to the newest block)."""
    if isinstance(value, dict):
        return {k: without_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_marks(v) for v in value]
    return value


def anthropic_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> ErrorReply:
    return ErrorReply(status, {"type": "error", "error": {"type": kind, "message": message}}, headers or {})
