"""The native task directory: task.toml + reference.py + the kernel file.

Every field of task.toml is type-checked here (``fields``) with its line (``toml_lines``) before
anything runs: a value of the wrong type is a task error, never read as something else.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from kerneltui.core import backends
from kerneltui.core.task import BACKENDS, RANKINGS, LoadOptions, Task, TaskError, Timeouts, Tolerance
from kerneltui.core.task_error import task_text
from kerneltui.core.task_loaders import fields
from kerneltui.core.task_loaders.containment import contained
from kerneltui.core.task_loaders.fields import SettingsFile
from kerneltui.core.task_loaders.pysource import (
    parse_python,
    require_function,
    require_params,
    top_level_functions,
)
from kerneltui.settings.toml_lines import key_lines

KNOWN_KEYS = {
    "name", "description", "backend", "kernel", "reference", "launcher", "tests", "benchmarks",
    "tolerance", "timeouts", "inplace", "seeds", "allow", "allow_ops", "arch", "ranking_by",
}
ALLOWABLE = {"streams", "threads", "torch_ops", "downcast", "reference_import", "persisting_l2", "introspection", "descriptors"}
ARCH = re.compile(r"^sm_\d{2,3}[af]?$")


def _read_toml(path: Path) -> tuple[dict[str, Any], SettingsFile]:
    try:
        text = task_text(path)
    except FileNotFoundError as exc:
        raise TaskError("task.toml not found", path) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line = int(m.group(1)) if m else None
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise TaskError(f"malformed TOML: {msg}", path, line) from exc
    return data, SettingsFile(path, key_lines(text))


def tolerance_from(src: SettingsFile, key: fields.KeyPath, value: Any) -> Tolerance:
    """A ``[tolerance]`` table: numbers for the bounds, a boolean for ``golden``."""
    table = fields.table(src, key, value, known=sorted(Tolerance.__dataclass_fields__))
    out: dict[str, Any] = {}
    for name, raw in table.items():
        at = (*key, name)
        if name == "golden":
            out[name] = fields.boolean(src, at, raw)
        elif name == "min_cosine":
            out[name] = fields.number(src, at, raw, low=-1.0, high=1.0)
        elif name == "min_psnr_db":
            out[name] = fields.number(src, at, raw)
        else:
            out[name] = fields.number(src, at, raw, non_negative=True)
    return Tolerance(**out)


def timeouts_from(src: SettingsFile, key: fields.KeyPath, value: Any) -> Timeouts:
    """A ``[timeouts]`` table: a positive number of seconds per rung."""
    table = fields.table(src, key, value, known=sorted(Timeouts.__dataclass_fields__))
    return Timeouts(**{name: fields.number(src, (*key, name), raw, positive=True) for name, raw in table.items()})


def load(root: Path, kernel: str | Path | None = None, options: LoadOptions | None = None) -> Task:
    options = options or LoadOptions()
    toml_path = contained(root, "task.toml")
    data, src = _read_toml(toml_path)
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise src.error((unknown[0],), f"unknown keys {unknown}; known: {sorted(KNOWN_KEYS)}")
    if options.constants or options.scale is not None:
        raise TaskError("--set and --scale rewrite a KernelBench problem's module constants; a task.toml task "
                        "lists its sizes in [[tests]] and [[benchmarks]]: edit those", toml_path)
    backend = fields.string(src, ("backend",), data.get("backend", backends.DEFAULT), choices=BACKENDS)
    backend_from = f"task.toml:{src.line(('backend',))}" if "backend" in data else f"the default ({backends.DEFAULT})"
    spec = backends.spec_of(backend)
    if options.backend is not None and options.backend != backend:
        raise TaskError(f"--backend {options.backend} disagrees with the task, which declares backend = {backend!r}: "
                        "change task.toml if the kernel is meant for another DSL", toml_path, src.line(("backend",)))

    kernel_file = fields.string(src, ("kernel",), data.get("kernel", spec.kernel_file), non_empty=True)
    if kernel is not None:
        kpath = Path(kernel).expanduser().resolve()
        try:
            kernel_file = kpath.relative_to(root).as_posix()
        except ValueError as exc:
            raise TaskError("--kernel must be a file inside the task directory (copy it there first)", kpath) from exc
    if not contained(root, kernel_file).is_file():
        raise src.error(("kernel",), f"kernel file {kernel_file} not found (set `kernel = \"…\"` in task.toml)")

    reference_file = fields.string(src, ("reference",), data.get("reference", "reference.py"), non_empty=True)
    ref_path = contained(root, reference_file)
    funcs = top_level_functions(parse_python(ref_path))
    gen = require_function(funcs, "generate_input", ref_path, "generate_input(seed, **params) -> tuple of inputs")
    require_function(funcs, "ref_kernel", ref_path, "ref_kernel(*inputs) -> output")

    receiver = f"{reference_file}: generate_input"
    tests = fields.cases(src, ("tests",), data.get("tests"), gen.annotations, receiver)
    if not tests:
        raise src.error(("tests",), "no [[tests]] entries: add at least one table of shape parameters")
    benchmarks = fields.cases(src, ("benchmarks",), data.get("benchmarks"), gen.annotations, receiver)
    for case in (*tests, *benchmarks):
        require_params(gen, ["seed", *case.params], ref_path, f"generate_input(seed, {', '.join(case.params)})")

    launcher = data.get("launcher")
    if launcher is not None:
        launcher = fields.string(src, ("launcher",), launcher, non_empty=True)
    if spec.launcher is not None:
        launcher = launcher or spec.launcher
        if not contained(root, launcher).is_file():
            raise src.error(("launcher",), f"a {spec.label} task needs a Python launcher ({launcher}) defining "
                                           "custom_kernel(*inputs)")
    entry_file = launcher or kernel_file

    tolerance = tolerance_from(src, ("tolerance",), data["tolerance"]) if "tolerance" in data else Tolerance()
    timeouts = timeouts_from(src, ("timeouts",), data["timeouts"]) if "timeouts" in data else Timeouts()
    allow = fields.string_list(src, ("allow",), data.get("allow", []), choices=sorted(ALLOWABLE))
    allow_ops = fields.operator_list(src, ("allow_ops",), data.get("allow_ops", [])) | set(options.allow_ops)
    seeds = fields.positive_int(src, ("seeds",), data.get("seeds", 5))
    inplace = fields.boolean(src, ("inplace",), data.get("inplace", False))
    arch = fields.string(src, ("arch",), data.get("arch", "sm_90a"))
    if not ARCH.match(arch):
        raise src.error(("arch",), f"arch must name a CUDA target such as sm_90a or sm_100a, not {arch!r}")
    ranking = fields.choice(src, ("ranking_by",), data.get("ranking_by", "geom"), choices=RANKINGS)

    return Task(
        name=fields.string(src, ("name",), data.get("name", root.name), non_empty=True),
        description=fields.string(src, ("description",), data.get("description", "")).strip(),
        backend=backend,
        format="native",
        root=root,
        kernel_file=kernel_file,
        reference_file=reference_file,
        entry_file=entry_file,
        tests=tests,
        benchmarks=benchmarks,
        tolerance=tolerance,
        timeouts=timeouts,
        inplace=inplace,
        seeds=seeds,
        allow=frozenset(allow),
        allow_ops=allow_ops,
        arch=arch,
        extra={"has_check_implementation": "check_implementation" in funcs,
               "has_flops": "flops" in funcs, "has_bytes_moved": "bytes_moved" in funcs},
        backend_from=backend_from,
        ranking_by=ranking,
    )
