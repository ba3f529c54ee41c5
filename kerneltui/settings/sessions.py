"""``[sessions]``: where session logs are written, and whether they are."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class SessionSettings:
    SECTION: ClassVar[str] = "sessions"

    dir: str = ""  # empty: <data dir>/sessions
    record: bool = True  # write a session log for every run of the app, check, watch and ask

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
