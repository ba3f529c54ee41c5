"""How a worker is started: what the parent runs and sets, and what the child imports while it warms.

The parent (``parent.runner``, ``core.remote.ssh``, a zygote) starts ``python -m`` :data:`SERVE_MODULE`
with ``--backend`` and ``--role``; the child (``child.serve``, ``child.state``) reads the same names.
Kept here, apart from both sides, so that the parent can start a worker without importing the child.
"""

from __future__ import annotations

from dataclasses import dataclass

from kerneltui.core.backends import NAMES, spec_of

# The worker process's entry point (child/serve.py).
SERVE_MODULE = "kerneltui.core.worker.child.serve"
# Set by the TUI: its workers yield the CPU to the app, whose frames must not wait for a worker
# importing torch or Triton compiling (a 2-core machine has no core to spare for either).
NICE_ENV = "KERNELTUI_WORKER_NICE"


@dataclass(frozen=True)
class WarmImports:
    """What ``WorkerState.warm_up`` imports before it starts CUDA (if a GPU is there), for a zygote to import once
    (``core.sandbox.zygote``): the variables set before the imports, then the modules in order."""

    defaults: tuple[str, ...]  # VAR=VALUE, set unless the environment has VAR
    modules: tuple[str, ...]


# The kerneltui modules every worker imports before and just after it is ready.
_WORKER_MODULES = ("kerneltui.core.worker.contract.protocol", "kerneltui.core.worker.child.device_info",
                   "kerneltui.core.worker.child.ops")
def warm_imports(backend: str, gpu: bool = False) -> WarmImports:
    """Keep in step with ``WorkerState.warm_up`` (``child/state.py``): the same variables first, the
    same imports. The same for both roles, so that one zygote serves both workers of a run: the judge
    gets the candidate's imports too (torch._dynamo, the DSL), which it does not use; importing them
    was a judge's cost, never a rule (it imports no candidate code either way)."""
    # The backend's own (BackendSpec.warm_imports): those whose import reads nothing of the worker's (CuTe
    # DSL and TileLang read the task copy's folder and their targets from the environment when first
    # imported: they import in the worker). Importing the registry imports every backend's module.
    own = spec_of(backend).warm_imports if backend in NAMES else ()
    modules = ("torch", "torch._dynamo", "kerneltui.core.backends", *own)
    # Triton runs its interpreter only where there is no GPU (warm_up sets the same).
    defaults = () if gpu else ("TRITON_INTERPRET=1",)
    return WarmImports(defaults=defaults, modules=modules + _WORKER_MODULES)
