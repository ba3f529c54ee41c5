"""How each task format makes inputs, calls the reference and calls the candidate.

The two sides live in different processes and never meet:

* the **reference side** (the judge) imports the task's reference module, makes inputs for a case
  and seed, calls the reference (also in float64), and runs a task's own ``check_implementation``;
* the **candidate side** (the candidate's worker) imports the kernel module and calls it on the
  inputs the judge made, which it receives as shared memory (``core.worker.contract.wire``).

Formats: native (``generate_input(seed, **params)``, ``ref_kernel(*inputs)``, ``custom_kernel(*inputs)``),
GPU MODE (``generate_input(**test)`` returns one ``data`` object passed whole), KernelBench
(``Model(*get_init_inputs())(*get_inputs())`` against ``ModelNew``, the candidate built from the
same init inputs under the same seed and given the reference's weights where names and shapes agree).
"""

from __future__ import annotations

import copy
import inspect
import re
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

from kerneltui.core.case_params import CaseParams
from kerneltui.core.task_remedies import missing_module, other_sizes, smaller_sizes
from kerneltui.core.worker.child import tree
from kerneltui.core.worker.child.errors import TaskProblem
from kerneltui.core.worker.child.state import WorkerState
from kerneltui.core.worker.contract.seeds import seed_for

KERNELBENCH_INIT_SEED = 42


class CandidateError(Exception):
    """The candidate module is not usable as a candidate (no entry point, wrong type)."""


def module_name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1].removesuffix(".py")


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


# What torch says when code asks for CUDA and there is none (CPU-only build, no driver, no device).
NEEDS_GPU = re.compile(r"Torch not compiled with CUDA|without ATen_cuda|no NVIDIA driver|No CUDA GPUs are available|"
                       r"CUDA driver initialization failed|CUDA is not available", re.IGNORECASE)


# c10's prefix on allocator failures ("[enforce fail at alloc_cpu.cpp:127] err == 0. "): no news to a person.
ENFORCE_PREFIX = re.compile(r"^\[enforce fail at [^\]]*\][^.]*\.\s*")


