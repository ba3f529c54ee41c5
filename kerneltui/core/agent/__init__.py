"""The agent: providers, tools, proposals, auto mode and context search (no Textual here).

Front ends build an :class:`AgentSession` with :func:`open_session` and drive it with ``send``,
``decide``, ``undo``, ``interrupt`` and ``run_auto``; see ``session.py``.
"""

from __future__ import annotations

from pathlib import Path

from kerneltui.config import Config
from kerneltui.core.agent.auto import AutoLimits, AutoResult
from kerneltui.core.agent.checkpoints import KernelTarget
from kerneltui.core.agent.errors import ProviderError
from kerneltui.core.agent.prices import PriceTable
from kerneltui.core.agent.providers import Provider, build_provider
from kerneltui.core.agent.session import AgentSession, TurnResult
from kerneltui.core.agent.settings import AgentSettings
from kerneltui.core.events import Emit
from kerneltui.core.task import Task
from kerneltui.core.worker.pool import WorkerPool

__all__ = ["AgentSession", "AgentSettings", "AutoLimits", "AutoResult", "PriceTable", "Provider", "ProviderError",
           "TurnResult", "build_provider", "open_session"]


def open_session(task: Task, emit: Emit | None = None, config: Config | None = None, *,
                 pool: WorkerPool | None = None, target: KernelTarget | None = None,
                 context_root: Path | None = None, env: dict[str, str] | None = None,
                 verify_applied: bool = True, **overrides: object) -> AgentSession:
    """A session for ``task`` from the config (``[agent]``, ``[prices]``) and overrides
    (provider=, model=, base_url=, script=, api=, api_key_env= …).

    Raises :class:`ProviderError` (kind ``no_key`` or ``config``) with what to fix when the provider
    cannot be built; nothing falls back to another provider.
    """
    settings = AgentSettings.from_config(config, **overrides)
    provider = build_provider(settings, env)
    return AgentSession(task, provider, emit, settings=settings, prices=PriceTable.from_config(config), pool=pool,
                        target=target, context_root=context_root, verify_applied=verify_applied)
