"""The agent: providers, tools, proposals, auto mode and context search (no Textual here).

Front ends build an :class:`AgentChat` with :func:`open_chat` and drive it with ``send``,
``decide``, ``undo``, ``interrupt`` and ``run_auto``; see ``chat.py``. Names are imported on first
use, so importing one submodule (e.g. ``search``) does not load the rest.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kerneltui.config import Config
    from kerneltui.core.agent.auto import AutoLimits, AutoResult
    from kerneltui.core.agent.chat import AgentChat
    from kerneltui.core.agent.checkpoints import KernelTarget
    from kerneltui.core.agent.errors import ProviderError
    from kerneltui.core.agent.prices import PriceTable
    from kerneltui.core.agent.providers import Provider, build_provider
    from kerneltui.core.agent.settings import AgentSettings
    from kerneltui.core.agent.turn_result import TurnResult
    from kerneltui.core.events import Emit
    from kerneltui.core.task import Task
    from kerneltui.core.worker.parent.pool import WorkerPool

_LAZY = {
    "AgentChat": "chat", "TurnResult": "turn_result", "AgentSettings": "settings", "AutoLimits": "auto",
    "AutoResult": "auto", "PriceTable": "prices", "Provider": "providers", "build_provider": "providers",
    "ProviderError": "errors",
}
__all__ = ["AgentChat", "AgentSettings", "AutoLimits", "AutoResult", "PriceTable", "Provider", "ProviderError",
           "TurnResult", "build_provider", "demo_script_path", "open_chat"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def demo_script_path() -> Path:
    """The recorded session the scripted provider replays in the offline demo (vector_add example)."""
    from kerneltui.paths import package_dir

    return package_dir() / "data" / "agent" / "vector_add_demo.toml"


def open_chat(task: Task, emit: Emit | None = None, config: Config | None = None, *,
                 pool: WorkerPool | None = None, target: KernelTarget | None = None,
                 context_root: Path | None = None, env: dict[str, str] | None = None,
                 verify_applied: bool = True, **overrides: object) -> AgentChat:
    """A chat for ``task`` from the config (``[agent]``, ``[prices]``) and overrides
    (provider=, model=, base_url=, script=, api=, api_key_env= …).

    Raises :class:`ProviderError` (kind ``no_key`` or ``config``) with what to fix when the provider
    cannot be built; nothing falls back to another provider.
    """
    from kerneltui.core.agent.chat import AgentChat
    from kerneltui.core.agent.prices import PriceTable
    from kerneltui.core.agent.providers import build_provider
    from kerneltui.core.agent.settings import AgentSettings

    settings = AgentSettings.from_config(config, **overrides)
    provider = build_provider(settings, env)
    return AgentChat(task, provider, emit, settings=settings, prices=PriceTable.from_config(config), pool=pool,
                        target=target, context_root=context_root, verify_applied=verify_applied)
