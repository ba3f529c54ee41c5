"""KernelBench problem files: ``Model``, ``get_inputs()``, ``get_init_inputs()``; candidate ``ModelNew``.

The candidate lives in another file: ``--kernel FILE``, or next to the problem as
``<stem>_new.py``, ``<stem>_kernel.py`` or ``model_new.py`` (in that order). Both models are
built from ``get_init_inputs()`` under the same seed, and the candidate's parameters are copied
from the reference where names and shapes match, so that weights agree.

The backend is part of the problem's set-up, never read off the candidate: ``--backend``, else
the file's ``# kerneltui: backend = …`` header, else Triton. A candidate that only calls torch is
therefore not a Triton kernel and fails, unless the task says ``torch``. Sizes are the module
constants; ``--set NAME=VALUE`` / ``--scale F`` rewrite them for the run (``constants``), and the
header's ``tests``/``benchmarks`` list several shapes as cases.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from kerneltui.core import backends
from kerneltui.core.task import BACKENDS, RANKINGS, Case, LoadOptions, Task, TaskError, Tolerance
from kerneltui.core.task_error import task_text
from kerneltui.core.task_loaders import fields
from kerneltui.core.task_loaders.constants import (
    Constant,
    check_value,
    global_reads,
    module_constants,
    parse_value,
    scale_all,
)
from kerneltui.core.task_loaders.containment import contained
from kerneltui.core.task_loaders.fields import SettingsFile
from kerneltui.core.task_loaders.kb_header import read_header
from kerneltui.core.task_loaders.native import ALLOWABLE, timeouts_from
from kerneltui.core.task_loaders.pysource import parse_python, top_level_classes, top_level_functions

CANDIDATE_NAMES = ("{stem}_new.py", "{stem}_kernel.py", "model_new.py")
DEFAULT_BACKEND = backends.DEFAULT
# KernelBench v0.1's gate: allclose(atol=rtol=1e-2); kerneltui adds its scale-aware checks on top.
DEFAULT_TOLERANCE = 1e-2


def is_problem(tree: ast.Module) -> bool:
    funcs = top_level_functions(tree)
    return "Model" in top_level_classes(tree) and "get_inputs" in funcs and "get_init_inputs" in funcs


def candidate_paths(problem: Path) -> list[Path]:
    return [problem.parent / pat.format(stem=problem.stem) for pat in CANDIDATE_NAMES]


def is_problem_file(path: Path) -> bool:
    """A problem (``Model``, ``get_inputs``, ``get_init_inputs``, no ``ModelNew``): names cannot tell
    problems from candidates (``…_square_kernel.py`` is a problem)."""
    try:
        tree = parse_python(path)
    except TaskError:
        return False  # unreadable: whoever loads it says what is wrong
    return is_problem(tree) and "ModelNew" not in top_level_classes(tree)


def _description(tree: ast.Module, problem: Path) -> str:
    doc = ast.get_docstring(tree)
    if not doc:
        model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
        doc = ast.get_docstring(model) if model is not None else None
    return doc.strip() if doc else f"KernelBench problem {problem.name}"


def _backend(options: LoadOptions, header: dict[str, Any], src: SettingsFile) -> tuple[str, str]:
    if options.backend is not None:
        if options.backend not in BACKENDS:
            raise TaskError(f"--backend must be one of {', '.join(BACKENDS)}, not {options.backend!r}")
        return options.backend, "--backend"
    if "backend" in header:
        value = fields.choice(src, ("backend",), header["backend"], choices=BACKENDS)
        return value, f"{src.path.name}:{src.line(('backend',))}"
    return DEFAULT_BACKEND, f"the KernelBench default ({DEFAULT_BACKEND}; --backend or a `# kerneltui: backend = …` line)"


def run_constants(problem: Path, constants: dict[str, Constant], options: LoadOptions) -> dict[str, Any]:
    """The constants this run rewrites: ``--scale`` first, then each ``--set`` (type-checked)."""
    values: dict[str, Any] = {}
    if options.scale is not None:
        if not options.scale > 0:
            raise TaskError(f"--scale must be a positive factor, not {options.scale}")
        values.update(scale_all(constants, options.scale))
    for name, text in options.constants:
        if name not in constants:
            known = ", ".join(constants) or "none"
            raise TaskError(f"--set {name}=…: {problem.name} has no module constant {name} (its constants: {known})",
                            problem)
        values[name] = check_value(constants[name], parse_value(text, name), problem, f"--set {name}={text}")
    return values


def _build_uses(tree: ast.Module) -> dict[str, int]:
    """Module names read while building the model (``Model``, ``get_init_inputs``) or other
    constants: name -> the line that reads it."""
    uses: dict[str, int] = {}
    for node in tree.body:
        if (isinstance(node, ast.ClassDef) and node.name == "Model") or (
                isinstance(node, ast.FunctionDef) and node.name == "get_init_inputs"):
            found = global_reads(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            found = {n.id: n.lineno for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        else:
            continue
        for name, line in found.items():
            uses.setdefault(name, line)
    return uses


def header_cases(src: SettingsFile, key: str, value: Any, tree: ast.Module,
                 constants: dict[str, Constant]) -> tuple[Case, ...]:
    """Header ``tests``/``benchmarks``: each case sets module constants that only ``get_inputs`` reads
    (the models are built once, from the file's constants)."""
    annotations = {name: type(c.value).__name__ for name, c in constants.items()
                   if type(c.value).__name__ in ("int", "float", "bool", "str")}
    out = fields.cases(src, (key,), value, annotations, f"{src.path.name}'s module constant")
    uses = _build_uses(tree)
    for i, case in enumerate(out):
        for name, v in case.params.items():
            at = (key, i, name)
            if name not in constants:
                raise src.error(at, f"{key}[{i + 1}].{name}: {src.path.name} has no module constant {name}")
            if name in uses:
                raise src.error(at, f"{key}[{i + 1}].{name}: {name} is also read at line {uses[name]} to build the "
                                    "model or another constant, which happens once: a case may only set constants "
                                    "that get_inputs alone reads (use --set for the others)")
            try:
                check_value(constants[name], v, src.path, f"{key}[{i + 1}]")
            except TaskError as exc:
                raise src.error(at, exc.message) from exc
    return out


def load(problem: Path, kernel: str | Path | None = None, options: LoadOptions | None = None) -> Task:
    options = options or LoadOptions()
    tree = parse_python(problem)
    classes = top_level_classes(tree)
    funcs = top_level_functions(tree)
    if "Model" not in classes:
        raise TaskError("not a KernelBench problem: no class Model(nn.Module)", problem)
    for name in ("get_inputs", "get_init_inputs"):
        if name not in funcs:
            raise TaskError(f"KernelBench problem without {name}()", problem)
    header, src = read_header(problem, task_text(problem))
    constants = module_constants(tree)
    backend, backend_from = _backend(options, header, src)

    root = problem.parent
    if kernel is not None:
        cand = Path(kernel).expanduser().resolve()
    else:
        options_found = candidate_paths(problem)
        found = [p for p in options_found if p.is_file() and not is_problem_file(p)]
        if not found:
            raise TaskError(
                "no candidate found: pass --kernel FILE (a file defining class ModelNew), or put one at "
                + " or ".join(p.name for p in options_found),
                problem,
            )
        cand = found[0]
    if not cand.is_file():
        raise TaskError("candidate file not found", cand)
    if "ModelNew" not in top_level_classes(parse_python(cand)):
        raise TaskError("candidate has no class ModelNew", cand)
    linked: dict[str, str] = {}
    try:
        kernel_rel = cand.relative_to(root).as_posix()
        contained(root, kernel_rel)  # a candidate found in the folder is read there, never through a link out
    except ValueError:
        # From elsewhere (a run folder of samples): linked into the task copy under its own name.
        kernel_rel = cand.name if cand.name != problem.name else CANDIDATE_NAMES[0].format(stem=problem.stem)
        linked[kernel_rel] = str(cand)

    tests = header_cases(src, "tests", header.get("tests"), tree, constants) or (Case(params={}),)
    benchmarks = header_cases(src, "benchmarks", header.get("benchmarks"), tree, constants) or (Case(params={}),)
    tolerance = Tolerance(
        atol=fields.number(src, ("atol",), header.get("atol", DEFAULT_TOLERANCE), non_negative=True),
        rtol=fields.number(src, ("rtol",), header.get("rtol", DEFAULT_TOLERANCE), non_negative=True),
    )
    extra_settings: dict[str, Any] = {}
    if "timeouts" in header:
        extra_settings["timeouts"] = timeouts_from(src, ("timeouts",), header["timeouts"])
    ranking = fields.choice(src, ("ranking_by",), header.get("ranking_by", "geom"), choices=RANKINGS)

    return Task(
        name=problem.stem,
        description=_description(tree, problem),
        backend=backend,
        format="kernelbench",
        root=root,
        kernel_file=kernel_rel,
        reference_file=problem.name,
        entry_file=kernel_rel,
        tests=tests,
        benchmarks=benchmarks,
        tolerance=tolerance,
        inplace=fields.boolean(src, ("inplace",), header.get("inplace", False)),
        seeds=fields.positive_int(src, ("seeds",), header.get("seeds", 5)),
        allow=frozenset(fields.string_list(src, ("allow",), header.get("allow", []), choices=sorted(ALLOWABLE))),
        allow_ops=fields.operator_list(src, ("allow_ops",), header.get("allow_ops", [])) | set(options.allow_ops),
        extra={},
        backend_from=backend_from,
        ranking_by=ranking,
        constants=run_constants(problem, constants, options),
        linked_files=linked,
        **extra_settings,
    )
