"""The import rules of docs/design.md §2, one test per rule: the domain core imports none
of the parts built on it, the receiver and the worker know only the core, and the sandbox
(a stand-in for the provider) knows nothing of the product. A new upward import fails
here; the fix is to move the code, not to exempt it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imports_of(package: Path) -> dict[str, set[str]]:
    """Each top-level package imported anywhere below ``package`` (absolute imports, also
    inside functions), with the files that import it as ``path:line``."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            where = f"{path.relative_to(package.parent)}:{node.lineno}"
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(where)
    return found


def violations(package: str, forbidden: set[str], root: Path = ROOT) -> list[str]:
    imported = imports_of(root / package)
    return sorted(
        f"{where} imports {name}"
        for name in forbidden & imported.keys()
        for where in imported[name]
    )


def test_reconcile_imports_none_of_the_layers_built_on_it() -> None:
    assert (
        violations(
            "reconcile",
            {"receiver", "worker", "pixrecon", "sandbox", "migrations", "dashboard"},
        )
        == []
    )


def test_receiver_imports_only_the_core() -> None:
    assert (
        violations("receiver", {"worker", "pixrecon", "sandbox", "migrations", "dashboard"}) == []
    )


def test_worker_imports_only_the_core() -> None:
    assert (
        violations("worker", {"receiver", "pixrecon", "sandbox", "migrations", "dashboard"}) == []
    )


def test_sandbox_imports_nothing_of_the_product() -> None:
    product = {"reconcile", "receiver", "worker", "pixrecon", "migrations", "dashboard"}
    assert violations("sandbox", product) == []


def test_migrations_import_only_the_core() -> None:
    assert (
        violations("migrations", {"receiver", "worker", "pixrecon", "sandbox", "dashboard"}) == []
    )


def test_dashboard_imports_only_the_core() -> None:
    """The dashboard reads and acts through ``reconcile`` (formats, cases, queries) like the
    receiver does; only ``pixrecon/node.py`` knows both and mounts one beside the other."""
    assert (
        violations("dashboard", {"receiver", "worker", "pixrecon", "sandbox", "migrations"}) == []
    )


def test_an_upward_import_is_caught_wherever_it_hides(tmp_path: Path) -> None:
    package = tmp_path / "reconcile" / "deep"
    package.mkdir(parents=True)
    (package / "module.py").write_text(
        "import json\n\n\ndef late() -> None:\n    from worker.jobs import PeriodicJobs\n",
        encoding="utf-8",
    )
    assert violations("reconcile", {"worker"}, root=tmp_path) == [
        "reconcile/deep/module.py:5 imports worker"
    ]
