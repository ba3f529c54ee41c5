"""``[sandbox]`` settings (config file, or ``KERNELTUI_SANDBOX_<KEY>`` variables).

``enabled = false`` (``KERNELTUI_SANDBOX_ENABLED=false``) turns the box off: no network namespace, no
Landlock, no resource limits, capabilities kept. The scrubbed environment and the process
supervisor stay on either way (they confine nothing a kernel needs), and ``kerneltui doctor`` and the
compile rung say that the box is off.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from kerneltui.config import ConfigError, load_config

SECTION = "sandbox"


@dataclass(frozen=True)
class SandboxSettings:
    enabled: bool = True
    pass_env: tuple[str, ...] = field(default=())  # more variable names for workers (never credentials)
    # RLIMIT_AS in GiB; 0: none; None: decided by the machine (address_space_limit below).
    address_space_gib: int | None = None
    open_files: int = 8192  # RLIMIT_NOFILE
    processes: int = 1024  # more tasks (threads count) than the user has when the worker starts
    # Workers forked from a zygote that has imported torch and the DSL (``core/sandbox/zygote.py``);
    # false: every worker is a new Python that imports them itself.
    zygote: bool = True
    # The same where a GPU is. CUDA does not survive a fork once initialised: the zygote imports
    # without initialising it, asks the driver that nothing did, and refuses to serve otherwise (its
    # workers are then exec'd); each forked worker starts CUDA itself. False: exec'd workers on a GPU.
    zygote_on_gpu: bool = True

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["pass_env"] = list(self.pass_env)
        return data

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> SandboxSettings:
        known = {k: v for k, v in values.items() if k in cls.__dataclass_fields__}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ConfigError(f"[sandbox] has no setting {', '.join(unknown)} "
                              f"(known: {', '.join(cls.__dataclass_fields__)})")
        pass_env = known.get("pass_env", ())
        if isinstance(pass_env, str):
            pass_env = [p for p in pass_env.replace(",", " ").split() if p]
        if not isinstance(pass_env, (list, tuple)) or not all(isinstance(p, str) for p in pass_env):
            raise ConfigError('[sandbox] pass_env must be a list of variable names, e.g. ["MY_VAR"]')
        known["pass_env"] = tuple(pass_env)
        for name in ("enabled", "zygote", "zygote_on_gpu"):
            value = known.get(name, getattr(cls, name))
            if not isinstance(value, bool):
                raise ConfigError(f"[sandbox] {name} must be true or false, not {value!r}")
        for name in ("address_space_gib", "open_files", "processes"):
            value = known.get(name, getattr(cls, name))
            if value is None and name == "address_space_gib":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"[sandbox] {name} must be a whole number ≥ 0, not {value!r}")
        return cls(**known)


def load_settings() -> SandboxSettings:
    return SandboxSettings.from_mapping(load_config().section(SECTION))


CPU_ADDRESS_SPACE_GIB = 64


def address_space_limit(settings: SandboxSettings, gpu: bool) -> tuple[int, str]:
    """(RLIMIT_AS in GiB, 0 for none; why, when not the setting). Where a GPU is, none by default:
    with unified addressing every CUDA allocation also takes its size of the process's address
    space, so a cap below the GPU's memory (141 GiB on an H200) fails an honest kernel that uses a
    lot of it with "CUDA error: out of memory"; the host's memory is not what such a cap protects."""
    if settings.address_space_gib is not None:
        return settings.address_space_gib, ""
    if gpu:
        return 0, "address space unlimited (a GPU machine: CUDA maps device memory into it)"
    return CPU_ADDRESS_SPACE_GIB, ""

