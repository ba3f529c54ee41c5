"""Task loading: the three formats as published, and every bad value reported with file and line."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from kerneltui.core.task import LoadOptions, TaskError
from kerneltui.core.task_loaders.load import load_task
from kerneltui.settings.toml_lines import key_lines
from tests.conftest import DATA, EXAMPLES, copy_tree

KB = DATA / "kernelbench"
GM = DATA / "gpumode"


def copy_example(tmp_path: Path, name: str = "vector_add") -> Path:
    dest = tmp_path / name
    copy_tree(EXAMPLES / name, dest)
    return dest


def edit_toml(root: Path, old: str, new: str) -> Path:
    toml = root / "task.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new, 1))
    return toml


def line_of(path: Path, needle: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.iterdir() if (p / "task.toml").exists()))
def test_every_bundled_example_loads(name):
    task = load_task(EXAMPLES / name)
    assert task.format == "native"
    assert task.tests, name
    assert task.kernel_path.is_file()
    assert task.backend in {"triton", "cute", "cuda", "torch", "tilelang"}


def test_native_fields(tmp_path):
    task = load_task(copy_example(tmp_path))
    assert task.name == "vector_add"
    assert [c.params for c in task.tests] == [{"n": 1}, {"n": 1000}, {"n": 4097}, {"n": 12289}]
    assert task.benchmarks[0].params == {"n": 67108864}
    assert task.extra["has_flops"] and task.extra["has_bytes_moved"]
    assert "kernel.py" in task.read_sources()
    assert task.inplace is False and task.ranking_by == "geom"


def test_allow_ops_names_the_operators_left_to_torch(tmp_path):
    root = copy_example(tmp_path)
    edit_toml(root, 'backend = "triton"\n', 'backend = "triton"\nallow_ops = ["conv2d", "aten::addmm"]\n')
    task = load_task(root)
    assert task.allow_ops == frozenset({"conv2d", "addmm"})
    assert task.to_dict()["allow_ops"] == ["addmm", "conv2d"]
    # The command line's list joins the task's own.
    task = load_task(root, options=LoadOptions(allow_ops=("layer_norm",)))
    assert task.allow_ops == frozenset({"conv2d", "addmm", "layer_norm"})
    assert LoadOptions.from_dict(LoadOptions(allow_ops=("mm",)).to_dict()) == LoadOptions(allow_ops=("mm",))


def test_malformed_toml_names_file_and_line(tmp_path):
    root = copy_example(tmp_path)
    edit_toml(root, 'backend = "triton"', 'backend = "triton')
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert err.value.file and err.value.file.endswith("task.toml")
    assert err.value.line == 6
    assert "malformed TOML" in str(err.value)


# -- the strict schema: a value of the wrong type is a task error at its line, never read as another ----------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('inplace = "false"', 'inplace must be a boolean, not the string "false": write true or false without quotes'),
        ("inplace = 1", "inplace must be a boolean, not the integer 1"),
        ("seeds = true", "seeds must be a positive integer, not the boolean true"),
        ("seeds = 0", "seeds must be a positive integer, not 0"),
        ('seeds = "5"', 'seeds must be a positive integer, not the string "5"'),
        ("allow = \"streams\"", 'allow must be a list of strings, not the string "streams"'),
        ('allow_ops = "conv2d"', 'allow_ops must be a list of strings, not the string "conv2d"'),
        ('allow_ops = ["conv 2d"]', "allow_ops names torch operators (conv2d, convolution, linear, softmax …), "
                                    "not 'conv 2d'"),
        ('arch = "hopper"', "arch must name a CUDA target"),
        ('ranking_by = "best"', "ranking_by must be one of last, mean, geom, not 'best'"),
        ("reference = 3", "reference must be a string, not the integer 3"),
        ("tolerance = 3", "[tolerance] must be a table of settings, not the integer 3"),
    ],
)
def test_top_level_values_are_type_checked(tmp_path, line, message):
    root = copy_example(tmp_path)
    toml = edit_toml(root, 'backend = "triton"\n', f'backend = "triton"\n{line}\n')
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert message in err.value.message
    assert err.value.file == str(toml)
    assert err.value.line == line_of(toml, line)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[tolerance]\natol = "1e-3"', 'tolerance.atol must be a number, not the string "1e-3"'),
        ("[tolerance]\nrtol = -0.1", "tolerance.rtol must not be negative"),
        ("[tolerance]\ngolden = 0", "tolerance.golden must be a boolean, not the integer 0"),
        ("[tolerance]\nmin_cosine = 2.0", "tolerance.min_cosine must be between -1.0 and 1.0"),
        ("[tolerance]\nslack = 1.0", "[tolerance] has unknown keys ['slack']"),
        ("[timeouts]\nrun = -5", "timeouts.run must be a positive number of seconds, not -5"),
        ("[timeouts]\ncorrectness = 0", "timeouts.correctness must be a positive number of seconds, not 0"),
        ('[timeouts]\nbenchmark = "long"', 'timeouts.benchmark must be a number, not the string "long"'),
    ],
)
def test_tables_are_type_checked(tmp_path, table, message):
    root = copy_example(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text() + "\n" + table + "\n")
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert message in err.value.message
    assert err.value.line == line_of(toml, table.splitlines()[-1])


@pytest.mark.parametrize(
    ("old", "new", "message", "needle"),
    [
        ("n = 1000\n", "n = 1000\nseed = true\n", "tests[2].seed must be a non-negative integer, not the boolean true",
         "seed = true"),
        ("n = 1000\n", 'n = "1000"\n', 'tests[2].n must be an integer (reference.py: generate_input declares n: int), '
         'not the string "1000"', 'n = "1000"'),
        ("n = 1000\n", "n = 1000.0\n", "tests[2].n must be an integer", "n = 1000.0"),
        ("n = 67108864", "n = true", "benchmarks[1].n must be an integer", "n = true"),
        ("n = 1000\n", "n = {value = 3}\n", "tests[2].n must be a plain value", "n = {value = 3}"),
    ],
)
def test_case_parameters_are_type_checked(tmp_path, old, new, message, needle):
    root = copy_example(tmp_path)
    toml = edit_toml(root, old, new)
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert message in err.value.message
    assert err.value.line == line_of(toml, needle)


def test_inline_array_of_cases_is_located(tmp_path):
    root = copy_example(tmp_path)
    text = (root / "task.toml").read_text()
    start, end = text.index("[[tests]]"), text.index("[[benchmarks]]")
    text = text[:start] + "tests = [\n  {n = 1},\n  {n = 2, seed = -4},\n]\n\n" + text[end:]
    (root / "task.toml").write_text(text)
    with pytest.raises(TaskError, match="tests\\[2\\].seed must be a non-negative integer, not -4") as err:
        load_task(root)
    assert err.value.line == line_of(root / "task.toml", "seed = -4")


def test_toml_key_lines():
    text = '''name = "x"  # a comment with = in it
description = """
a = 1
"""
tolerance = {atol = 1e-3}
[timeouts]
run = 5
[[tests]]
n = 1
[[tests]]
n = 2
seed = 3
'''
    lines = key_lines(text)
    assert lines[("name",)] == 1
    assert ("a",) not in lines  # inside a multi-line string
    assert lines[("tolerance", "atol")] == 5
    assert lines[("timeouts", "run")] == 7
    assert lines[("tests", 1, "seed")] == 12
    assert lines[("tests", 0, "n")] == 9


def test_missing_function(tmp_path):
    root = copy_example(tmp_path)
    ref = root / "reference.py"
    ref.write_text(ref.read_text().replace("def ref_kernel", "def reference_kernel"))
    with pytest.raises(TaskError, match=r"missing function ref_kernel\(\)") as err:
        load_task(root)
    assert err.value.file.endswith("reference.py")


def test_wrong_signature_names_the_line(tmp_path):
    root = copy_example(tmp_path)
    ref = root / "reference.py"
    ref.write_text(ref.read_text().replace("def generate_input(seed: int, n: int,", "def generate_input(seed: int, size: int,"))
    with pytest.raises(TaskError, match="does not accept n") as err:
        load_task(root)
    assert err.value.line == 4


def test_empty_test_list(tmp_path):
    root = copy_example(tmp_path)
    toml = root / "task.toml"
    text = toml.read_text()
    text = text[: text.index("[[tests]]")] + text[text.index("[[benchmarks]]"):]
    toml.write_text(text)
    with pytest.raises(TaskError, match=r"no \[\[tests\]\] entries"):
        load_task(root)


def test_syntax_error_in_reference(tmp_path):
    root = copy_example(tmp_path)
    (root / "reference.py").write_text("import torch\ndef generate_input(seed, n:\n")
    with pytest.raises(TaskError, match="syntax error") as err:
        load_task(root)
    assert err.value.line == 2


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (('backend = "triton"', 'backend = "opencl"'), "backend must be one of"),
        (('kernel = "kernel.py"', 'kernel = "nope.py"'), "kernel file nope.py not found"),
        (('name = "vector_add"', 'name = "vector_add"\ncolour = "red"'), "unknown keys"),
    ],
)
def test_other_bad_settings(tmp_path, edit, message):
    root = copy_example(tmp_path)
    edit_toml(root, *edit)
    with pytest.raises(TaskError, match=message) as err:
        load_task(root)
    assert err.value.line is not None


def test_backend_option_must_agree_with_task_toml(tmp_path):
    root = copy_example(tmp_path)
    with pytest.raises(TaskError, match="--backend torch disagrees with the task") as err:
        load_task(root, options=LoadOptions(backend="torch"))
    assert err.value.line == 6
    with pytest.raises(TaskError, match="--set and --scale rewrite a KernelBench problem"):
        load_task(root, options=LoadOptions(scale=0.5))


def test_not_a_task(tmp_path):
    with pytest.raises(TaskError, match="not a task directory"):
        load_task(tmp_path)
    with pytest.raises(TaskError, match="no such task"):
        load_task(tmp_path / "missing")


def test_a_suite_folder_is_named_as_one():
    with pytest.raises(TaskError, match=r"a KernelBench level folder \(4 problems\).*kerneltui suite"):
        load_task(KB / "level1")
    with pytest.raises(TaskError, match=r"a GPU MODE problems folder \(3 problems\)"):
        load_task(GM)


# -- KernelBench ------------------------------------------------------------------------------------------


def kb_copy(tmp_path: Path, stem: str, header: str = "", candidate: str | None = None) -> Path:
    problem = tmp_path / f"{stem}.py"
    problem.write_text(header + (KB / "level1" / f"{stem}.py").read_text())
    source = KB / "level1" / f"{stem}_new.py" if candidate is None else KB / "runs" / candidate
    shutil.copy(source, tmp_path / f"{stem}_new.py")
    return problem


def test_kernelbench_problem_file():
    task = load_task(KB / "level1" / "7_ScaledReLU.py")
    assert task.format == "kernelbench"
    assert task.kernel_file == "7_ScaledReLU_new.py"
    assert task.backend == "triton" and "default" in task.backend_from
    assert task.tolerance.atol == 1e-2
    assert task.state_dir.name == "7_ScaledReLU"
    assert task.description == "ReLU followed by a learnable per-feature scale."
    # One self-contained file: the rest of the level folder does not travel with it.
    assert sorted(task.source_files()) == ["7_ScaledReLU.py", "7_ScaledReLU_new.py"]


def test_kernelbench_backend_is_declared_not_guessed(tmp_path):
    # A candidate that only calls torch is still checked as a Triton kernel (and fails prechecks there).
    problem = kb_copy(tmp_path, "23_RowSoftmax", candidate="torch_only/level_1_problem_23_sample_0_kernel.py")
    assert load_task(problem).backend == "triton"
    assert load_task(problem, options=LoadOptions(backend="torch")).backend == "torch"
    (tmp_path / "declared").mkdir()
    declared = kb_copy(tmp_path / "declared", "23_RowSoftmax", header='# kerneltui: backend = "torch"\n',
                       candidate="torch_only/level_1_problem_23_sample_0_kernel.py")
    task = load_task(declared)
    assert task.backend == "torch" and task.backend_from == "23_RowSoftmax.py:1"


@pytest.mark.parametrize(
    ("header", "message", "line"),
    [
        ('# kerneltui: backend = "opencl"\n', "backend must be one of triton, cute, cuda, torch", 1),
        ('# kerneltui: seeds = 2\n# kerneltui: atol = "tight"\n', 'atol must be a number, not the string "tight"', 2),
        ("# kerneltui: inplace = 1\n", "inplace must be a boolean, not the integer 1", 1),
        ("# kerneltui: speed = 3\n", "unknown `# kerneltui:` setting 'speed'", 1),
        ("# kerneltui: tests = [{batch_size = 2.5}]\n", "tests[1].batch_size must be an integer", 1),
        ("# kerneltui: tests = [{batch_size = -3}]\n", "must stay a positive integer", 1),
        ("# kerneltui: tests = [{rows = 3}]\n", "has no module constant rows", 1),
        ("# kerneltui: seeds = [\n", "malformed `# kerneltui:` settings", 1),
    ],
)
def test_kernelbench_header_is_type_checked(tmp_path, header, message, line):
    problem = kb_copy(tmp_path, "23_RowSoftmax", header=header)
    with pytest.raises(TaskError) as err:
        load_task(problem)
    assert message in err.value.message
    assert err.value.file == str(problem) and err.value.line == line


def test_kernelbench_cases_may_not_set_constants_that_build_the_model(tmp_path):
    problem = kb_copy(tmp_path, "7_ScaledReLU", header="# kerneltui: tests = [{features = 8}]\n")
    with pytest.raises(TaskError, match="features is also read at line 24 to build the model"):
        load_task(problem)


def test_kernelbench_header_cases(tmp_path):
    problem = kb_copy(tmp_path, "23_RowSoftmax",
                      header="# kerneltui: tests = [{batch_size = 3}, {batch_size = 5, dim = 17, seed = 9}]\n"
                             "# kerneltui: benchmarks = [{batch_size = 64}]\n")
    task = load_task(problem)
    assert [c.params for c in task.tests] == [{"batch_size": 3}, {"batch_size": 5, "dim": 17}]
    assert task.tests[1].seed == 9
    assert task.benchmarks[0].params == {"batch_size": 64}


def test_kernelbench_set_rewrites_module_constants(tmp_path):
    problem = KB / "level1" / "40_TallMatmul.py"
    task = load_task(problem, options=LoadOptions(constants=(("M", "96"), ("N", "40"))))
    assert task.constants == {"M": 96, "N": 40}
    rewritten = task.read_sources()["40_TallMatmul.py"]
    assignments = {n.targets[0].id: ast.literal_eval(n.value) for n in ast.parse(rewritten).body
                   if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)}
    assert assignments == {"M": 96, "K": 64, "N": 40}
    assert "M = 128 * 2" in problem.read_text()  # the file itself is untouched


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ((("rows", "3"),), "40_TallMatmul.py has no module constant rows (its constants: M, K, N)"),
        ((("M", "2.5"),), "M (line 22, = 128 * 2) is an integer size; 2.5 is a float"),
        ((("M", "0"),), "it must stay a positive integer, not 0"),
        ((("M", "true"),), "must be a Python literal"),
    ],
)
def test_kernelbench_set_is_type_checked(pairs, message):
    with pytest.raises(TaskError) as err:
        load_task(KB / "level1" / "40_TallMatmul.py", options=LoadOptions(constants=pairs))
    assert message in str(err.value)


def test_kernelbench_scale_shrinks_size_constants():
    task = load_task(KB / "level1" / "30_SoftsignWide.py", options=LoadOptions(scale=0.01))
    # 4096 × 393216 floats is 6.4 GB; scaled, the power-of-two factors (up to 16) survive.
    assert task.constants == {"batch_size": 48, "dim": 3936}
    scaled = load_task(KB / "level1" / "40_TallMatmul.py", options=LoadOptions(scale=0.5))
    assert scaled.constants == {"M": 128, "K": 32, "N": 32}


def test_kernelbench_candidate_from_a_run_folder():
    sample = KB / "runs" / "broken" / "level_1_problem_23_sample_0_kernel.py"
    task = load_task(KB / "level1" / "23_RowSoftmax.py", sample)
    assert task.kernel_file == sample.name and task.kernel_path == sample
    assert task.read_sources()[sample.name] == sample.read_text()


def test_kernelbench_needs_a_candidate(tmp_path):
    shutil.copy(KB / "level1" / "7_ScaledReLU.py", tmp_path / "7_ScaledReLU.py")
    with pytest.raises(TaskError, match="7_ScaledReLU_new.py or 7_ScaledReLU_kernel.py or model_new.py"):
        load_task(tmp_path / "7_ScaledReLU.py")


def test_kernelbench_candidate_without_modelnew(tmp_path):
    shutil.copy(KB / "level1" / "7_ScaledReLU.py", tmp_path / "7_ScaledReLU.py")
    (tmp_path / "7_ScaledReLU_new.py").write_text("class Something:\n    pass\n")
    with pytest.raises(TaskError, match="no class ModelNew"):
        load_task(tmp_path / "7_ScaledReLU.py")


# -- GPU MODE ---------------------------------------------------------------------------------------------


def test_gpumode_directory_as_published():
    task = load_task(GM / "vectorscale")
    assert task.format == "gpumode"
    assert task.kernel_file == "submission.py"
    assert [c.seed for c in task.tests] == [4242, 5236, 1001]
    assert task.tests[1].params == {"size": 127}
    assert task.timeouts.correctness == 120 and task.timeouts.benchmark == 180
    assert task.extra["has_check_implementation"]
    assert task.ranking_by == "last"
    # files: pulls the shared ../utils.py (and ../eval.py) into the task copy under their names.
    assert task.linked_files["utils.py"] == str((GM / "utils.py").resolve())
    sources = task.read_sources()
    assert sources["utils.py"] == (GM / "utils.py").read_text()
    assert {"task.py", "utils.py", "reference.py", "submission.py", "eval.py"} <= set(sources)
    assert GM / "utils.py" in [p.resolve() for p in task.watched_paths()]


def test_gpumode_ranking_and_backend():
    assert load_task(GM / "prefixsum_py").ranking_by == "geom"
    empty = GM / "histogram_py" / "solutions" / "wrong" / "empty.py"
    task = load_task(GM / "histogram_py", empty)
    assert task.kernel_file == "solutions/wrong/empty.py"
    assert task.backend == "torch" and task.backend_from == "detected from solutions/wrong/empty.py"
    assert load_task(GM / "histogram_py", empty, LoadOptions(backend="triton")).backend == "triton"


def copy_gpumode(tmp_path: Path, problem: str = "histogram_py") -> Path:
    copy_tree(GM, tmp_path / "gm")
    return tmp_path / "gm" / problem


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("test_timeout: 180", 'test_timeout: "3 minutes"', 'test_timeout must be a number, not the string "3 minutes"'),
        ("benchmark_timeout: 180", "benchmark_timeout: -1", "benchmark_timeout must be a positive number of seconds"),
        ('lang: "py"', 'lang: "cu"', "kerneltui runs GPU MODE's Python problems"),
        ('lang: "py"', 'lang: "py"\nmulti_gpu: "no"', 'multi_gpu must be a boolean, not the string "no"'),
        ('lang: "py"', 'lang: "py"\nranking_by: "fastest"', "ranking_by must be one of last, mean, geom"),
        ('"seed": 311, "contention": 10', '"seed": "311", "contention": 10', 'tests[1].seed must be a non-negative integer'),
        ('"seed": 902, "contention": 10', '"seed": 902, "contention": "high"',
         'tests[2].contention must be a number (reference.py: generate_input declares contention: float)'),
        ('"source": "../utils.py"', '"source": "../helpers.py"', "files entry 3: ../helpers.py not found"),
        ('"name": "utils.py"', '"name": "../utils.py"', "must be a path inside the task"),
    ],
)
def test_gpumode_task_yml_is_type_checked(tmp_path, old, new, message):
    root = copy_gpumode(tmp_path)
    yml = root / "task.yml"
    assert old in yml.read_text()
    yml.write_text(yml.read_text().replace(old, new, 1))
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert message in err.value.message
    assert err.value.file == str(yml)
    assert err.value.line == line_of(yml, new.splitlines()[-1])


def test_gpumode_flattened_copy_loads(tmp_path):
    # GPU MODE's runner (and a cluster node) gets the files side by side: a missing ../utils.py is then
    # the folder's own utils.py.
    root = tmp_path / "flat"
    shutil.copytree(GM / "prefixsum_py", root)
    shutil.copy(GM / "utils.py", root / "utils.py")
    shutil.copy(GM / "eval.py", root / "eval.py")
    task = load_task(root)
    assert task.linked_files == {}
    assert "utils.py" in task.read_sources()


def test_gpumode_malformed_yaml(tmp_path):
    root = copy_gpumode(tmp_path, "vectorscale")
    (root / "task.yml").write_text("tests:\n  - {size: 1\n")
    with pytest.raises(TaskError, match="malformed YAML") as err:
        load_task(root)
    assert err.value.line is not None


def test_kernelbench_constants_assigned_together_are_set_and_scaled(tmp_path):
    """``batch_size, dim = 4096, 393216`` on one line: --set and --scale reached only constants
    assigned one per line, so such a problem ran at its published (GB-scale) size whatever was asked."""
    problem = tmp_path / "1_Pair.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "batch_size, dim = 4096, 393216\n"
        "scale: float = 2.0\n\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * scale\n\n\n"
        "def get_inputs():\n"
        "    return [torch.randn(batch_size, dim)]\n\n\n"
        "def get_init_inputs():\n"
        "    return []\n")
    (tmp_path / "1_Pair_new.py").write_text(
        "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x * 2.0\n")
    task = load_task(problem, options=LoadOptions(constants=(("dim", "64"),), scale=0.001))
    assert task.constants == {"batch_size": 16, "dim": 64}
    rewritten = task.read_sources()["1_Pair.py"]
    assert "batch_size, dim = 16, 64\n" in rewritten
    assert "scale: float = 2.0" in rewritten


def test_the_advice_to_allow_an_operator_says_where_each_format_can_list_it():
    from kerneltui.core.task import allow_ops_advice

    assert allow_ops_advice("conv2d", "native") == 'allow_ops = ["conv2d"] in task.toml, or --allow-ops conv2d'
    assert "`# kerneltui:` line" in allow_ops_advice("conv2d", "kernelbench")
    # A GPU MODE problem has no kerneltui settings: only the command line.
    assert allow_ops_advice("conv2d", "gpumode") == "--allow-ops conv2d"
