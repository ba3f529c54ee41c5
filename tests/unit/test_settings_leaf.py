"""The settings are a leaf: loading the config imports no part of kerneltui above it, and the
modules of ``kerneltui.settings`` import only each other."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import kerneltui.settings

SETTINGS_DIR = Path(kerneltui.settings.__file__).parent
# What loading and checking every section may bring in: the package's root, the config, the XDG
# locations, the file reader (bytes that are not UTF-8 named at their line) and the schemas.
ALLOWED = ("kerneltui", "kerneltui.config", "kerneltui.paths", "kerneltui.files")


def test_loading_the_config_imports_nothing_above_the_settings(tmp_path: Path) -> None:
    config_file = tmp_path / "config.toml"
    config_file.write_text('[ui]\ntheme = "kerneltui-light"\n[sessions]\nrecord = false\n'
                           '[remote]\nport = 22\n[benchmark]\nmin_runs = 12\n[keys]\nrun = "ctrl+r"\n')
    code = ("import json, sys\n"
            "from pathlib import Path\n"
            "from kerneltui.config import load_config\n"
            f"cfg = load_config(Path({str(config_file)!r}))\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('kerneltui'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    above = [m for m in loaded if m not in ALLOWED and not m.startswith("kerneltui.settings")]
    assert "kerneltui.config" in loaded
    assert above == [], f"loading the config imported {above}"


def test_settings_modules_import_only_the_standard_library_and_each_other() -> None:
    offenders = []
    for module in sorted(SETTINGS_DIR.glob("*.py")):
        tree = ast.parse(module.read_text(), filename=str(module))
        for node in ast.walk(tree):  # inside functions and under TYPE_CHECKING too
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom) and node.level:
                continue  # relative imports stay inside the package
            for name in names:
                if name.split(".")[0] == "kerneltui" and not name.startswith("kerneltui.settings"):
                    offenders.append(f"{module.name}:{node.lineno} imports {name}")
    assert offenders == []
