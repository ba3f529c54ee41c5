"""The SASS and MLIR Pygments lexers on real listings, and their entry-point registration."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from pygments.token import Comment, Error, Keyword, Name, Number

from kerneltui.core.asm.lexers import MlirLexer, NvidiaSassLexer, lexer_for_stage
from tests.unit.asm_cases import ALL_CASES, TRITON_CASES, case_dir, read

ROOT = Path(__file__).resolve().parents[2]


def _tokens(lexer, text):
    return [(tok, val) for tok, val in lexer.get_tokens(text) if val.strip()]


def _recorded(cases: list[str], files: list[str]) -> list[tuple[str, str]]:
    return [(c, f) for c in cases for f in files if (case_dir(c) / f).exists()]


@pytest.mark.parametrize("name,listing", _recorded(ALL_CASES, ["nvdisasm_g.sass", "nvdisasm_gp.sass", "cuobjdump.sass"]))
def test_sass_lexer_reads_every_listing_without_errors(name, listing):
    tokens = _tokens(NvidiaSassLexer(), read(name, listing))
    assert not [v for t, v in tokens if t is Error]


def test_sass_token_kinds():
    tokens = _tokens(NvidiaSassLexer(), read("triton_matmul_sm90a", "nvdisasm_g.sass"))
    kinds = {}
    for tok, val in tokens:
        kinds.setdefault(val, tok)
    assert kinds["HGMMA"] is Name.Builtin
    assert kinds["LDGSTS"] is Keyword.Reserved
    assert kinds["BAR"] is Keyword
    assert kinds["R0"] is Name.Variable
    assert kinds["@!P0"] is Keyword.Pseudo or kinds.get("@P0") is Keyword.Pseudo
    assert any(t is Name.Attribute and v == ".BYPASS" for t, v in tokens)
    assert any(t is Number.Hex for t, v in tokens)
    assert any(t is Comment.Single and v.startswith("//## File") for t, v in tokens)


@pytest.mark.parametrize("name,stage", _recorded(TRITON_CASES, ["kernel.ttir", "kernel.ttgir"]))
def test_mlir_lexer_reads_triton_ir_without_errors(name, stage):
    tokens = _tokens(MlirLexer(), read(name, stage))
    assert not [v for t, v in tokens if t is Error]


def test_mlir_token_kinds():
    tokens = _tokens(MlirLexer(), read("triton_vector_add_mod16", "kernel.ttgir"))
    by_value = {}
    for tok, val in tokens:
        by_value.setdefault(val, tok)
    assert by_value["tt.load"] is Name.Builtin
    assert by_value["%x_ptr"] is Name.Variable
    assert by_value["@add_kernel"] is Name.Function
    assert by_value["#blocked"] is Name.Constant
    assert by_value["i32"] is Keyword.Type
    # Locations are one muted run each, nested parentheses included.
    locs = [v for t, v in tokens if t is Comment.Preproc]
    assert "loc(" in locs and locs.count("(") == locs.count(")") - locs.count("loc(")


def test_lexer_for_every_stage():
    assert isinstance(lexer_for_stage("sass"), NvidiaSassLexer)
    assert isinstance(lexer_for_stage("ttgir"), MlirLexer)
    assert lexer_for_stage("ptx").name == "PTX"
    assert lexer_for_stage("llir").name == "LLVM"
    assert lexer_for_stage("cuda").name == "CUDA"


def test_entry_points_declared_in_pyproject_resolve():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = project["project"]["entry-points"]["pygments.lexers"]
    assert declared == {"nvsass": "kerneltui.core.asm.lexers:NvidiaSassLexer", "mlir": "kerneltui.core.asm.lexers:MlirLexer"}


def test_pygments_finds_the_lexers_through_the_entry_points(tmp_path):
    """Install only the entry-point metadata (as pip would) and ask Pygments by name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    lines = ["[pygments.lexers]"] + [f"{k} = {v}" for k, v in project["project"]["entry-points"]["pygments.lexers"].items()]
    dist = tmp_path / "kerneltui_lexers_probe-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kerneltui-lexers-probe\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")
    code = ("from pygments.lexers import get_lexer_by_name, get_lexer_for_filename; "
            "print(type(get_lexer_by_name('nvsass')).__module__, type(get_lexer_by_name('ttgir')).__name__, "
            "type(get_lexer_for_filename('k.ttgir')).__name__)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["kerneltui.core.asm.lexers", "MlirLexer", "MlirLexer"]
