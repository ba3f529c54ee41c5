"""Task loading: the three formats, and bad input reported with file and line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kerneltui.core.task import TaskError, load_task
from tests.conftest import DATA, EXAMPLES


def copy_example(tmp_path: Path, name: str = "vector_add") -> Path:
    dest = tmp_path / name
    shutil.copytree(EXAMPLES / name, dest, ignore=shutil.ignore_patterns("__pycache__", ".kerneltui"))
    return dest


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


def test_malformed_toml_names_file_and_line(tmp_path):
    root = copy_example(tmp_path)
    text = (root / "task.toml").read_text().replace('backend = "triton"', 'backend = "triton')
    (root / "task.toml").write_text(text)
    with pytest.raises(TaskError) as err:
        load_task(root)
    assert err.value.file and err.value.file.endswith("task.toml")
    assert err.value.line == 6
    assert "malformed TOML" in str(err.value)


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
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace(*edit))
    with pytest.raises(TaskError, match=message):
        load_task(root)


def test_not_a_task(tmp_path):
    with pytest.raises(TaskError, match="not a task directory"):
        load_task(tmp_path)
    with pytest.raises(TaskError, match="no such task"):
        load_task(tmp_path / "missing")


def test_kernelbench_problem_file():
    task = load_task(DATA / "kernelbench" / "19_ScaledReLU.py")
    assert task.format == "kernelbench"
    assert task.kernel_file == "19_ScaledReLU_new.py"
    assert task.backend == "triton"
    assert task.tolerance.atol == 1e-2
    assert task.state_dir.name == "19_ScaledReLU"


def test_kernelbench_needs_a_candidate(tmp_path):
    shutil.copy(DATA / "kernelbench" / "19_ScaledReLU.py", tmp_path / "19_ScaledReLU.py")
    with pytest.raises(TaskError, match="pass --kernel FILE"):
        load_task(tmp_path / "19_ScaledReLU.py")


def test_kernelbench_candidate_without_modelnew(tmp_path):
    shutil.copy(DATA / "kernelbench" / "19_ScaledReLU.py", tmp_path / "19_ScaledReLU.py")
    (tmp_path / "19_ScaledReLU_new.py").write_text("class Something:\n    pass\n")
    with pytest.raises(TaskError, match="no class ModelNew"):
        load_task(tmp_path / "19_ScaledReLU.py")


def test_gpumode_directory():
    task = load_task(DATA / "gpumode" / "vectorscale")
    assert task.format == "gpumode"
    assert task.kernel_file == "submission.py"
    assert [c.seed for c in task.tests] == [4242, 5236, 1001]
    assert task.tests[1].params == {"size": 127}
    assert task.timeouts.correctness == 120
    assert task.extra["has_check_implementation"]
    assert {"task.py", "utils.py", "reference.py", "submission.py"} <= set(task.source_files())


def test_gpumode_malformed_yaml(tmp_path):
    dest = tmp_path / "p"
    shutil.copytree(DATA / "gpumode" / "vectorscale", dest)
    (dest / "task.yml").write_text("tests:\n  - {size: 1\n")
    with pytest.raises(TaskError, match="malformed YAML") as err:
        load_task(dest)
    assert err.value.line is not None
