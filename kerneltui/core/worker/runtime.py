"""How each task format generates inputs and calls the reference and the candidate (worker side).

All three formats reduce to the same operations: make inputs for a case and seed, clone them,
call the reference, call the candidate, optionally run the reference in float64 and a task's own
``check_implementation``. The correctness and benchmark code only talks to this interface.
"""

from __future__ import annotations

import copy
import inspect
import random
from collections.abc import Iterator
from typing import Any

from kerneltui.core.worker.state import WorkerState


class TaskRuntime:
    """Native tasks: ``generate_input(seed, **params)``, ``ref_kernel(*inputs)``, ``custom_kernel(*inputs)``."""

    candidate_name = "custom_kernel"

    def __init__(self, state: WorkerState) -> None:
        self.state = state
        self.task = state.task
        self.torch = state.torch
        self.reference: Any = None
        self.candidate_module: Any = None
        self.candidate: Any = None

    # -- loading ----------------------------------------------------------------------------

    def load_reference(self) -> None:
        name = self.task["reference_file"].rsplit("/", 1)[-1].removesuffix(".py")
        self.reference = self.state.import_file(self.task["reference_file"], name)
        self._gen_takes_device = _accepts(getattr(self.reference, "generate_input", None), "device")

    def load_candidate(self) -> None:
        name = self.task["entry_file"].rsplit("/", 1)[-1].removesuffix(".py")
        if name == self.task["reference_file"].rsplit("/", 1)[-1].removesuffix(".py"):
            name = f"{name}_candidate"
        self.candidate_module = self.state.import_file(self.task["entry_file"], name)
        fn = getattr(self.candidate_module, self.candidate_name, None)
        if fn is None or not callable(fn):
            raise CandidateError(
                f"{self.task['entry_file']} defines no {self.candidate_name}(): the harness calls "
                f"{self.candidate_name}(*inputs) and compares its return value with ref_kernel(*inputs)"
            )
        self.candidate = fn

    def watched_functions(self) -> dict[str, tuple[Any, str]]:
        """Reference functions the candidate must not replace."""
        return {f"reference.{n}": (self.reference, n) for n in ("ref_kernel", "generate_input", "check_implementation")
                if self.reference is not None and hasattr(self.reference, n)}

    # -- inputs -------------------------------------------------------------------------------

    def make_inputs(self, params: dict[str, Any], seed: int) -> Any:
        kwargs = dict(params)
        if self._gen_takes_device:
            kwargs["device"] = self.state.device
        data = self.reference.generate_input(seed=seed, **kwargs)
        if not isinstance(data, tuple):
            data = tuple(data) if isinstance(data, list) else (data,)
        return self.to_device(data)

    def to_device(self, data: Any) -> Any:
        torch = self.torch
        if isinstance(data, torch.Tensor):
            return data if data.device.type == self.state.device else data.to(self.state.device)
        if isinstance(data, tuple):
            return tuple(self.to_device(x) for x in data)
        if isinstance(data, list):
            return [self.to_device(x) for x in data]
        if isinstance(data, dict):
            return {k: self.to_device(v) for k, v in data.items()}
        return data

    def clone(self, data: Any) -> Any:
        torch = self.torch
        if isinstance(data, torch.Tensor):
            return data.clone()
        if isinstance(data, tuple):
            return tuple(self.clone(x) for x in data)
        if isinstance(data, list):
            return [self.clone(x) for x in data]
        if isinstance(data, dict):
            return {k: self.clone(v) for k, v in data.items()}
        return copy.deepcopy(data)

    def tensors(self, data: Any, prefix: str = "input") -> Iterator[tuple[str, Any]]:
        """(name, tensor) for every tensor inside ``data``, depth first; top-level inputs are named
        after ref_kernel's parameters when it has them."""
        torch = self.torch
        if prefix == "input" and isinstance(data, tuple) and not isinstance(self, GpuModeRuntime):
            names = self.input_names() or []
            if len(names) == len(data) and not any(n.startswith("*") for n in names):
                for name, x in zip(names, data, strict=True):
                    yield from self.tensors(x, name)
                return
        if isinstance(data, torch.Tensor):
            yield prefix, data
        elif isinstance(data, (tuple, list)):
            for i, x in enumerate(data):
                yield from self.tensors(x, f"{prefix}[{i}]")
        elif isinstance(data, dict):
            for k, v in data.items():
                yield from self.tensors(v, f"{prefix}[{k!r}]")

    def input_names(self) -> list[str] | None:
        try:
            params = inspect.signature(self.reference.ref_kernel).parameters.values()
        except (TypeError, ValueError, AttributeError):
            return None
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            return None
        return [p.name for p in params]

    # -- calls --------------------------------------------------------------------------------

    def call_reference(self, data: Any) -> Any:
        return self.reference.ref_kernel(*data)

    def call_candidate(self, data: Any) -> Any:
        return self.candidate(*data)

    def reference_fp64(self, data: Any) -> Any:
        return self.reference.ref_kernel(*self.upcast(data))

    def upcast(self, data: Any) -> Any:
        torch = self.torch
        if isinstance(data, torch.Tensor):
            return data.to(torch.float64) if data.is_floating_point() else data.clone()
        if isinstance(data, tuple):
            return tuple(self.upcast(x) for x in data)
        if isinstance(data, list):
            return [self.upcast(x) for x in data]
        if isinstance(data, dict):
            return {k: self.upcast(v) for k, v in data.items()}
        return data

    def check_implementation(self, data: Any, output: Any) -> tuple[bool, str] | None:
        fn = getattr(self.reference, "check_implementation", None)
        if fn is None:
            return None
        return normalise_check_result(fn(data, output))

    def seed_for(self, case_index: int, case_seed: int | None, k: int) -> int:
        """Deterministic per-case seeds: the case's own seed first, then derived ones."""
        base = case_seed if case_seed is not None else 1000 + 17 * case_index
        if k == 0:
            return base
        return random.Random(base * 7919 + k).randrange(1, 2**31 - 1)


