"""``pixrecon events`` for people: times in São Paulo, to the second, whole at 80 columns;
``--format json`` keeps ISO 8601 in UTC for programs (README, "Command line")."""

from __future__ import annotations

import json
import shutil
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconcile.db import create_db_engine, session_scope
from reconcile.inbox import Delivery, NewItem, dump_json, store_deliveries
from tests.cli_support import clean_env, run_pixrecon
from tests.factories import pix

# 18:25:04 UTC is 15:25:04 in São Paulo (UTC-3, no daylight saving since 2019).
RECEIVED = datetime(2026, 11, 26, 18, 25, 4, 527859, tzinfo=UTC)
SAO_PAULO = "26/11/2026 15:25:04"


def _fits_80_columns_whole(text: str, times: int) -> None:
    """At 80 columns the time may go under its date, but nothing is cut."""
    assert all(len(line) <= 80 for line in text.splitlines()), text
    assert "…" not in text, text
    assert (text.count("26/11/2026"), text.count("15:25:04")) == (times, times), text
    assert "2026-11-26" not in text, text
    assert "+00:00" not in text, text


@pytest.fixture
def stored(tmp_path: Path, sqlite_template: Path) -> tuple[dict[str, str], int, str]:
    """A database with one Pix a webhook delivered at ``RECEIVED``: (environment, item id,
    its endToEndId)."""
    path = tmp_path / "events.db"
    shutil.copy(sqlite_template, path)
    url = f"sqlite:///{path}"
    engine = create_db_engine(url)
    body = pix()
    e2e = str(body["endToEndId"])
    delivery = Delivery(
        route="/webhooks/qrcode/pix",
        remote_addr="203.0.113.9",
        headers={},
        body=dump_json({"pix": [body]}).encode(),
        items=[NewItem(kind="pix", key=f"pix:{e2e}", payload=dump_json(body))],
    )
    with session_scope(engine) as session:
        (result,) = store_deliveries(session, [delivery], now=RECEIVED)
    engine.dispose()
    # A terminal of 80 columns, the narrowest the tables are made for.
    env = {**clean_env(database_url=url, log_json="0"), "COLUMNS": "80"}
    return env, result.item_ids[0], e2e


