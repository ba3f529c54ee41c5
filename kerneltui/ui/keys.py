"""Every key binding, each with an id that the ``[keys]`` section of the config file can remap.

``[keys]`` maps a binding id to one key or a comma-separated list, e.g. ``run_loop = "f5"``.
Pane focus uses F2–F6 (alt+1…5 too, where the terminal sends them as such: many terminals turn
alt+digit into another character). Plain-letter keys live only on widgets that never take text (the rung table, the asm view, the
chat history), so they cannot fire while typing in the editor or the chat input.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

from kerneltui.settings.ui import KeySettings


def _b(key: str, action: str, description: str, id: str, show: bool = True, priority: bool = False,
       key_display: str | None = None) -> Binding:
    return Binding(key, action, description, show=show, priority=priority, id=id, key_display=key_display)


APP = [
    # Priority: these must work from any pane (the editor has its own uses for F6/F7).
    _b("f1", "help", "Help", "help", key_display="F1", priority=True),
    _b("ctrl+r", "run_loop", "Run", "run_loop", priority=True),
    _b("ctrl+o", "toggle_maximise", "Maximise", "maximise", priority=True),
    _b("f2,alt+1", "focus_pane('chat')", "Focus the agent chat", "focus_chat", show=False, priority=True),
    _b("f3,alt+2", "focus_pane('editor')", "Focus the kernel editor", "focus_editor", show=False, priority=True),
    _b("f4,alt+3", "focus_pane('rungs')", "Focus the rung table", "focus_rungs", show=False, priority=True),
    _b("f5,alt+4", "focus_pane('chart')", "Focus the history chart", "focus_chart", show=False, priority=True),
    _b("f6,alt+5", "focus_pane('asm')", "Focus the asm viewer", "focus_asm", show=False, priority=True),
    _b("alt+right", "resize('wider')", "Widen the focused pane's column", "pane_wider", show=False),
    _b("alt+left", "resize('narrower')", "Narrow the focused pane's column", "pane_narrower", show=False),
    _b("alt+down", "resize('taller')", "Grow the focused pane's row", "pane_taller", show=False),
    _b("alt+up", "resize('shorter')", "Shrink the focused pane's row", "pane_shorter", show=False),
    _b("ctrl+c", "agent_interrupt", "Stop the agent", "agent_interrupt", show=False, priority=True),
    _b("ctrl+q", "quit", "Quit", "quit", show=False, priority=True),
]

EDITOR = [
    _b("ctrl+s", "save", "Save", "save"),
]

ACCEPT_ACTION = "decide('accept')"  # the app tells the accept key from the keys between (app.on_key)

CHAT_LOG = [
    _b("a", ACCEPT_ACTION, "Accept", "proposal_accept"),
    _b("r", "decide('reject')", "Reject (reason)", "proposal_reject"),
    _b("f", "feedback", "Feedback", "proposal_feedback"),
    _b("e", "edit", "Edit, then accept", "proposal_edit"),
    _b("u", "app.agent_undo", "Undo accept", "proposal_undo"),
    *[_b(str(n), f"toggle_hunk({n})", f"Hunk {n} in/out", f"proposal_hunk_{n}", show=False) for n in range(1, 10)],
    _b("escape", "app.agent_interrupt", "Stop the agent", "chat_interrupt", show=False),
    _b("i,enter", "compose", "Write", "chat_compose"),
    _b("end", "follow", "Newest", "chat_follow", show=False),
]

CHAT_INPUT = [
    _b("escape", "leave", "Back to history", "chat_leave", show=False),
]

RUNGS = [
    _b("enter", "open_row", "Open", "rung_open", show=False),
    _b("p", "profile", "Profile", "rung_profile"),
    _b("r", "run_selected", "Run this rung", "rung_run"),
    _b("t", "trace", "Trace", "rung_trace"),
]

ASM = [
    _b("right_square_bracket", "stage(1)", "Next stage", "asm_next_stage", key_display="]"),
    _b("left_square_bracket", "stage(-1)", "Previous stage", "asm_prev_stage", show=False, key_display="["),
    _b("enter", "jump_to_source", "Go to source", "asm_jump"),
    _b("d", "toggle_filter('directives')", "Directives", "asm_directives"),
    _b("c", "toggle_filter('comments')", "Comments", "asm_comments"),
    _b("x", "toggle_filter('hex')", "Hex", "asm_hex"),
    _b("v", "toggle_diff", "Diff vs accepted", "asm_diff"),
    _b("e", "edit_stage", "Edit this stage", "asm_edit", show=False),
    _b("g", "top", "Top", "asm_top", show=False),
    _b("G", "bottom", "Bottom", "asm_bottom", show=False),
]

CHART = [
    _b("u", "toggle_unit", "µs / % roofline", "chart_unit"),
]

PROPOSAL_SCREEN = [
    _b("escape", "dismiss", "Close", "close", show=True),
]


@dataclass(frozen=True)
class BindingGroup:
    title: str
    where: str  # when these keys work
    bindings: list[Binding]


GROUPS = [
    BindingGroup("Everywhere", "any pane", APP),
    BindingGroup("Editor", "the kernel editor", EDITOR),
    BindingGroup("Chat history", "the chat pane (not while typing)", CHAT_LOG),
    BindingGroup("Chat input", "while typing a message", CHAT_INPUT),
    BindingGroup("Rungs", "the rung table", RUNGS),
    BindingGroup("Asm", "the asm viewer", ASM),
    BindingGroup("Chart", "the history chart", CHART),
]


def binding_ids() -> set[str]:
    return {b.id for group in GROUPS for b in group.bindings if b.id}


def keymap_from_settings(keys: KeySettings) -> tuple[dict[str, str], list[str]]:
    """The keymap for ``App.set_keymap`` and a list of problems (ids no binding has; the values were
    checked when the config loaded)."""
    known = binding_ids()
    keymap: dict[str, str] = {}
    problems: list[str] = []
    for binding_id, value in keys.remaps:
        if binding_id not in known:
            problems.append(f"[keys] {binding_id}: no binding has this id (see F1 for the list)")
            continue
        keymap[binding_id] = value
    return keymap, problems