def _first_sentence(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return ENFORCE_PREFIX.sub("", line).split(". ")[0][:160]


def _task_frame(state: WorkerState, exc: BaseException) -> str:
    """``file:line`` of the innermost frame of the task's own files in the traceback."""
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        rel = state.original_path(frame.filename)
        if rel is not None:
            return f"{rel}:{frame.lineno}"
    return ""


# What torch and Python say when memory runs out or a size cannot be allocated at all.
OUT_OF_MEMORY = re.compile(r"out of memory|can't allocate memory|not enough memory|"
                           r"Storage size calculation overflowed|numel: integer multiplication overflow", re.IGNORECASE)


def reference_failure(state: WorkerState, exc: BaseException, doing: str, at_run_sizes: bool = True) -> str:
    """What to tell a person whose task's reference raised ``exc`` while ``doing``: where, what, and
    what to change (a GPU, a missing module, smaller sizes, the reference itself). ``at_run_sizes``:
    the code ran on the run's sizes, so smaller ones may be the way out."""
    where = _task_frame(state, exc)
    what = f"{type(exc).__name__}: {_first_sentence(str(exc))}"
    at = f"{doing}, {where}" if where else doing
    fmt = state.task.get("format", "native")
    if not state.has_gpu and NEEDS_GPU.search(str(exc)):
        return (f"the task's reference needs a CUDA GPU and this machine has none ({at}: {what}). Run it where "
                "there is a GPU (--gpu-host HOST, --ray ADDRESS), or let the reference use the device it is given")
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return f"the task's reference imports {exc.name}, which is not installed here ({at}): {missing_module(fmt)}"
    sizes = smaller_sizes(fmt)
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" or OUT_OF_MEMORY.search(str(exc)):
        return f"the task's reference ran out of memory at this run's sizes ({at}: {what}): {sizes}"
    advice = "the reference, not the kernel, is at fault: fix it"
    if at_run_sizes:
        advice += f"; if it fails only at these sizes, {other_sizes(fmt)}"
    return f"the task's reference failed ({at}: {what}): {advice}"


def _accepts(fn: Any, name: str) -> bool:
    if fn is None:
        return False
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params


# ----------------------------------------------------------------------------------------------
# the reference side (judge)
# ----------------------------------------------------------------------------------------------


def compile_baseline(torch: Any, fn: Any) -> Callable[..., Any]:
    """torch.compile of a reference for the baseline, timed one benchmark case at a time (the judge
    resets torch's compile caches between cases, so each case's shapes compile static).

    Not ``dynamic=False``: that also specialises every Python number, and a reference whose inputs
    hold scalars drawn per seed (``a * x + b``) was compiled again for every call, eight times, then
    ran uncompiled, the compiles inside the timed calls. Left to torch, a changed scalar recompiles
    once, as a symbol, and stays compiled."""
    return cast(Callable[..., Any], torch.compile(fn))


class ReferenceRuntime:
    """Native tasks.

    Reference code is called through ``load``, ``make_inputs`` and ``call``, so that whatever it
    raises (it needs a GPU this machine lacks, a module that is not installed, more memory than the
    run's sizes allow, or it is simply broken) is reported as the task's problem (``TaskProblem``:
    the command exits 2), not the kernel's.
    """

    loading = "importing the reference"
    load_uses_sizes = False  # whether loading already builds things of the run's sizes (KernelBench's Model)

    def __init__(self, state: WorkerState) -> None:
        self.state = state
        self.task = state.task
        self.torch = state.torch
        self.reference: Any = None
        self._gen_takes_device = False

    def load(self) -> None:
        with self.reference_code(self.loading, at_run_sizes=self.load_uses_sizes):
            self._load()

    def make_inputs(self, params: CaseParams, seed: int) -> Any:
        with self.reference_code("generating inputs"):
            return self._make_inputs(params, seed)

    def call(self, data: Any) -> Any:
        with self.reference_code("running the reference"):
            return self._call(data)

    @contextmanager
    def reference_code(self, doing: str, at_run_sizes: bool = True) -> Iterator[None]:
        """Reference code runs inside this: whatever it raises is the task's fault (the judge never
        runs the kernel), so it becomes a ``TaskProblem`` that says where and what to do."""
        try:
            yield
        except Exception as exc:
            raise TaskProblem(reference_failure(self.state, exc, doing, at_run_sizes)) from exc

    def _load(self) -> None:
        self.reference = self.state.import_file(self.task["reference_file"], module_name(self.task["reference_file"]))
        self._gen_takes_device = _accepts(getattr(self.reference, "generate_input", None), "device")

    @property
    def has_check(self) -> bool:
        return callable(getattr(self.reference, "check_implementation", None))

    def candidate_setup(self) -> Any:
        """What the candidate's worker needs before it can build the candidate (KernelBench: the
        init inputs and the reference's weights); None for formats that need nothing."""
        return None

    def _make_inputs(self, params: CaseParams, seed: int) -> Any:
        kwargs = dict(params)
        if self._gen_takes_device:
            kwargs["device"] = self.state.device
        data = self.reference.generate_input(seed=seed, **kwargs)
        if not isinstance(data, tuple):
            data = tuple(data) if isinstance(data, list) else (data,)
        return tree.to_device(data, self.state.device, self.torch)

    def _call(self, data: Any) -> Any:
        return self.reference.ref_kernel(*data)

    def call_fp64(self, data: Any) -> Any:
        return self.reference.ref_kernel(*tree.upcast(data, self.torch))

    def compiled(self) -> Callable[[Any], Any]:
        """torch.compile of the reference, called like the reference (compiles on first call)."""
        fn = compile_baseline(self.torch, self.reference.ref_kernel)
        return lambda data: fn(*data)

    def check_implementation(self, data: Any, output: Any) -> tuple[bool, str]:
        return normalise_check_result(self.reference.check_implementation(data, output))

    def checked(self, inputs: Any, output: Any, ref_out: Any) -> tuple[bool, str]:
        """The task's ``check_implementation`` on a fresh copy of ``inputs``.

        A checker that raises (rather than returning a failure) is asked about the reference's own
        output too: raising there as well, it is the task's fault (``TaskProblem``); otherwise the
        kernel's output is what it could not handle, and the check fails with what it said."""
        try:
            return self.check_implementation(self.clone(inputs), output)
        except Exception as exc:
            where = _task_frame(self.state, exc)
            what = f"{type(exc).__name__}: {_first_sentence(str(exc))}"
            try:
                self.check_implementation(self.clone(inputs), ref_out)
            except Exception:
                raise TaskProblem(
                    f"the task's check_implementation raised ({where + ': ' if where else ''}{what}) on the "
                    "reference's own output as well as the kernel's: the task's checker, not the kernel, is at "
                    "fault; make it return (False, message) for a wrong output and (True, '') for a right one"
                ) from exc
            return False, (f"the task's check_implementation raised on the kernel's output "
                           f"({where + ': ' if where else ''}{what}) but not on the reference's: the output is "
                           "not of the form the task expects")

    def clone(self, data: Any) -> Any:
        return tree.clone(data, self.torch)

    def tensors(self, data: Any, prefix: str = "input") -> Iterator[tuple[str, Any]]:
        """(name, tensor) for every tensor inside ``data``; top-level inputs are named after
        ref_kernel's parameters when it has them."""
        if prefix == "input" and isinstance(data, tuple):
            names = self.input_names() or []
            if len(names) == len(data):
                for name, x in zip(names, data, strict=True):
                    yield from tree.tensors(x, name, self.torch)
                return
        yield from tree.tensors(data, prefix, self.torch)

    def input_names(self) -> list[str] | None:
        try:
            params = list(inspect.signature(self.reference.ref_kernel).parameters.values())
        except (TypeError, ValueError, AttributeError):
            return None
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            return None
        return [p.name for p in params]

    def seed_for(self, case_index: int, case_seed: int | None, k: int) -> int:
        return seed_for(case_index, case_seed, k)


class GpuModeReference(ReferenceRuntime):
    """GPU MODE: ``generate_input(**test)`` returns one ``data`` object passed whole; the task's
    ``check_implementation(data, output)`` judges with the original data (the candidate had a copy)."""

    def _make_inputs(self, params: CaseParams, seed: int) -> Any:
        return tree.to_device(self.reference.generate_input(**params, seed=seed), self.state.device, self.torch)

    def _call(self, data: Any) -> Any:
        return self.reference.ref_kernel(data)

    def call_fp64(self, data: Any) -> Any:
        return self.reference.ref_kernel(tree.upcast(data, self.torch))

    def compiled(self) -> Callable[[Any], Any]:
        return compile_baseline(self.torch, self.reference.ref_kernel)

    def tensors(self, data: Any, prefix: str = "input") -> Iterator[tuple[str, Any]]:
        yield from tree.tensors(data, prefix, self.torch)


class KernelBenchReference(ReferenceRuntime):
    """KernelBench: ``Model(*get_init_inputs())`` called on ``get_inputs()`` under the case's seed."""

    loading = "importing the reference and building its Model"
    load_uses_sizes = True  # the model's weights take their sizes from the module constants

    def _load(self) -> None:
        super()._load()
        self.base_constants: dict[str, Any] = {}
        torch = self.torch
        torch.manual_seed(KERNELBENCH_INIT_SEED)
        self.init_inputs = tree.to_device(list(self.reference.get_init_inputs()), self.state.device, torch)
        torch.manual_seed(KERNELBENCH_INIT_SEED)
        self.model = self.reference.Model(*self.init_inputs).to(self.state.device).eval()

    def candidate_setup(self) -> Any:
        weights = {k: v.detach() for k, v in self.model.state_dict().items()}
        return {"init_inputs": list(self.init_inputs), "weights": weights}

    def _make_inputs(self, params: CaseParams, seed: int) -> Any:
        # A case's parameters are module constants that get_inputs reads (the loader allows no
        # others); the file's own values return for cases that do not set them.
        for name, value in self.base_constants.items():
            setattr(self.reference, name, value)
        for name, value in params.items():
            self.base_constants.setdefault(name, getattr(self.reference, name))
            setattr(self.reference, name, value)
        self.torch.manual_seed(seed)
        return tree.to_device(list(self.reference.get_inputs()), self.state.device, self.torch)

    def _call(self, data: Any) -> Any:
        with self.torch.no_grad():
            return self.model(*data)

    def call_fp64(self, data: Any) -> Any:
        golden = copy.deepcopy(self.model).double()
        with self.torch.no_grad():
            return golden(*tree.upcast(data, self.torch))

    def compiled(self) -> Callable[[Any], Any]:
        torch = self.torch
        model = compile_baseline(torch, self.model)

        def call_model(data: Any) -> Any:
            with torch.no_grad():
                return model(*data)

        return call_model

    def input_names(self) -> list[str] | None:
        return None


def reference_runtime_for(state: WorkerState) -> ReferenceRuntime:
    fmt = state.task.get("format", "native")
    if fmt == "gpumode":
        return GpuModeReference(state)
    if fmt == "kernelbench":
        return KernelBenchReference(state)
    return ReferenceRuntime(state)


# ----------------------------------------------------------------------------------------------
# the candidate side
# ----------------------------------------------------------------------------------------------


class CandidateRuntime:
    """Native tasks: ``custom_kernel(*inputs)``."""

    entry_name = "custom_kernel"

    def __init__(self, state: WorkerState) -> None:
        self.state = state
        self.task = state.task
        self.torch = state.torch
        self.module: Any = None
        self.candidate: Any = None

    def load(self, setup: Any) -> None:
        self.module = self.state.import_file(self.task["entry_file"], module_name(self.task["entry_file"]))
        fn = getattr(self.module, self.entry_name, None)
        if fn is None or not callable(fn):
            raise CandidateError(
                f"{self.task['entry_file']} defines no {self.entry_name}(): the harness calls "
                f"{self.entry_name}(*inputs) and compares its return value with the reference's"
            )
        self.candidate = fn

    def call(self, data: Any) -> Any:
        return self.candidate(*data)


class GpuModeCandidate(CandidateRuntime):
    def call(self, data: Any) -> Any:
        return self.candidate(data)


class KernelBenchCandidate(CandidateRuntime):
    entry_name = "ModelNew"

    def load(self, setup: Any) -> None:
        super().load(setup)
        torch = self.torch
        setup = setup or {}
        init_inputs = list(setup.get("init_inputs") or [])
        torch.manual_seed(KERNELBENCH_INIT_SEED)
        model = self.candidate(*init_inputs)
        if hasattr(model, "to"):
            model = model.to(self.state.device)
        if hasattr(model, "eval"):
            model = model.eval()
        # The reference's weights wherever names and shapes agree.
        weights = setup.get("weights") or {}
        if hasattr(model, "state_dict") and weights:
            mine = model.state_dict()
            shared = {k: v for k, v in weights.items() if k in mine and mine[k].shape == v.shape}
            if shared:
                model.load_state_dict(shared, strict=False)
        self.model = model

    def call(self, data: Any) -> Any:
        with self.torch.no_grad():
            return self.model(*data)


def candidate_runtime_for(state: WorkerState) -> CandidateRuntime:
    fmt = state.task.get("format", "native")
    if fmt == "gpumode":
        return GpuModeCandidate(state)
    if fmt == "kernelbench":
        return KernelBenchCandidate(state)
    return CandidateRuntime(state)