def test_the_listing_shows_sao_paulo_time_to_the_second_at_80_columns(
    stored: tuple[dict[str, str], int, str], tmp_path: Path
) -> None:
    env, _, _ = stored
    listed = run_pixrecon("events", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    _fits_80_columns_whole(listed.stdout, 1)
    wide = run_pixrecon("events", cwd=tmp_path, env={**env, "COLUMNS": "160"})
    assert SAO_PAULO in wide.stdout, wide.stdout

    as_json = run_pixrecon("events", "--format", "json", cwd=tmp_path, env=env)
    (item,) = json.loads(as_json.stdout)
    assert item["received_at"] == RECEIVED.isoformat()


def test_a_listing_wider_than_the_terminal_keeps_its_edge_and_time_at_80_columns(
    stored: tuple[dict[str, str], int, str], tmp_path: Path
) -> None:
    """A long kind beside the key, and long figures in the short columns (a busy inbox's
    ids and repeat counts), leave the columns that fold as narrow as the time's: the table
    must still fit, not lose its right edge, and the time with it, to the terminal's."""
    env, item_id, _ = stored
    with sqlite3.connect(tmp_path / "events.db") as db:
        db.execute(
            "UPDATE inbox_item SET kind = 'accounts.infraction', webhook_count = 2000000000 "
            "WHERE id = ?",
            (item_id,),
        )
    listed = run_pixrecon("events", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    _fits_80_columns_whole(listed.stdout, 1)
    lines = listed.stdout.splitlines()
    assert all(line[-1] in "┓┃┩│┘" for line in lines), listed.stdout


def test_by_reference_items_and_deliveries_show_sao_paulo_time(
    stored: tuple[dict[str, str], int, str], tmp_path: Path
) -> None:
    env, _, e2e = stored
    found = run_pixrecon("events", "--ref", e2e, cwd=tmp_path, env=env)
    assert found.returncode == 0, found.stderr
    # Once for the item, once for the delivery that carried it.
    _fits_80_columns_whole(found.stdout, 2)
    # The key folds onto lines of its own column, whole.
    items_table = found.stdout.split("└")[0]
    key = [row.split("│")[4].strip() for row in items_table.splitlines() if row[:1] == "│"]
    assert "".join(key) == f"pix:{e2e}", found.stdout

    as_json = run_pixrecon("events", "--ref", e2e, "--format", "json", cwd=tmp_path, env=env)
    (item,) = json.loads(as_json.stdout)
    assert item["deliveries"][0]["received_at"] == RECEIVED.isoformat()


def test_show_gives_a_person_sao_paulo_time_and_a_program_json(
    stored: tuple[dict[str, str], int, str], tmp_path: Path
) -> None:
    env, item_id, e2e = stored
    shown = run_pixrecon("events", "show", str(item_id), cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    assert SAO_PAULO in shown.stdout
    assert "+00:00" not in shown.stdout
    assert f'"endToEndId": "{e2e}"' in shown.stdout  # the payload, whole

    as_json = run_pixrecon("events", "show", str(item_id), "-f", "json", cwd=tmp_path, env=env)
    view = json.loads(as_json.stdout)
    assert view["received_at"] == RECEIVED.isoformat()
    assert view["payload"]["endToEndId"] == e2e


def test_show_masks_the_payers_document_and_name_in_both_forms(
    stored: tuple[dict[str, str], int, str], tmp_path: Path
) -> None:
    """The payload is personal data as it came (``tests.factories.pix``: CPF 12345678909,
    "Fulana de Tal"): shown, it is masked as the logs and the dashboard mask it."""
    env, item_id, e2e = stored
    shown = run_pixrecon("events", "show", str(item_id), cwd=tmp_path, env=env)
    as_json = run_pixrecon("events", "show", str(item_id), "-f", "json", cwd=tmp_path, env=env)
    for result in (shown, as_json):
        assert result.returncode == 0, result.stderr
        assert "12345678909" not in result.stdout, result.stdout
        assert "Fulana" not in result.stdout, result.stdout
        assert "*********09" in result.stdout, result.stdout
    payer = json.loads(as_json.stdout)["payload"]["pagador"]
    assert payer == {"cpf": "*********09", "nome": "F***** d* T**"}
    # Everything else as it came: the keys a person compares with the provider's.
    assert json.loads(as_json.stdout)["payload"]["endToEndId"] == e2e


def test_a_document_typed_into_an_ignore_reason_is_never_shown(
    stored: tuple[dict[str, str], int, str], tmp_path: Path
) -> None:
    """A reason is free text, as a case's note is: a CPF typed into it is stored masked,
    and one stored before it was masked is masked when shown."""
    env, item_id, _ = stored
    ignored = run_pixrecon(
        *("events", "ignore", str(item_id)),
        *("--reason", "cliente CPF 123.456.789-09 pagou por fora"),
        cwd=tmp_path,
        env=env,
    )
    assert ignored.returncode == 0, ignored.stderr
    shown = run_pixrecon("events", "show", str(item_id), "-f", "json", cwd=tmp_path, env=env)
    assert json.loads(shown.stdout)["error"] == "ignored: cliente CPF *********09 pagou por fora"

    url = env["PIXRECON_DATABASE_URL"]
    engine = create_db_engine(url)
    with session_scope(engine) as session:
        from reconcile.models import InboxItem

        item = session.get(InboxItem, item_id)
        assert item is not None
        item.error = "ignored: CNPJ 11.222.333/0001-81 confirmou"
    engine.dispose()
    for args in (("events", "show", str(item_id)), ("events", "--format", "json")):
        result = run_pixrecon(*args, cwd=tmp_path, env={**env, "COLUMNS": "200"})
        assert result.returncode == 0, result.stderr
        assert "11.222.333/0001-81" not in result.stdout, result.stdout
        assert "************81" in result.stdout, result.stdout
