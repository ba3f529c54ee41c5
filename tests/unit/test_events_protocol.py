"""Events round-trip through JSON; the worker protocol frames messages."""

from __future__ import annotations

import dataclasses
import io
import json
import typing

import pytest

from kerneltui.core import events as ev
from kerneltui.core.rungs.result import RungResult, SourceLocation
from kerneltui.core.worker.contract.protocol import ProtocolError, encode, read_message


def sample(cls):
    values = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name == "at":
            continue
        t = str(hints[f.name])
        if "RungResult" in t:
            values[f.name] = [RungResult("compile", "fail", error="x", location=SourceLocation("k.py", 3))] if "list" in t else \
                RungResult("run", "ok", summary="s", metrics={"a": 1.5})
        elif "bool" in t:
            values[f.name] = True
        elif "float" in t:
            values[f.name] = 1.25
        elif "int" in t:
            values[f.name] = 7
        elif "dict" in t:
            values[f.name] = {"k": [1, 2]}
        elif "list" in t:
            values[f.name] = ["a", "b"]
        else:
            values[f.name] = f"{f.name}-value"
    return cls(**values)


@pytest.mark.parametrize("cls", list(ev.event_types().values()), ids=lambda c: c.__name__)
def test_every_event_round_trips(cls):
    event = sample(cls)
    data = json.loads(json.dumps(ev.event_to_dict(event)))
    assert data["type"] == cls.__name__
    assert ev.event_from_dict(data) == event


def test_unknown_event_type():
    with pytest.raises(ValueError, match="unknown event type"):
        ev.event_from_dict({"type": "Nope"})


def test_newer_fields_are_ignored():
    data = ev.event_to_dict(ev.Notice(level="info", message="hi"))
    data["added_later"] = 1
    assert ev.event_from_dict(data).message == "hi"


def test_protocol_frames():
    buf = io.BytesIO(encode({"id": 1, "op": "x"}) + encode({"id": 2, "ok": True, "result": {"v": [1, 2]}}))
    assert read_message(buf) == {"id": 1, "op": "x"}
    assert read_message(buf)["result"] == {"v": [1, 2]}
    assert read_message(buf) is None


def test_protocol_truncated_message():
    frame = encode({"id": 1})
    with pytest.raises(ProtocolError):
        read_message(io.BytesIO(frame[:-2]))
