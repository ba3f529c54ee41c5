"""Worker ops that describe the worker itself."""

from __future__ import annotations

import os
from typing import Any


def op_ping(state: Any, args: dict[str, Any], progress: Any) -> dict[str, Any]:
    return {"pid": os.getpid(), "info": state.info}


OPS = {"ping": op_ping}
