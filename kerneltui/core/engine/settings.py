"""The engine's settings (``[engine]`` in the config file, ``KERNELTUI_ENGINE_*``) and where it lives.

One engine runs per user, machine and installation: the files of an engine (socket, key, lock, log)
are named by a fingerprint of the Python, the kerneltui package (its path and the state of its source
files), the environment variables that change what its workers do and the `[sandbox]` setting, so a second checkout, another
virtual environment, an edit of the code or another ``CUDA_VISIBLE_DEVICES`` gets an engine of its
own instead of answering with the wrong code. An engine nobody uses any more stops when idle.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from kerneltui import __version__, paths
from kerneltui.config import Config, ConfigError, load_config
from kerneltui.settings.engine import ENGINE_DEFAULTS, flag

# Unix socket paths are limited to 108 bytes by the kernel (sun_path).
SOCKET_PATH_MAX = 107
# Environment variables read by the command's own process only: they do not make another engine.
# [benchmark] is read there too: each run request carries the command's settings (RunRequest.make).
CLIENT_ONLY = ("KERNELTUI_SESSIONS_", "KERNELTUI_AGENT_", "KERNELTUI_PRICES_", "KERNELTUI_UI_", "KERNELTUI_KEYS_",
               "KERNELTUI_ENGINE_ENABLED", "KERNELTUI_ENGINE_START_TIMEOUT_S", "KERNELTUI_BENCHMARK_")
WORKER_ENV_PREFIXES = ("KERNELTUI_", "CUDA_", "TRITON_", "TORCH", "NVIDIA_", "CUTE_", "TILELANG_")
WORKER_ENV_NAMES = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
                    "XDG_DATA_HOME")


@dataclass(frozen=True)
class EngineSettings:
    enabled: bool
    idle_s: float
    dir: Path
    candidate_spares: int
    judge_spares: int
    start_timeout_s: float

    @classmethod
    def from_config(cls, config: Config | None = None) -> EngineSettings:
        """Raises ConfigError with the setting's name when a value is not usable."""
        cfg = {**ENGINE_DEFAULTS, **(config or load_config()).section("engine")}
        try:
            settings = cls(
                enabled=flag(cfg.get("enabled", True)),
                idle_s=float(cfg.get("idle_s", 900.0)),
                dir=Path(str(cfg.get("dir") or "")).expanduser() if cfg.get("dir") else default_dir(),
                candidate_spares=int(cfg.get("candidate_spares", 2)),
                judge_spares=int(cfg.get("judge_spares", 1)),
                start_timeout_s=float(cfg.get("start_timeout_s", 60.0)),
            )
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"[engine]: {exc}") from exc
        if settings.idle_s <= 0 or settings.start_timeout_s <= 0:
            raise ConfigError("[engine] idle_s and start_timeout_s must be positive (seconds)")
        if settings.candidate_spares < 0 or settings.judge_spares < 0:
            raise ConfigError("[engine] candidate_spares and judge_spares must be 0 or more")
        return settings

    @property
    def files(self) -> EngineFiles:
        return EngineFiles.in_dir(self.dir)


def default_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime) / "kerneltui"
    return paths.cache_dir() / "engine"


def engine_folders() -> tuple[str, ...]:
    """The folders an engine of this user keeps its key, log and socket in: the configured one (also
    through ``KERNELTUI_ENGINE_DIR``) and the default. No box may read them (``core.sandbox.box``)."""
    found = [default_dir()]
    try:
        found.append(load_settings().dir)
    except ConfigError:
        pass  # a setting the engine itself would refuse: no engine runs from it
    return tuple(dict.fromkeys(os.path.abspath(p) for p in found))


def fingerprint(env: dict[str, str] | None = None) -> str:
    """What makes two commands able to share an engine: the same Python, the same kerneltui and the
    same environment for the workers."""
    env = dict(os.environ if env is None else env)
    worker_env = sorted((k, v) for k, v in env.items()
                        if (k.startswith(WORKER_ENV_PREFIXES) or k in WORKER_ENV_NAMES) and not k.startswith(CLIENT_ONLY))
    package = paths.package_dir()
    text = repr((sys.executable, str(package), __version__, code_state(package), worker_env, sandbox_setting(env)))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def sandbox_setting(env: dict[str, str]) -> str:
    """The ``[sandbox]`` section as written: an engine applies the box it read when it started, so an
    edited setting (or one it cannot use) is another engine's, and the next command starts that one."""
    try:
        return repr(sorted(load_config(env=env).section("sandbox").items()))
    except ConfigError as exc:
        return f"unreadable: {exc}"


def code_state(package: Path) -> str:
    """A digest of the package's source files (name, size, modification time): an engine started
    before an edit or an upgrade runs the old parent code, so a command after it gets a new one."""
    digest = hashlib.sha256()
    stack = [package]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__" and entry.name != "examples":
                    stack.append(Path(entry.path))
            elif entry.name.endswith(".py"):
                info = entry.stat()
                digest.update(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class EngineFiles:
    dir: Path
    socket: Path
    key: Path  # one per user: proves a client is this user's
    lock: Path  # held by the running engine for its whole life
    log: Path  # the engine's own stderr

    @classmethod
    def in_dir(cls, folder: Path, env: dict[str, str] | None = None) -> EngineFiles:
        stem = f"engine-{fingerprint(env)}"
        return cls(dir=folder, socket=folder / f"{stem}.sock", key=folder / "engine.key",
                   lock=folder / f"{stem}.lock", log=folder / f"{stem}.log")

    def others(self) -> list[EngineFiles]:
        """The files of the other engines in this folder (other installations, or this one before an
        edit of its code)."""
        found = []
        for sock in sorted(self.dir.glob("engine-*.sock")):
            if sock != self.socket:
                found.append(EngineFiles(dir=self.dir, socket=sock, key=self.key, lock=sock.with_suffix(".lock"),
                                         log=sock.with_suffix(".log")))
        return found

    def check_socket_path(self) -> None:
        if len(os.fsencode(self.socket)) > SOCKET_PATH_MAX:
            raise ConfigError(f"the engine's socket path {self.socket} is longer than {SOCKET_PATH_MAX} bytes: "
                              "set [engine] dir (or KERNELTUI_ENGINE_DIR) to a shorter folder")


def load_settings() -> EngineSettings:
    return EngineSettings.from_config(load_config())


__all__ = ["ConfigError", "EngineFiles", "EngineSettings", "default_dir", "fingerprint", "load_settings"]