class GpuModeRuntime(TaskRuntime):
    """GPU MODE: ``generate_input(**test)`` returns one ``data`` object passed whole."""

    def make_inputs(self, params: dict[str, Any], seed: int) -> Any:
        return self.to_device(self.reference.generate_input(**params, seed=seed))

    def call_reference(self, data: Any) -> Any:
        return self.reference.ref_kernel(data)

    def call_candidate(self, data: Any) -> Any:
        return self.candidate(data)

    def reference_fp64(self, data: Any) -> Any:
        return self.reference.ref_kernel(self.upcast(data))


class KernelBenchRuntime(TaskRuntime):
    """KernelBench: ``Model(*get_init_inputs())(*get_inputs())`` against ``ModelNew``."""

    candidate_name = "ModelNew"
    INIT_SEED = 42

    def load_reference(self) -> None:
        super().load_reference()
        torch = self.torch
        torch.manual_seed(self.INIT_SEED)
        self.init_inputs = self.to_device(list(self.reference.get_init_inputs()))
        torch.manual_seed(self.INIT_SEED)
        self.ref_model = self.reference.Model(*self.init_inputs).to(self.state.device).eval()
        self._gen_takes_device = False

    def load_candidate(self) -> None:
        super().load_candidate()
        torch = self.torch
        torch.manual_seed(self.INIT_SEED)
        model = self.candidate(*self.init_inputs)
        if hasattr(model, "to"):
            model = model.to(self.state.device)
        if hasattr(model, "eval"):
            model = model.eval()
        # Same weights as the reference wherever names and shapes agree (KernelBench's own rule).
        if hasattr(model, "state_dict"):
            ref_state = self.ref_model.state_dict()
            mine = model.state_dict()
            shared = {k: v for k, v in ref_state.items() if k in mine and mine[k].shape == v.shape}
            if shared:
                model.load_state_dict(shared, strict=False)
        self.model = model

    def watched_functions(self) -> dict[str, tuple[Any, str]]:
        ref = self.reference
        return {"reference.Model.forward": (ref.Model, "forward"), "reference.get_inputs": (ref, "get_inputs")}

    def make_inputs(self, params: dict[str, Any], seed: int) -> Any:
        self.torch.manual_seed(seed)
        return self.to_device(list(self.reference.get_inputs()))

    def call_reference(self, data: Any) -> Any:
        with self.torch.no_grad():
            return self.ref_model(*data)

    def call_candidate(self, data: Any) -> Any:
        with self.torch.no_grad():
            return self.model(*data)

    def reference_fp64(self, data: Any) -> Any:
        golden = copy.deepcopy(self.ref_model).double()
        with self.torch.no_grad():
            return golden(*self.upcast(data))


class CandidateError(Exception):
    """The candidate module is not usable as a candidate (no entry point, wrong type)."""


def runtime_for(state: WorkerState) -> TaskRuntime:
    fmt = state.task.get("format", "native")
    if fmt == "gpumode":
        return GpuModeRuntime(state)
    if fmt == "kernelbench":
        return KernelBenchRuntime(state)
    return TaskRuntime(state)


def normalise_check_result(result: Any) -> tuple[bool, str]:
    """check_implementation may return (ok, msg), a message string ('' = ok), a list of problems or a bool."""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], bool):
        return result[0], str(result[1] or "")
    if isinstance(result, bool):
        return result, ""
    if isinstance(result, str):
        return (result == "", result)
    if isinstance(result, (list, tuple)):
        return (len(result) == 0, "; ".join(str(x) for x in result[:5]))
    if result is None:
        return True, ""
    return bool(result), str(result)


def _accepts(fn: Any, name: str) -> bool:
    if fn is None:
        return False
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params
