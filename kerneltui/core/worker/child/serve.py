"""Entry point of a worker process: ``python -m kerneltui.core.worker.child.serve --backend triton``.

Start-up order matters:
1. take the protocol off stdin/stdout onto private descriptors, and point fd 0 at /dev/null and
   fd 1 at stderr, so whatever the candidate prints cannot corrupt the protocol; read the parent's
   per-worker key (the first frame), which authenticates every reply (``protocol.Signer``), so bytes
   the candidate writes to the reply descriptor are rejected by the parent;
2. import torch, decide whether a GPU is there (no GPU: Triton runs under its interpreter, which
   must be chosen before triton is imported), import the backend's DSL: this is the "warm" part;
3. greet the parent with ``ready`` and serve requests until stdin closes.

Candidate code is only ever imported by an op (``load``), after step 3.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import traceback
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported lazily at run time: the start-up order above decides what loads when
    from kerneltui.core.worker.contract.replies import WorkerError

from kerneltui.core.worker.contract.start import NICE_ENV

# Ops both kinds of worker serve.
SHARED_OPS = frozenset({"ping", "device_peaks"})
# The judge's benchmark ops are named judge_* like the rest; the candidate's are not.


def _take_protocol_fds() -> tuple[IO[bytes], IO[bytes]]:
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    return proto_in, proto_out


class Channel:
    """Writes protocol messages; the only path results take back to the parent."""

    def __init__(self, out: IO[bytes], key: bytes) -> None:
        from kerneltui.core.worker.contract.protocol import Signer

        self._out = out
        self._signer = Signer(key)

    def send(self, message: Mapping[str, object]) -> None:
        self._out.write(self._signer.seal(message))
        self._out.flush()


def _lower_priority(raw: str | None) -> None:
    """Raise this worker's nice value to ``raw`` before the heavy imports (children inherit it); a
    worker forked from a zygote has it already (the zygote lowered its own before importing)."""
    if not raw:
        return
    try:
        wanted = int(raw)
        current = os.getpriority(os.PRIO_PROCESS, 0)
        if wanted > current:
            os.nice(wanted - current)
    except (ValueError, OSError) as exc:  # said on stderr, which the parent keeps with the rung
        print(f"kerneltui worker: {NICE_ENV}={raw!r} not applied ({exc}); running at normal priority",
              file=sys.stderr)


def _read_key(proto_in: IO[bytes]) -> bytes:
    from kerneltui.core.worker.contract.protocol import read_message

    first = read_message(proto_in)
    key = (first or {}).get("key")
    if not isinstance(key, str):
        raise SystemExit("kerneltui worker: the first frame must carry the reply key; start workers through kerneltui")
    return bytes.fromhex(key)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kerneltui-worker")
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--arch", default=None, help="target for ahead-of-time compiles with no GPU (e.g. sm_90a)")
    parser.add_argument("--role", default="candidate", choices=("candidate", "judge"),
                        help="candidate: imports the kernel; judge: imports the reference, never the kernel")
    opts = parser.parse_args(argv)
    _lower_priority(os.environ.get(NICE_ENV))

    proto_in, proto_out = _take_protocol_fds()
    channel = Channel(proto_out, _read_key(proto_in))
    from kerneltui.core.worker.child.state import WorkerState
    from kerneltui.core.worker.contract.protocol import read_message

    started = time.perf_counter()
    state = WorkerState(backend_name=opts.backend, arch=opts.arch, role=opts.role)
    try:
        info = state.warm_up()
    except BaseException as exc:  # a broken install must reach the person, not hang the parent
        channel.send({"event": "ready", "ok": False, "error": _error_dict(exc, state)})
        return 3
    info["warm_up_s"] = round(time.perf_counter() - started, 3)
    # What the warm-up made (torch, the DSL, the known code: ~300,000 objects the collector tracks)
    # lives as long as this single-use worker. Out of the collector's sight, a full collection during
    # a run costs nothing instead of ~90 ms.
    gc.freeze()
    channel.send({"event": "ready", "ok": True, "info": info})

    from kerneltui.core.worker.child.ops import OPS

    while True:
        message = read_message(proto_in)
        if message is None:
            # The parent is done with this single-use worker. Exit without the interpreter's
            # teardown (with torch and a DSL loaded it outlasted the parent's 2 s grace on every
            # close, adding that to every run): nothing is left to write, every reply is sent, and
            # a broken CUDA context must not run destructors (see below).
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(4 if state.poisoned else 0)
        req_id = message.get("id")
        op = OPS.get(str(message.get("op")))
        if op is not None and (state.role == "judge") != str(message.get("op")).startswith("judge_") \
                and str(message.get("op")) not in SHARED_OPS:
            op = None  # a judge never loads a kernel, a candidate's worker never judges
        if op is None:
            channel.send({"id": req_id, "ok": False, "error": {"type": "ProtocolError", "message": f"unknown op {message.get('op')!r}"}})
            continue

        try:
            result = op(state, message.get("args") or {}, Progress(channel, req_id))
            channel.send({"id": req_id, "ok": True, "result": result})
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            channel.send({"id": req_id, "ok": False, "error": _error_dict(exc, state)})
            if state.poisoned:
                # A CUDA error leaves the context unusable; this process must not be reused. Exit
                # without running destructors: freeing memory mapped from the judge (CUDA IPC) in a
                # broken context aborts the process, which would bury the error just reported.
                sys.stderr.flush()
                os._exit(4)


class Progress:
    """What an op tells the parent before its reply: ``progress(text, fraction)``, and once per call
    of the kernel, ``returned(digests)``: its outputs' bytes the moment it returned, sealed and sent
    before any further step of the op can run code the kernel left behind (``ops_candidate``)."""

    def __init__(self, channel: Any, req_id: Any) -> None:
        self._channel = channel
        self._id = req_id

    def __call__(self, text: str, fraction: float | None = None) -> None:
        self._channel.send({"id": self._id, "event": "progress", "message": text, "fraction": fraction})

    def returned(self, digests: dict[str, str]) -> None:
        self._channel.send({"id": self._id, "event": "returned", "digests": digests})


def _error_dict(exc: BaseException, state: Any) -> WorkerError:
    from kerneltui.core.worker.child.errors import describe_exception

    try:
        return describe_exception(exc, state)
    except Exception:
        return {"type": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()}


if __name__ == "__main__":
    sys.exit(main())
