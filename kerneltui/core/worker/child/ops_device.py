"""Worker ops that describe the worker itself."""

from __future__ import annotations

import os
from typing import Any

from kerneltui.core.worker.contract.replies import PingReply
from kerneltui.core.worker.contract.requests import NoArgs


def op_ping(state: Any, args: NoArgs, progress: Any) -> PingReply:
    return {"pid": os.getpid(), "info": state.info}


OPS = {"ping": op_ping}
