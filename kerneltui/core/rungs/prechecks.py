"""The ``prechecks`` rung: static checks of the kernel source, before any of it runs.

Two levels. *Strict* findings fail the rung (and stop the run): they are the reward hacks that
no correct kernel needs (calling the reference, patching timers, side streams, threads, tensor
subclasses, no kernel of the task's backend at all). *Warnings* point at things that are often
fine but deserve a look (a torch compute op in the host code, a precision downcast, a cache
keyed on pointers). A task can waive a strict rule with ``allow = ["streams", …]`` in task.toml, and a
call of a named torch operator with ``allow_ops = ["conv2d", …]``.

Checks run on the syntax tree in the parent process: nothing is imported or executed here.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kerneltui.core.backends import spec_of
from kerneltui.core.rungs.context import RunContext
from kerneltui.core.rungs.result import RungResult, SourceLocation, fail, ok, warn
from kerneltui.core.rungs.rung_metrics import PrechecksMetrics
from kerneltui.core.task import Task, allow_ops_advice

# torch functions that only allocate, view or describe: fine in host code around a kernel.
TORCH_ALLOWED = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "arange", "tensor", "as_tensor", "as_strided", "from_numpy", "device", "dtype", "Size", "finfo", "iinfo",
    "is_tensor", "is_floating_point", "numel", "manual_seed", "Generator", "get_default_dtype", "broadcast_shapes",
    "promote_types", "result_type", "can_cast", "no_grad", "inference_mode", "set_grad_enabled", "library",
    "compile", "jit", "cuda", "backends", "utils", "nn", "ops", "_C", "testing", "float8_e4m3fn", "float8_e5m2",
    "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
    "complex64", "cdiv", "empty_strided_cuda",
    # random initialisation (e.g. nn.Parameter(torch.randn(n)) in a KernelBench ModelNew)
    "randn", "rand", "randint", "randperm", "randn_like", "rand_like", "randint_like", "normal",
    # views and layout changes compute nothing (their method forms, x.reshape(...), are not flagged
    # either); the operator record passes a moved tensor's writer on
    "reshape", "flatten", "ravel", "broadcast_to", "broadcast_tensors", "transpose", "swapaxes", "swapdims", "t",
    "permute", "movedim", "moveaxis", "squeeze", "unsqueeze", "narrow", "select", "chunk", "split", "tensor_split",
    "unbind", "atleast_1d", "atleast_2d", "atleast_3d", "view_as_real", "view_as_complex", "cat", "concat",
    "concatenate", "stack", "hstack", "vstack", "unflatten", "expand_copy",
    # questions about the tensor or torch's state
    "is_grad_enabled", "is_inference_mode_enabled", "is_complex", "get_default_device", "get_device", "compiler",
    "accelerator", "is_nonzero",
}
TORCH_SUBMODULE_ALLOWED = {"cuda": {"current_device", "device", "get_device_properties", "current_stream",
                                    "is_available", "device_count", "get_device_capability", "set_device",
                                    "synchronize"}}
COMPUTE_METHODS = {
    "matmul", "mm", "bmm", "softmax", "log_softmax", "sum", "mean", "exp", "log", "sqrt", "rsqrt", "max",
    "min", "amax", "amin", "cumsum", "var", "std", "norm", "layer_norm", "relu", "gelu", "sigmoid", "tanh",
    "addmm", "baddbmm", "einsum", "conv2d", "sort", "topk", "argmax", "argmin", "prod", "pow", "div", "mul",
    "add", "sub",
}
DOWNCAST_METHODS = {"half", "bfloat16"}
DOWNCAST_DTYPES = {"float16", "half", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"}
TIMER_TARGETS = re.compile(
    r"^(time\.(perf_counter|perf_counter_ns|time|monotonic)|torch\.cuda\.(Event|synchronize|Stream|current_stream)|"
    r"torch\.cuda\.Event\.\w+|torch\.(allclose|isclose|equal|testing\.\w+)|triton\.testing\.\w+|"
    r"torch\.Tensor\.\w+)$"
)
# Calls no kernel needs, each the tool of a known hack: reading the harness's frames (the hidden
# seed, the warm-up counter), writing to the worker's descriptors (forged results), pinning data in L2.
INTROSPECTION = ("reads the harness's state through the interpreter ({name}): kernels must not look at who "
                 "calls them (hidden seeds, warm-up counters, timers)")
DESCRIPTORS = ("writes to or rewires a file descriptor ({name}): the harness's results travel over the worker's "
               "descriptors, and kernels must not touch them")
PERSISTING = ("uses the persisting-L2 controls ({name}): pinning data in L2 across calls makes timed calls cheaper "
              "than a real cold call")
STRICT_CALLS: dict[str, tuple[str, str]] = {
    **{n: ("introspection", INTROSPECTION) for n in (
        "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile", "inspect.currentframe",
        "inspect.stack", "inspect.getouterframes", "inspect.trace", "gc.get_objects", "gc.get_referrers",
        "gc.get_referents", "threading.settrace")},
    **{n: ("descriptors", DESCRIPTORS) for n in (
        "os.write", "os.writev", "os.pwrite", "os.dup", "os.dup2", "os.fdopen", "os.close", "os.closerange",
        "os.set_inheritable", "os.sendfile", "os.truncate", "os.ftruncate")},
}
# What switches off the record of the operators that produce the output (core.worker.child.evidence).
RECORD_OFF = re.compile(r"_DisableTorchDispatch|_disable_current_modes|_pop_mode|_pop_torch_dispatch_stack|"
                        r"_unset_dispatch_mode|_set_dispatch_mode|_python_dispatch|TorchDispatchMode|"
                        r"_DisablePythonDispatcher|_ExcludeDispatchKeyGuard|_len_torch_dispatch_stack|"
                        r"_dispatch_library|_EnablePythonDispatcher|enable_python_dispatcher|py_impl\b")
RECORD = ("reaches for torch's dispatch machinery ({name}): kerneltui records which operators produce the output, "
          "and a kernel must not switch that record off")
# One of torch's own operators as registration calls name it (``aten::add``, ``aten::add.Tensor``,
# ``prims.mul``): a message that mentions one (``print("aten::add is slow")``) is not a registration.
_OPERATOR_NAME = re.compile(r"(aten|prims)(::|\.)[A-Za-z_]\w*(\.\w+)?\Z")
PERSISTING_NAMES = re.compile(r"PersistingL2|accessPolicyWindow|AccessPolicyWindow|StreamSetAttribute|"
                              r"cudaLimitPersisting|hitRatio|hitProp")
HARNESS_PACKAGE = "kerneltui"
HARNESS_LIBRARIES = ("kerneltui.cuda",)  # meant for kernels: the CUDA launcher


def _is_harness(module: str) -> bool:
    return module.split(".")[0] == HARNESS_PACKAGE and not module.startswith(HARNESS_LIBRARIES)


@dataclass(frozen=True)
class Finding:
    level: str  # "strict" | "warning"
    rule: str  # the allow-able rule name, or "" when it cannot be waived
    line: int
    message: str
    op: str = ""  # a torch compute op the finding is about (``allow_ops`` can waive it by this name)


class _Scanner(ast.NodeVisitor):
    def __init__(self, reference_module: str, kernel_is_python: bool) -> None:
        self.findings: list[Finding] = []
        self.reference_module = reference_module
        self.torch_names: set[str] = set()  # local names bound to the torch module
        self.functional_names: set[str] = set()  # names bound to torch.nn.functional
        self.kernel_functions: set[str] = set()
        self.in_kernel = 0

    def add(self, level: str, rule: str, node: ast.AST, message: str, op: str = "") -> None:
        self.findings.append(Finding(level, rule, getattr(node, "lineno", 0), message, op))

    # imports -------------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_import(node, alias.name, alias.asname)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if mod == "torch.nn" and any(a.name == "functional" for a in node.names):
            for a in node.names:
                if a.name == "functional":
                    self.functional_names.add(a.asname or a.name)
        if mod == "torch.nn.functional":
            self.add("warning", "torch_ops", node, "imports torch.nn.functional ops: compute should happen in your kernel")
        self._check_import(node, mod, None, [a.name for a in node.names])
        self.generic_visit(node)

    def _check_import(self, node: ast.AST, name: str, asname: str | None, names: list[str] | None = None) -> None:
        root = name.split(".")[0]
        if name == "torch":
            self.torch_names.add(asname or "torch")
        if name == "torch.nn.functional" and asname:
            self.functional_names.add(asname)
        if root == self.reference_module or (names and "ref_kernel" in names):
            self.add("strict", "reference_import", node,
                     f"imports the reference ({name}): the kernel must compute the answer itself, not call ref_kernel")
        if _is_harness(name) and not (name == HARNESS_PACKAGE and names and set(names) <= {"cuda"}):
            self.add("strict", "", node,
                     f"imports {name}: the kernel must not reach into the harness that judges it")
        if root in ("threading", "concurrent", "multiprocessing", "_thread"):
            self.add("strict", "threads", node,
                     f"imports {root}: work on another thread can run outside the timed region")
        if root in ("ctypes", "gc", "inspect") and name != "inspect":
            self.add("warning", "", node, f"imports {root}: unusual in a kernel; make sure it is not touching the harness")

    # definitions -----------------------------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        is_kernel = any(_decorator_name(d) in {"jit", "autotune", "heuristics", "kernel", "prim_func"} for d in node.decorator_list)
        if is_kernel:
            self.kernel_functions.add(node.name)
            self.in_kernel += 1
        for d in node.decorator_list:
            dn = _decorator_name(d)
            if dn in {"lru_cache", "cache"}:
                self.add("warning", "", node,
                         f"{node.name} is memoised with @{dn}: results cached across calls are a known reward hack")
        self.generic_visit(node)
        if is_kernel:
            self.in_kernel -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]  # ast's visitor takes AsyncFunctionDef by the same method; its stub types the two apart

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if _dotted(base) in {"torch.Tensor", "Tensor"}:
                self.add("strict", "", node, f"class {node.name} subclasses torch.Tensor: outputs must be plain tensors")
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name in {"__torch_function__", "__torch_dispatch__"}:
                self.add("strict", "", item, f"{item.name} overrides torch's dispatch: not allowed in a kernel")
        self.generic_visit(node)

    # assignments -----------------------------------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_target(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_target(node.target, node)
        self.generic_visit(node)

    def _check_target(self, target: ast.AST, node: ast.AST) -> None:
        name = _dotted(target)
        if name and TIMER_TARGETS.match(_normalise_torch(name, self.torch_names)):
            self.add("strict", "", node, f"reassigns {name}: patching timers or comparison functions is not allowed")
        if name and name.startswith(("torch.backends.", "torch.cuda.matmul.")) and "allow_tf32" in name:
            self.add("warning", "downcast", node, f"sets {name}: tf32 lowers float32 precision")

    # calls -----------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        name = _dotted(node.func)
        norm = _normalise_torch(name, self.torch_names) if name else ""
        if name in {"setattr", "builtins.setattr"} and node.args:
            owner = _dotted(node.args[0])
            if owner and _normalise_torch(owner, self.torch_names).split(".")[0] in {"torch", "time", "triton"}:
                self.add("strict", "", node, f"setattr on {owner}: patching library functions is not allowed")
        if norm in {"torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream", "torch.Stream"} or name.endswith(
            ("cuda.Stream", "cudaStreamCreate", "cuStreamCreate")
        ):
            self.add("strict", "streams", node,
                     f"creates or switches a CUDA stream ({name}): work on a side stream can escape the timed region")
        if norm.startswith("threading.") or name in {"Thread", "ThreadPoolExecutor", "ProcessPoolExecutor"}:
            self.add("strict", "threads", node, f"{name}: kernels must not start threads")
        if name in STRICT_CALLS:
            rule, message = STRICT_CALLS[name]
            self.add("strict", rule, node, message.format(name=name))
        if name in {"__import__", "importlib.import_module"} and node.args and isinstance(node.args[0], ast.Constant) \
                and _is_harness(str(node.args[0].value)):
            self.add("strict", "", node, f"imports {node.args[0].value!r}: the kernel must not reach into the harness")
        if self._replaces_a_torch_operator(node, name):
            self.add("strict", "", node, f"{name} registers a kernel for one of torch's own operators: the operator "
                                         "record cannot see what runs inside it (define an operator of your own "
                                         "namespace instead)")
        if name in {"ref_kernel", "reference.ref_kernel"}:
            self.add("strict", "reference_import", node, "calls ref_kernel: the kernel must compute the answer itself")
        if norm == "torch.set_float32_matmul_precision":
            self.add("warning", "downcast", node, "changes float32 matmul precision (tf32/bf16 internally)")
        if self.in_kernel == 0:
            # Inside a kernel these are DSL ops (tl.sum, x.to(tl.float16) for the output): fine.
            self._check_torch_compute(node, name, norm)
            self._check_downcast(node, name)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "data_ptr":
            self.add("warning", "", node,
                     "uses data_ptr(): fine for launching, but results keyed on pointers are a known caching hack")
        self.generic_visit(node)

    @staticmethod
    def _replaces_a_torch_operator(node: ast.Call, name: str) -> bool:
        """torch.library.Library("aten", "IMPL"), torch.library.impl("aten::add", …) and the like."""
        first = node.args[0] if node.args else None
        text = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
        if text is None:
            return False
        if name.split(".")[-1] == "Library":
            kind = node.args[1] if len(node.args) > 1 else None
            return text in {"aten", "prims"} and not (isinstance(kind, ast.Constant) and kind.value == "DEF")
        return bool(_OPERATOR_NAME.match(text))

    def _check_torch_compute(self, node: ast.Call, name: str, norm: str) -> None:
        op = name.rsplit(".", 1)[-1]
        if norm.startswith("torch.nn.functional.") or any(name.startswith(f + ".") for f in self.functional_names):
            self.add("strict", "torch_ops", node, f"calls {name}: a torch library op computes the answer instead of your kernel",
                     op)
            return
        if norm.startswith("torch."):
            parts = norm.split(".")
            head = parts[1] if len(parts) > 1 else ""
            if head in TORCH_SUBMODULE_ALLOWED:
                if len(parts) > 2 and parts[2] not in TORCH_SUBMODULE_ALLOWED[head] and parts[2][0].islower():
                    self.add("warning", "", node, f"calls {name}")
                return
            if head and head not in TORCH_ALLOWED and not head[0].isupper():
                self.add("strict", "torch_ops", node,
                         f"calls {name}: a torch library op computes the answer instead of your kernel", op)
            return
        if isinstance(node.func, ast.Attribute) and node.func.attr in COMPUTE_METHODS and norm.split(".")[0] not in {"tl", "triton", "cute", "math", "np", "numpy", "self"}:
            self.add("warning", "torch_ops", node,
                     f"calls .{node.func.attr}() outside a kernel: if this is a tensor op, the library computes it, not your kernel")

    def _check_downcast(self, node: ast.Call, name: str) -> None:
        if isinstance(node.func, ast.Attribute) and node.func.attr in DOWNCAST_METHODS and not node.args:
            self.add("warning", "downcast", node, f".{node.func.attr}() lowers precision; the float64-golden rule will judge it")
        if isinstance(node.func, ast.Attribute) and node.func.attr in {"to", "type"}:
            for arg in [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]:
                d = _dotted(arg)
                if d and d.split(".")[-1] in DOWNCAST_DTYPES:
                    self.add("warning", "downcast", node, f"converts to {d}: lower precision than the inputs?")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and PERSISTING_NAMES.search(node.value):
            self.add("strict", "persisting_l2", node, PERSISTING.format(name=str(node.value)[:60]))
        if isinstance(node.value, str) and RECORD_OFF.search(node.value):
            self.add("strict", "", node, RECORD.format(name=str(node.value)[:60]))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if PERSISTING_NAMES.search(node.attr):
            self.add("strict", "persisting_l2", node, PERSISTING.format(name=node.attr))
        if RECORD_OFF.search(node.attr):
            self.add("strict", "", node, RECORD.format(name=node.attr))
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult) and self.in_kernel == 0:
            self.add("warning", "torch_ops", node, "uses the @ operator outside a kernel: a torch matmul computes it, not your kernel")
        self.generic_visit(node)


# The ATen operators torch's functional forms become (what the operator record names at run time and
# its messages suggest listing): allowing either name waives the call here. The record checks the
# operators that really ran; this is the static first line only.
ATEN_OPERATORS = {
    **{f"conv{d}": ("convolution",) for d in ("1d", "2d", "3d", "_transpose1d", "_transpose2d", "_transpose3d")},
    "linear": ("addmm", "mm", "bmm"), "matmul": ("mm", "bmm", "addmm"), "bilinear": ("_trilinear",),
    "softmax": ("_softmax",), "log_softmax": ("_log_softmax",), "layer_norm": ("native_layer_norm",),
    "group_norm": ("native_group_norm",), "batch_norm": ("native_batch_norm", "_native_batch_norm_legit_no_training"),
    "instance_norm": ("native_batch_norm",), "scaled_dot_product_attention": (
        "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_attention_math"),
    "max_pool1d": ("max_pool2d_with_indices",), "max_pool2d": ("max_pool2d_with_indices",),
    "max_pool3d": ("max_pool3d_with_indices",), "embedding": ("embedding",),
}


def allowing_name(op: str, allow_ops: frozenset[str]) -> str:
    """The name in ``allow_ops`` that lets a call of torch's ``op`` stay in torch (its own or an ATen
    operator it becomes), or ""."""
    if not op:
        return ""
    return next((name for name in (op, *ATEN_OPERATORS.get(op, ())) if name in allow_ops), "")


def _waiver(f: Finding, task: Task) -> str:
    if f.rule and f.rule in task.allow:
        return f'allow = ["{f.rule}"]'
    return f'allow_ops = ["{allowing_name(f.op, task.allow_ops)}"]'


def _decorator_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    name = _dotted(node)
    return name.split(".")[-1] if name else ""


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _normalise_torch(name: str, torch_names: set[str]) -> str:
    head, _, rest = name.partition(".")
    if head in torch_names and head != "torch":
        return "torch" + ("." + rest if rest else "")
    return name


def scan_python(source: str, backend: str, reference_module: str = "reference") -> tuple[list[Finding], SyntaxError | None]:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [], exc
    scanner = _Scanner(reference_module, True)
    scanner.visit(tree)
    findings = scanner.findings
    if spec_of(backend).torch_is_the_kernel:
        # A torch candidate is allowed to call torch; it is compared with the reference all the same.
        findings = [f for f in findings if f.rule not in {"torch_ops", "downcast"}]
    return findings, None


def scan_source(source: str, filename: str, backend: str, reference_module: str) -> tuple[list[Finding], SyntaxError | None]:
    """All findings for one file of the candidate (Python or CUDA C++)."""
    if filename.endswith((".cu", ".cuh", ".cpp", ".h", ".hpp")):
        return scan_cuda(source), None
    return scan_python(source, backend, reference_module)


def scan_cuda(source: str) -> list[Finding]:
    findings: list[Finding] = []
    for i, line in enumerate(source.splitlines(), 1):
        code = line.split("//")[0]
        if re.search(r"\bcudaStreamCreate|\bcuStreamCreate", code):
            findings.append(Finding("strict", "streams", i, "creates a CUDA stream: work on a side stream can escape the timed region"))
        if PERSISTING_NAMES.search(code):
            findings.append(Finding("strict", "persisting_l2", i, PERSISTING.format(name=code.strip()[:60])))
        if re.search(r"\bcublas|\bcudnn|\bcutlass::gemm::device", code):
            findings.append(Finding("warning", "torch_ops", i, "calls a vendor library: make sure the kernel does the work"))
    return findings


def has_backend_kernel(source: str, backend: str) -> bool:
    marker = spec_of(backend).marker
    return True if marker is None else bool(marker.pattern.search(source))


async def run(ctx: RunContext) -> RungResult:
    task = ctx.task
    ref_module = task.reference_file.rsplit("/", 1)[-1].removesuffix(".py")
    findings: list[Finding] = []
    files_checked = []
    candidate_files = [task.kernel_file]
    if task.entry_file != task.kernel_file:
        candidate_files.append(task.entry_file)
    kernel_text = ctx.source
    for name in candidate_files:
        text = kernel_text if name == task.kernel_file else ctx.files.get(name, "")
        found, syntax = scan_source(text, name, task.backend, ref_module)
        files_checked.append(name)
        if syntax is not None:
            return fail(
                "prechecks", f"{name}:{syntax.lineno}: syntax error: {syntax.msg}",
                location=SourceLocation(name, syntax.lineno or 1, (syntax.offset or 1)),
                metrics={"strict": 1, "warnings": 0},
            )
        findings.extend(Finding(f.level, f.rule, f.line, f"{name}:{f.line}: {f.message}", f.op) for f in found)
    marker = task.backend_spec.marker
    if marker is not None and not marker.pattern.search(kernel_text):
        findings.append(Finding("strict", "", 1, f"{task.kernel_file}: no {marker.what} defined: the task's backend is {task.backend}"))

    waived = [f for f in findings if f.level == "strict" and (f.rule and f.rule in task.allow or
                                                               allowing_name(f.op, task.allow_ops))]
    strict = [f for f in findings if f.level == "strict" and f not in waived]
    warnings = [f for f in findings if f.level == "warning"]
    details = "\n".join(
        [f"STRICT  {f.message}" for f in strict]
        + [f"warn    {f.message}" for f in warnings]
        + [f"waived  {f.message} ({_waiver(f, task)})" for f in waived]
    )
    metrics: PrechecksMetrics = {"strict": len(strict), "warnings": len(warnings), "waived": len(waived),
                                 "files": files_checked}
    first = strict[0] if strict else (warnings[0] if warnings else None)
    loc = SourceLocation(task.kernel_file, first.line) if first and first.line else None
    if strict:
        more = f" (+{len(strict) - 1} more)" if len(strict) > 1 else ""
        hint = ""
        if strict[0].op:
            hint = f" (if the task lets {strict[0].op} stay in torch, say so: {allow_ops_advice(strict[0].op, task.format)})"
        return fail("prechecks", strict[0].message + hint + more, metrics=metrics, details=details, location=loc)
    if warnings:
        return warn("prechecks", f"{len(warnings)} warning{'s' if len(warnings) > 1 else ''}: {warnings[0].message}",
                    metrics=metrics, details=details, location=loc)
    return ok("prechecks", "clean", metrics=metrics, details=details)
