"""Identity checks on the functions the candidate's worker relies on.

The verdict is decided in the judge, a process that never runs candidate code. What still runs in
the candidate's process is the harness's own side of each call (exporting outputs, recording what
ran) and the benchmark's timers, so a module-level ``torch.cuda.Event = …``, ``time.perf_counter = …``
or a rewritten ``__code__`` of the harness would make that evidence lie. The worker records the
identity of every function it depends on — the function object and its code object — before the
candidate is imported, and compares after import and after each call; any difference fails the
run and names what was replaced.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


def _watched(torch: Any) -> dict[str, tuple[Any, str]]:
    watched: dict[str, tuple[Any, str]] = {
        "time.perf_counter": (time, "perf_counter"),
        "time.perf_counter_ns": (time, "perf_counter_ns"),
        "time.time": (time, "time"),
        "time.monotonic": (time, "monotonic"),
        "torch.Tensor.clone": (torch.Tensor, "clone"),
        "torch.Tensor.to": (torch.Tensor, "to"),
        "torch.Tensor.__eq__": (torch.Tensor, "__eq__"),
        "torch.allclose": (torch, "allclose"),
        "torch.isclose": (torch, "isclose"),
        "torch.equal": (torch, "equal"),
        "torch.empty": (torch, "empty"),
        "torch.empty_like": (torch, "empty_like"),
        "torch.manual_seed": (torch, "manual_seed"),
        "torch.randn": (torch, "randn"),
        "torch.rand": (torch, "rand"),
        "torch.cuda.synchronize": (torch.cuda, "synchronize"),
        "torch.cuda.Event": (torch.cuda, "Event"),
        "torch.cuda.Event.elapsed_time": (torch.cuda.Event, "elapsed_time"),
        "torch.cuda.Event.record": (torch.cuda.Event, "record"),
        "torch.cuda.current_stream": (torch.cuda, "current_stream"),
        "torch.cuda.Stream.synchronize": (torch.cuda.Stream, "synchronize"),
    }
    watched.update(_harness_functions())
    # What poisons fresh allocations during the checks (ops_candidate.set_deterministic_algorithms).
    watched["torch.use_deterministic_algorithms"] = (torch, "use_deterministic_algorithms")
    if hasattr(torch._C, "_set_deterministic_algorithms"):
        watched["torch._C._set_deterministic_algorithms"] = (torch._C, "_set_deterministic_algorithms")
    try:
        import torch.utils.deterministic as det

        watched["torch.utils.deterministic"] = (torch.utils, "deterministic")
        del det
    except ImportError:
        pass
    return watched


# The worker's own judging code: replaced, it would pass anything (a patched gate, a no-op hash).
HARNESS_MODULES = ("kerneltui.core.worker.child.ops_candidate", "kerneltui.core.worker.child.evidence",
                   "kerneltui.core.worker.contract.wire", "kerneltui.core.worker.child.tree", "kerneltui.core.worker.child.runtime",
                   "kerneltui.core.worker.child.integrity", "kerneltui.core.worker.child.state")


def _harness_functions() -> dict[str, tuple[Any, str]]:
    import importlib
    import inspect

    watched: dict[str, tuple[Any, str]] = {}
    for name in HARNESS_MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if inspect.isfunction(value) or inspect.isclass(value):
                watched[f"{name}.{attr}"] = (module, attr)
                if inspect.isclass(value) and value.__module__ == name:
                    for meth, fn in vars(value).items():
                        if inspect.isfunction(fn):
                            watched[f"{name}.{attr}.{meth}"] = (value, meth)
    return watched


@dataclass(frozen=True)
class Identity:
    """A watched value and, for a Python function, its code object: ``fn.__code__ = other.__code__``
    keeps the function object and changes what it does. The objects are held, not their ids: a
    replacement made after the original is freed takes the original's address at once (CPython reuses
    the memory), so equal ids would say nothing."""

    value: Any
    code: Any

    def same_as(self, other: Identity | None) -> bool:
        # ``is``, never ``==``: a replacement class could define equality to match anything.
        return other is not None and self.value is other.value and self.code is other.code


def identity(value: Any) -> Identity:
    return Identity(value, getattr(value, "__code__", None))


@dataclass
class IdentitySnapshot:
    held: dict[str, Identity]

    @classmethod
    def take(cls, torch: Any, extra: dict[str, tuple[Any, str]] | None = None) -> IdentitySnapshot:
        watched = _watched(torch)
        watched.update(extra or {})
        return cls({name: identity(getattr(owner, attr, None)) for name, (owner, attr) in watched.items()})

    def changed(self, torch: Any, extra: dict[str, tuple[Any, str]] | None = None) -> list[str]:
        now = IdentitySnapshot.take(torch, extra).held
        return sorted(name for name, before in self.held.items() if not before.same_as(now.get(name)))


def check_identities(state: Any, when: str) -> None:
    """Raise if anything the harness relies on was replaced since the snapshot."""
    if state.integrity is None:
        return
    changed = state.integrity.changed(state.torch)
    if changed:
        raise HarnessTampering(
            f"harness functions replaced {when}: {', '.join(changed)}. Kernels must not patch timers, "
            "torch's functions or kerneltui's own code."
        )


class HarnessTampering(RuntimeError):
    harness_message = True
