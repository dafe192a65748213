"""A ``PIXRECON_*`` variable no setting reads is warned about, once, with the setting its
name is closest to — a misspelt setting is otherwise silently left at its default."""

from __future__ import annotations

from pathlib import Path

from reconcile.settings import NOT_SETTINGS, setting_variables, unknown_variables
from tests.cli_support import clean_env, run_pixrecon


def test_unknown_variables_name_the_closest_setting() -> None:
    environ = {
        "PIXRECON_DATABSE_URL": "postgresql://db/pixrecon",
        "PIXRECON_ZZZ": "1",
        "PIXRECON_DATABASE_URL": "sqlite://",
        "pixrecon_log_json": "0",  # settings are read in any case
        "PIXRECON_PIX_API_URL": "http://x",  # a former name, still read
        "PIXRECON_TEST_POSTGRES_URL": "postgresql://db/test",
        "PATH": "/usr/bin",
    }
    assert unknown_variables(environ) == [
        ("PIXRECON_DATABSE_URL", "PIXRECON_DATABASE_URL"),
        ("PIXRECON_ZZZ", None),
    ]


def test_the_allow_list_holds_no_setting() -> None:
    # A setting in it would never be warned about when misspelt the other way round.
    assert not NOT_SETTINGS & setting_variables()


def test_every_command_warns_once_per_unknown_variable(tmp_path: Path) -> None:
    env = clean_env(
        log_json="0",
        databse_url=f"sqlite:///{tmp_path / 'typo.db'}",
        worker_thread="2",
    )
    env["PIXRECON_TEST_REDIS_URL"] = "redis://127.0.0.1:6379/15"
    env["PIXRECON_BENCH_DATABASE_URL"] = "sqlite://"
    result = run_pixrecon("events", cwd=tmp_path, env=env)
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: PIXRECON_DATABSE_URL is set but is no pixrecon setting, so it is ignored: "
        "did you mean PIXRECON_DATABASE_URL? (README, Configuration)",
        "warning: PIXRECON_WORKER_THREAD is set but is no pixrecon setting, so it is "
        "ignored: did you mean PIXRECON_WORKER_THREADS? (README, Configuration)",
    ], result.stderr
    # Not refused for it: the command goes on with the default, here to its own error.
    assert "there is no database at" in result.stderr
    assert "Traceback" not in result.stderr
