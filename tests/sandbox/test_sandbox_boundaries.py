"""Layering (DESIGN §2): the sandbox and the provider client stay independent."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imported_top_levels(package: Path) -> set[str]:
    names: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("sandbox", {"receiver", "worker", "reconcile", "pixrecon"}),
        ("reconcile/provider", {"receiver", "worker", "sandbox", "pixrecon"}),
    ],
)
def test_package_does_not_import_its_neighbours(package: str, forbidden: set[str]) -> None:
    assert _imported_top_levels(ROOT / package) & forbidden == set()
