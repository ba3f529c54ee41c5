"""One redaction for everything kerneltui stores: what it removes, what it leaves alone, and the
stores that use it (history, session log, tool outcomes)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import pytest

from kerneltui.core import events as ev
from kerneltui.core.history import HistoryStore
from kerneltui.core.loop import RunReport
from kerneltui.core.redact import REDACTED, redact, redact_tree, redacted, register_secret
from kerneltui.core.rungs.result import RungResult
from kerneltui.core.session import SessionLog
from kerneltui.core.task_loaders.load import load_task

KEY = "sk-test-0123456789abcdefSECRET"
PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0123456789abcdef\n"
       "-----END RSA PRIVATE KEY-----\n")


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DB_PASSWORD", "correct horse battery staple")


def test_environment_secrets_and_their_echoes_are_removed(planted: None) -> None:
    text = f"401 from the server: bad key {KEY} (sent sk-test-0123***RET); db: correct horse battery staple"
    out = redact(text)
    assert KEY not in out and "sk-test-0123" not in out and "horse" not in out
    assert out.count(REDACTED) == 3


@pytest.mark.parametrize("secret", [
    PEM,
    PEM[:60],  # cut off: the header to the end of the text goes
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
    "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-1234567890-abcdefghij",
    "hf_abcdefghijklmnopqrstuvwxyzABCD",
    "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
    "glpat-abcdefghijklmnopqrst",
])
def test_secrets_of_known_shapes_are_removed_whoever_owns_them(secret: str) -> None:
    out = redact(f"printed: {secret!r} and {secret}")
    assert secret.strip() not in out and REDACTED in out


@pytest.mark.parametrize("text", [
    "mask = offs < n  # mask-abcdefghijklmnopqrstuvwxyz",
    "tl.store(out_ptr + offs, x, mask=mask)",
    "  STG.E.128 [R2.64], R4 ;",
    "max abs error 1.23e-05 at index 4097 (seed 1234567890)",
    "Authorization header missing",
])
def test_ordinary_text_is_left_alone(text: str, planted: None) -> None:
    assert redact(text) == text


def test_bearer_tokens_and_registered_keys() -> None:
    assert redact("Authorization: Bearer abcdefghijklmnop0123456789") == f"Authorization: Bearer {REDACTED}"
    register_secret("from-the-config-file-0123")
    assert redact("key from-the-config-file-0123 here") == f"key {REDACTED} here"


def test_trees_and_dataclasses(planted: None) -> None:
    @dataclass(frozen=True)
    class Outcome:
        ok: bool
        summary: str
        output: str

    tree = redact_tree({"error": [f"bad {KEY}"], KEY: 3, "n": 1.5})
    assert tree == {"error": [f"bad {REDACTED}"], REDACTED: 3, "n": 1.5}
    out = redacted(Outcome(False, f"key {KEY}", PEM))
    assert out == Outcome(False, f"key {REDACTED}", f"{REDACTED}\n")
    with pytest.raises(TypeError):
        redacted("not a dataclass")


def test_history_stores_no_key_from_an_error_message(example_task, planted: None, tmp_path) -> None:
    """The issue: an error message holding a key was stored unredacted in rungs.summary."""
    task = load_task(example_task("vector_add"))
    result = RungResult(name="compile", status="fail", summary=f"kernel.py:3: RuntimeError: {KEY}",
                        error=f"RuntimeError: {KEY}", metrics={"failure": f"error {KEY}"},
                        details=f"Traceback ... {PEM}")
    report = RunReport(run_id="r1", task=task.name, ok=False, results=[result], device={}, source_hash="abc",
                       duration_s=0.1)
    store = HistoryStore(tmp_path / "history.sqlite")
    number = store.record(task, "print('kernel')", report)
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("history.sqlite*"))
    assert KEY.encode() not in raw and b"PRIVATE KEY" not in raw
    with sqlite3.connect(store.path) as conn:
        summary, error = conn.execute("SELECT summary, error FROM rungs WHERE run = ?", (number,)).fetchone()
    assert summary == f"kernel.py:3: RuntimeError: {REDACTED}" and error == f"RuntimeError: {REDACTED}"


def test_session_log_redacts_shapes_not_only_environment_values(example_task, tmp_path) -> None:
    task = load_task(example_task("vector_add"))
    log = SessionLog.create(tmp_path, task, "test")
    log.write(ev.AgentError(turn_id="t", kind="tool", message=f"the kernel printed {PEM}"))
    log.close()
    text = (log.folder / "log.jsonl").read_text()
    assert "PRIVATE KEY" not in text and "MIIEpAIBAAKCAQEA" not in text and REDACTED in text
