"""A session recorded for real: the agent (scripted model, real trials through the loop) on a copy of
vector_add, every event written by ``SessionLog`` as the app writes it, with an accepted proposal,
an edited accept and a partial accept, and a run of the file after each decision (as the app does).

Afterwards the kernel file on disk is set to a text no version had, so anything that reads the task
folder instead of the session shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kerneltui.core.agent.chat import AgentChat
from kerneltui.core.agent.providers.scripted import Script, ScriptedProvider
from kerneltui.core.agent.search import ContextIndex
from kerneltui.core.agent.settings import AgentSettings
from kerneltui.core.events import Event
from kerneltui.core.session import SessionLog
from kerneltui.core.task_loaders.load import load_task
from tests.integration.agent_helpers import propose

TODAY = "# the kernel file as it is today, after the session\n"


@dataclass
class RecordedSession:
    folder: Path
    task_dir: Path
    texts: dict[str, str] = field(default_factory=dict)  # what each step of the story wrote to the file
    events: list[Event] = field(default_factory=list)


async def record_session(task_dir: Path, sessions_dir: Path, tmp_path: Path) -> RecordedSession:
    """start (1024) → p1 accepted (2048) → p2 proposes 8192, edited to 4096 and accepted → p3 proposes
    two hunks (axis=0, BLOCK 512), only the first accepted."""
    kernel = task_dir / "kernel.py"
    start = kernel.read_text()
    p1 = start.replace("BLOCK = 1024", "BLOCK = 2048")
    p2 = p1.replace("BLOCK = 2048", "BLOCK = 8192")
    edited = p1.replace("BLOCK = 2048", "BLOCK = 4096")
    p3 = edited.replace("pid = tl.program_id(0)", "pid = tl.program_id(axis=0)").replace(
        "BLOCK = 4096", "BLOCK = 512"
    )
    partial = edited.replace("pid = tl.program_id(0)", "pid = tl.program_id(axis=0)")
    turns = [
        {"tool_calls": [propose("BLOCK 2048", source=p1)]},
        {"text": "Trial done."},
        {"tool_calls": [propose("BLOCK 8192", source=p2)]},
        {"text": "Trial done."},
        {"tool_calls": [propose("axis and BLOCK 512", source=p3)]},
        {"text": "Trial done."},
    ]
    task = load_task(task_dir)
    log = SessionLog.create(sessions_dir, task, "tui", name="recorded")
    recorded = RecordedSession(
        folder=log.folder,
        task_dir=task_dir,
        texts={"start": start, "p1": p1, "p2": p2, "edited": edited, "p3": p3, "partial": partial},
    )

    def emit(event: Event) -> None:
        recorded.events.append(event)
        log.write(event)

    provider = ScriptedProvider(Script.from_dict({"name": "test", "turns": turns}))
    settings = AgentSettings(
        provider=provider.name, model=provider.model, trial_seeds=1, trial_rungs="prechecks"
    )
    context = tmp_path / "context"
    context.mkdir(exist_ok=True)
    chat = AgentChat(
        task,
        provider,
        emit,
        settings=settings,
        context_root=context,
        index=ContextIndex(context, db_path=tmp_path / "index.sqlite3"),
    )

    async def run_the_file(origin: str) -> None:
        # The app reruns the loop on the file after a decision wrote it (origin "accept").
        await chat.verify_source(kernel.read_text(), origin=origin, record=True)

    try:
        await run_the_file("start")
        await chat.send("make it faster")
        await chat.decide("p1", "accept")
        await run_the_file("accept")
        await chat.send("more")
        await chat.decide("p2", "edit", edited_source=edited)
        await run_the_file("accept")
        await chat.send("tidy it")
        await chat.decide("p3", "accept", hunks=[0])
        await run_the_file("accept")
    finally:
        await chat.close()
        log.close()
    assert kernel.read_text() == partial
    kernel.write_text(TODAY)
    return recorded
