"""The box candidate code runs in (docs/sandbox.md).

``box.open_box`` decides and prepares one process's box on the parent's side; ``launch`` is the
supervisor that applies it (``confine``) and accounts for every process below it (``reaper``,
``cgroup``); ``support`` measures what the machine allows; ``policy`` holds what is applied and what
is said about it (``SandboxState``, ``sandbox_note``); ``environment`` is the allow-list.
"""
