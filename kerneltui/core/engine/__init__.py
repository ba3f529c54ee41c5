"""The engine: one background process per user and machine that keeps workers warm for every command.

``server`` (the process), ``client`` (a command's side, and :class:`EngineLoop`, the loop's face over
the engine), ``channel`` (the authenticated socket protocol), ``messages`` (requests and replies as
data), ``pools`` (warm pools and GPU sharing), ``reaper`` (workers die with the engine), ``settings``.
"""
