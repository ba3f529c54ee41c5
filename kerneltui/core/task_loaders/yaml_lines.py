"""Reading a YAML settings file with the line of every key (PyYAML's node tree keeps them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kerneltui.core.task_error import TaskError, task_text
from kerneltui.core.task_loaders.fields import KeyPath, SettingsFile


def read_yaml(path: Path) -> tuple[Any, SettingsFile]:
    """The parsed document and where each key path (``("tests", 2, "seed")``) is written."""
    import yaml

    try:
        text = task_text(path)
    except OSError as exc:
        raise TaskError(f"cannot read it: {exc.strerror}", path) from exc
    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise TaskError(f"malformed YAML: {problem}", path, mark.line + 1 if mark else None) from exc
    lines: dict[KeyPath, int] = {}
    if root is not None:
        _walk(root, (), lines)
    return data, SettingsFile(path, lines)


def _walk(node: Any, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = (*path, str(key.value))
            lines.setdefault(name, key.start_mark.line + 1)
            _walk(value, name, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.setdefault((*path, i), item.start_mark.line + 1)
            _walk(item, (*path, i), lines)
