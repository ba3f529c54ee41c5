"""GPU MODE problem directories (reference-kernels), as their own runner reads them.

``task.yml`` names the files the problem is made of (``files:``: each ``{name, source}``; the
source is relative to the problem folder, often ``../utils.py`` shared by a whole set of
problems, and ``@SUBMISSION@`` marks the candidate's name), the ``tests`` and ``benchmarks``
(dicts passed whole to ``generate_input(**test)``, ``seed`` included), the timeouts and
``ranking_by`` (how benchmark means become one score: ``last`` by default, ``mean``, ``geom``).
``reference.py`` has ``generate_input``, ``ref_kernel(data)`` and ``check_implementation(data,
output)``; the candidate (``submission.py``) has ``custom_kernel(data)``.

Every field kerneltui reads is type-checked with its line; fields it does not use (``config``,
``templates``) are left to GPU MODE. The backend is taken from ``--backend`` or detected from the
submission (GPU MODE accepts any Python submission).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from kerneltui.core import backends
from kerneltui.core.task import BACKENDS, RANKINGS, LoadOptions, Task, TaskError, Timeouts
from kerneltui.core.task_error import task_text
from kerneltui.core.task_loaders import fields
from kerneltui.core.task_loaders.containment import contained
from kerneltui.core.task_loaders.fields import SettingsFile
from kerneltui.core.task_loaders.pysource import (
    FunctionShape,
    parse_python,
    require_function,
    require_params,
    top_level_functions,
)
from kerneltui.core.task_loaders.yaml_lines import read_yaml

SUBMISSION = "@SUBMISSION@"
DEFAULT_SUBMISSION = "submission.py"


def detect_backend(source: str) -> str:
    """The DSL a GPU MODE submission is written in (GPU MODE itself accepts any)."""
    return backends.undeclared_submission(source)


def task_yml(root: Path) -> Path:
    yml = root / "task.yml"
    return yml if yml.exists() else root / "task.yaml"


def linked_files(src: SettingsFile, root: Path, value: Any, evaluator: str | None = None) -> tuple[dict[str, str], str]:
    """task.yml's ``files:``: the files to take from outside the folder, and the submission's name.

    A source that is missing but whose name is already in the folder is the flattened copy GPU
    MODE's runner itself makes (and what a cluster node receives): the folder's file is used."""
    if value is None:
        return {}, DEFAULT_SUBMISSION
    if not isinstance(value, list):
        raise src.error(("files",), f"files must be a list of {{name, source}} entries, not {fields.show(value)}")
    linked: dict[str, str] = {}
    submission = DEFAULT_SUBMISSION
    for i, entry in enumerate(value):
        at: fields.KeyPath = ("files", i)
        table = fields.table(src, at, entry)
        if "name" not in table or "source" not in table:
            raise src.error(at, f"files entry {i + 1} needs a name and a source")
        name = fields.string(src, (*at, "name"), table["name"], non_empty=True)
        source = fields.string(src, (*at, "source"), table["source"], non_empty=True)
        pure = PurePosixPath(name)
        if pure.is_absolute() or ".." in pure.parts:
            raise src.error((*at, "name"), f"files entry {i + 1}: name {name!r} must be a path inside the task")
        if source == SUBMISSION:
            submission = name
            continue
        path = (root / source).resolve()
        if not path.is_file():
            if (root / name).is_file() or name == evaluator:
                # GPU MODE's evaluator (``config: main``) is never run by kerneltui: a problem folder copied
                # without the shared ``../eval.py`` loads all the same.
                continue
            raise src.error((*at, "source"), f"files entry {i + 1}: {source} not found (relative to {root})")
        # A declared exception to the folder rule (``containment``): read where it is, also when the
        # folder's entry of that name is a link to it.
        if path != (root / name).resolve() or not path.is_relative_to(root.resolve()):
            linked[name] = str(path)
    return linked, submission


def load(root: Path, kernel: str | Path | None = None, options: LoadOptions | None = None) -> Task:
    options = options or LoadOptions()
    yml = contained(root, task_yml(root).name)
    data, src = read_yaml(yml)
    if not isinstance(data, dict):
        raise TaskError("task.yml must be a mapping of settings", yml)
    if options.constants or options.scale is not None:
        raise TaskError("--set and --scale rewrite a KernelBench problem's module constants; a GPU MODE problem's "
                        "sizes are its tests and benchmarks in task.yml", yml)
    lang = fields.string(src, ("lang",), data.get("lang", "py"))
    if lang != "py":
        raise src.error(("lang",), f"lang: {lang!r}: kerneltui runs GPU MODE's Python problems (lang: py)")
    if fields.boolean(src, ("multi_gpu",), data.get("multi_gpu", False)):
        raise src.error(("multi_gpu",), "multi_gpu: true: kerneltui checks single-GPU problems only")
    if "seed" in data:
        fields.integer(src, ("seed",), data["seed"], minimum=0, what="a non-negative integer")
    for key in ("config", "templates"):
        if key in data:
            fields.table(src, (key,), data[key])
    config = data.get("config")
    evaluator = config.get("main") if isinstance(config, dict) else None
    linked, submission = linked_files(src, root, data.get("files"), evaluator if isinstance(evaluator, str) else None)

    ref = contained(root, "reference.py")
    funcs = top_level_functions(parse_python(ref))
    _own_evaluator(src, root, data, funcs)
    gen = require_function(funcs, "generate_input", ref, "generate_input(**test) -> data")
    require_function(funcs, "ref_kernel", ref, "ref_kernel(data) -> output")

    cand = Path(kernel).expanduser().resolve() if kernel is not None else contained(root, submission)
    if not cand.is_file():
        raise TaskError(f"no submission: pass --kernel FILE or create {submission} with custom_kernel(data)", cand)
    try:
        kernel_rel = cand.relative_to(root).as_posix()
    except ValueError:
        # From elsewhere (a folder of submissions): it takes the submission's name, as GPU MODE does.
        kernel_rel = submission
        linked[kernel_rel] = str(cand)

    receiver = "reference.py: generate_input"
    tests = fields.cases(src, ("tests",), data.get("tests"), gen.annotations, receiver)
    if not tests:
        raise src.error(("tests",), "task.yml has no tests")
    benchmarks = fields.cases(src, ("benchmarks",), data.get("benchmarks"), gen.annotations, receiver)
    for case in (*tests, *benchmarks):
        require_params(gen, [*case.params, "seed"], ref, f"generate_input({', '.join([*case.params, 'seed'])})")

    timeouts = Timeouts()
    if "test_timeout" in data or "benchmark_timeout" in data:
        t = fields.number(src, ("test_timeout",), data.get("test_timeout", timeouts.correctness), positive=True)
        b = fields.number(src, ("benchmark_timeout",), data.get("benchmark_timeout", t), positive=True)
        timeouts = Timeouts(compile=t, run=t, correctness=t, benchmark=b)
    if "ranked_timeout" in data:
        fields.number(src, ("ranked_timeout",), data["ranked_timeout"], positive=True)
    ranking = fields.choice(src, ("ranking_by",), data.get("ranking_by", "last"), choices=RANKINGS)

    if options.backend is not None:
        backend, backend_from = options.backend, "--backend"
    else:
        backend, backend_from = detect_backend(task_text(cand)), f"detected from {kernel_rel}"
    if backend not in BACKENDS:
        raise TaskError(f"--backend must be one of {', '.join(BACKENDS)}, not {backend!r}")

    return Task(
        name=fields.string(src, ("name",), data.get("name") or root.name, non_empty=True),
        description=fields.string(src, ("description",), data.get("description") or "").strip(),
        backend=backend,
        format="gpumode",
        root=root,
        kernel_file=kernel_rel,
        reference_file="reference.py",
        entry_file=kernel_rel,
        tests=tests,
        benchmarks=benchmarks,
        timeouts=timeouts,
        extra={"has_check_implementation": "check_implementation" in funcs},
        allow_ops=frozenset(options.allow_ops),
        backend_from=backend_from,
        ranking_by=ranking,
        linked_files=linked,
    )


def _own_evaluator(src: SettingsFile, root: Path, data: dict[str, Any], funcs: dict[str, FunctionShape]) -> None:
    """A problem whose reference lacks GPU MODE's interface and that brings an evaluator of its own in
    its folder (``config: main: eval.py`` beside task.yml, not the shared ``../eval.py``) is judged by
    that evaluator's rules, which kerneltui cannot know: say so, at the line that names it."""
    if "generate_input" in funcs and "ref_kernel" in funcs:
        return
    config = data.get("config")
    main = config.get("main") if isinstance(config, dict) else None
    if not isinstance(main, str) or not (root / main).is_file():
        return
    missing = " and ".join(f"{name}()" for name in ("generate_input", "ref_kernel") if name not in funcs)
    raise src.error(("config", "main"), (
        f"this problem is judged by its own evaluator ({main}, in its folder), and its reference.py has no "
        f"{missing}: kerneltui judges GPU MODE problems through generate_input(**test) -> data and "
        f"ref_kernel(data) -> output, so it cannot check this one as its harness does. Run its evaluator "
        f"(python {main}), or give reference.py those two functions"))
