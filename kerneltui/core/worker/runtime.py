"""How each task format generates inputs and calls the reference and the candidate (worker side).

All three formats reduce to the same operations: make inputs for a case and seed, clone them,
call the reference, call the candidate, optionally run the reference in float64 and a task's own
``check_implementation``. The correctness and benchmark code only talks to this interface.
"""

from __future__ import annotations

import copy
import inspect
import random
import re
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kerneltui.core.worker.errors import TaskProblem
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

    # Reference code is called through these three, so that a reference that needs a GPU on a
    # machine without one is reported as the task's problem (TaskProblem), not the kernel's.

    def load_reference(self) -> None:
        with self.reference_code("importing the reference"):
            self._load_reference()

    def make_inputs(self, params: dict[str, Any], seed: int) -> Any:
        with self.reference_code("generating inputs"):
            return self._make_inputs(params, seed)

    def call_reference(self, data: Any) -> Any:
        with self.reference_code("running the reference"):
            return self._call_reference(data)

    @contextmanager
    def reference_code(self, doing: str) -> Iterator[None]:
        try:
            yield
        except Exception as exc:
            if self.state.has_gpu or not NEEDS_GPU.search(str(exc)):
                raise
            where = _task_frame(self.state, exc)
            raise TaskProblem(
                f"the task's reference needs a CUDA GPU and this machine has none ({doing}"
                f"{f', {where}' if where else ''}: {type(exc).__name__}: {_first_sentence(str(exc))}). "
                "Run it where there is a GPU (--gpu-host HOST, --ray ADDRESS), or let the reference use "
                "the device it is given"
            ) from exc

    def _load_reference(self) -> None:
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

    def _make_inputs(self, params: dict[str, Any], seed: int) -> Any:
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

    def _call_reference(self, data: Any) -> Any:
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

    def _make_inputs(self, params: dict[str, Any], seed: int) -> Any:
        return self.to_device(self.reference.generate_input(**params, seed=seed))

    def _call_reference(self, data: Any) -> Any:
        return self.reference.ref_kernel(data)

    def call_candidate(self, data: Any) -> Any:
        return self.candidate(data)

    def reference_fp64(self, data: Any) -> Any:
        return self.reference.ref_kernel(self.upcast(data))


class KernelBenchRuntime(TaskRuntime):
    """KernelBench: ``Model(*get_init_inputs())(*get_inputs())`` against ``ModelNew``."""

    candidate_name = "ModelNew"
    INIT_SEED = 42

    def _load_reference(self) -> None:
        super()._load_reference()
        self.base_constants: dict[str, Any] = {}
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

    def _make_inputs(self, params: dict[str, Any], seed: int) -> Any:
        # A case's parameters are module constants that get_inputs reads (the loader allows no
        # others); the file's own values return for cases that do not set them.
        for name, value in self.base_constants.items():
            setattr(self.reference, name, value)
        for name, value in params.items():
            self.base_constants.setdefault(name, getattr(self.reference, name))
            setattr(self.reference, name, value)
        self.torch.manual_seed(seed)
        return self.to_device(list(self.reference.get_inputs()))

    def _call_reference(self, data: Any) -> Any:
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


# What torch says when code asks for CUDA and there is none (CPU-only build, no driver, no device).
NEEDS_GPU = re.compile(r"Torch not compiled with CUDA|without ATen_cuda|no NVIDIA driver|No CUDA GPUs are available|"
                       r"CUDA driver initialization failed|CUDA is not available", re.IGNORECASE)


def _first_sentence(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line.split(". ")[0][:160]


def _task_frame(state: WorkerState, exc: BaseException) -> str:
    """``file:line`` of the innermost frame of the task's own files in the traceback."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        rel = state.original_path(frame.filename)
        if rel is not None:
            return f"{rel}:{frame.lineno}"
    return ""


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
