"""``pixrecon prune``: a dry run that changes nothing, a prune that says what it did per
table, the setting as the default period, and one line with exit code 2 when it cannot
run."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import select
from sqlmodel import col

from migrations.apply import upgrade
from reconcile.db import create_db_engine, session_scope
from reconcile.models import OperatorAction
from tests.cli_support import clean_env, run_pixrecon
from tests.reconcile.test_retention import build_world, snapshot


def test_the_command_prunes_and_says_what_per_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'prune.db'}"
    engine = create_db_engine(url)
    upgrade(engine)
    build_world(engine)
    env = clean_env(database_url=url, retention_days="90")

    def run(*args: str) -> tuple[int, str, str]:
        done = run_pixrecon("prune", *args, cwd=tmp_path, env=env)
        return done.returncode, done.stdout, done.stderr

    before = snapshot(engine)
    code, out, err = run("--dry-run", "--format", "json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["dry_run"] is True
    assert shown["retention_days"] == 90
    assert shown["tables"]["inbox_item"] == {"deleted": 2, "raw_removed": 1, "masked": 0}
    assert shown["tables"]["pix_received"]["masked"] == 1
    assert shown["kept"]["needs_a_person"] == 3
    assert snapshot(engine) == before

    code, out, err = run()
    assert code == 0, err
    said = " ".join(out.split())
    assert "Retention 90 days: data received before" in said
    assert "inbox_item" in said
    assert "pix_received" in said
    assert "rows were deleted, emptied or masked" in said
    assert "need a person" in said
    assert "Traceback" not in err

    # The period comes from the option before the setting; nothing is left to do now.
    code, out, err = run("--days", "120", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["total"] == 0
    code, out, err = run()
    assert code == 0, err
    assert "nothing to prune" in " ".join(out.split())

    with session_scope(engine) as session:
        recorded = (
            session.execute(select(OperatorAction).order_by(col(OperatorAction.id))).scalars().all()
        )
    assert [(a.action, a.dry_run) for a in recorded] == [
        ("prune", True),
        ("prune", False),
        ("prune", False),
        ("prune", False),
    ]
    assert recorded[0].count == recorded[1].count > 0
    assert all(a.actor.startswith("cli:") for a in recorded)
    engine.dispose()


def test_bad_options_and_no_database_exit_2_with_one_line(tmp_path: Path) -> None:
    env = clean_env(database_url=f"sqlite:///{tmp_path / 'missing.db'}")
    for args, words in (
        (("--days", "0"), "--days"),
        (("--days", "many"), "--days"),
        (("--format", "xml"), "--format"),
        ((), "missing.db"),
    ):
        done = run_pixrecon("prune", *args, cwd=tmp_path, env=env)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert words in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "missing.db").exists()

    unreachable = clean_env(database_url="postgresql+psycopg://nobody@127.0.0.1:1/none")
    done = run_pixrecon("prune", cwd=tmp_path, env=unreachable)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr


def test_a_period_reaching_before_any_date_is_refused_as_the_setting_is(tmp_path: Path) -> None:
    """``--days`` bounded as ``PIXRECON_RETENTION_DAYS`` is: a longer period reaches before
    any date, and once ended in an unexpected error."""
    url = f"sqlite:///{tmp_path / 'prune.db'}"
    engine = create_db_engine(url)
    upgrade(engine)
    engine.dispose()
    env = clean_env(database_url=url)
    for days in ("800000", "99999999999"):
        done = run_pixrecon("prune", "--dry-run", "--days", days, cwd=tmp_path, env=env)
        assert done.returncode == 2, done.stderr
        said = " ".join(done.stderr.split())
        assert "Invalid value for '--days': Input should be less than or equal to 36500" in said
        assert "unexpected error" not in said
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = run_pixrecon("prune", "--dry-run", "--days", "36500", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
