"""Reading YAML spec files into plain mappings, with errors that name the file and the line."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..errors import SpecError


def load_yaml(path: Path) -> dict:
    """Parse a YAML file into a mapping; errors name the file and the line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(str(path), "", f"cannot read the file: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise SpecError(str(path), "", f"not valid YAML{line}: {problem}") from None
    if not isinstance(data, dict):
        raise SpecError(str(path), "", "expected a mapping of fields at the top level")
    return data
