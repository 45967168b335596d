"""docs/ARCHITECTURE.md's layer table stays true: every module it names exists in that layer's
folder, and every row names every module its folder holds besides the tasks' own files (which
the rows cover as "one file per task") and `__main__.py`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mmnp.registry import BUILTIN

ROOT = Path(__file__).resolve().parents[1]
UNNAMED = {f"{task}.py" for task in BUILTIN} | {"__init__.py", "__main__.py"}


def _layer_rows() -> dict[str, str]:
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)/` \| `[\w.]+` \| (.*) \|$", text, re.M)}


@pytest.mark.parametrize("folder", sorted(_layer_rows()))
def test_layer_rows_name_only_real_modules(folder):
    named = set(re.findall(r"`([\w/]+\.py)`", _layer_rows()[folder]))
    missing = sorted(n for n in named if not (ROOT / folder / n).exists())
    assert not missing, f"docs/ARCHITECTURE.md names {missing} in {folder}/, which has no such file"
    present = {p.name for p in (ROOT / folder).glob("*.py")} - UNNAMED
    assert present <= named, f"docs/ARCHITECTURE.md's {folder}/ row does not name {sorted(present - named)}"
