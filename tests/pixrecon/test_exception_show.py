"""``pixrecon exceptions show ID``: one case in full at the command line, as the
dashboard's case page gives it — references, amounts, why, what to do, its deadline,
what decided it and its history."""

from __future__ import annotations

import json
import re
import shutil
from datetime import timedelta
from pathlib import Path

from reconcile.db import create_db_engine
from reconcile.nightly import reconcile_day
from tests.cli_support import clean_env, run_pixrecon
from tests.reconcile.day_book import DayBook
from tests.reconcile.test_day_verdict import AFTER, PAST, _clean_day


def _day(tmp_path: Path, template: Path) -> tuple[dict[str, str], dict[str, int]]:
    path = tmp_path / "show.db"
    shutil.copy(template, path)
    url = f"sqlite:///{path}"
    engine = create_db_engine(url)
    book = DayBook(engine, PAST)
    _clean_day(book)
    # Notified and confirmed, never booked: an exception naming the Pix and its payer.
    e2e = book.pix(4_200, "09:00", payer={"cpf": "39053344705", "nome": "Maria da Silva"})
    book.confirm_all_pix()
    book.infraction(
        {
            "id": "med-shown",
            "status": "OPEN",
            "amount": "80.00",
            "blockedAmount": "50.00",
            "createdAt": book.at("10:00").isoformat(),
            "analysisDeadline": book.at("18:00", PAST + timedelta(days=6)).isoformat(),
        }
    )
    book.confirm_all_infractions()
    result = reconcile_day(engine, PAST, now=AFTER)
    engine.dispose()
    ids = {e["ref"]: e["case_id"] for e in result.report["exceptions"]}
    return clean_env(database_url=url), {"med": ids["med-shown"], "pix": ids[e2e]}


def test_show_gives_a_case_in_full_as_text_and_json(tmp_path: Path, sqlite_template: Path) -> None:
    env, ids = _day(tmp_path, sqlite_template)
    med = str(ids["med"])
    acked = run_pixrecon("exceptions", "ack", med, "--note", "answering", env=env, cwd=tmp_path)
    assert acked.returncode == 0, acked.stderr

    shown = run_pixrecon("exceptions", "show", med, "--format", "json", env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    case = json.loads(shown.stdout)
    assert (case["case_id"], case["subject"], case["ref"]) == (
        ids["med"],
        "infraction",
        "med-shown",
    )
    assert (case["status"], case["state"], case["date"]) == (
        "open_case",
        "acknowledged",
        "2026-03-10",
    )
    assert case["expected_cents"] == 8_000
    assert case["med_deadline_at"].startswith("2026-03-16T21:00:00")
    assert "(R$ 50,00 of it already blocked in the account)" in case["action"]
    assert case["reason"] == "an open MED case: the amount is at risk"
    decided = [item for item in case["decided_by"]["inbox_items"] if item["decided"]]
    assert [item["kind"] for item in decided] == ["accounts.infraction"]
    assert [(e["action"], e["note"]) for e in case["history"]] == [("acknowledge", "answering")]

    text = run_pixrecon("exceptions", "show", med, env={**env, "COLUMNS": "80"}, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    # At 80 columns a notification's key is on one line, whole, as a person searches it.
    keys = [line for line in text.stdout.splitlines() if "accounts:INFRACTION:" in line]
    assert keys
    assert all(re.search(r"accounts:INFRACTION:\S+:\S+", line) for line in keys), keys
    words = " ".join(text.stdout.split())
    for said in (
        f"Case {ids['med']}",
        "day │ 10/03/2026",
        "MED deadline │ 16/03/2026 18:00 — passed",
        "expected │ R$ 80,00",
        "Notifications",
        "decided it",
        "History",
        "answering",
    ):
        assert said in words, said

    pix = run_pixrecon(
        "exceptions", "show", str(ids["pix"]), "--format", "json", env=env, cwd=tmp_path
    )
    listed = json.loads(
        run_pixrecon("exceptions", "--all", "--format", "json", env=env, cwd=tmp_path).stdout
    )
    (as_listed,) = [row for row in listed if row["case_id"] == ids["pix"]]
    one = json.loads(pix.stdout)
    # The references and amounts as the exceptions list gives them, payer masked.
    for key in ("end_to_end_id", "txid", "payer_document", "payer_name", "actual_cents"):
        assert one[key] == as_listed[key], key
    assert one["payer_document"] == "*********05"
    assert "39053344705" not in pix.stdout

    unknown = run_pixrecon("exceptions", "show", "999999", env=env, cwd=tmp_path)
    assert unknown.returncode == 2
    # One line (a JSON log line where stderr is not a terminal), and nothing else.
    assert len(unknown.stderr.strip().splitlines()) == 1, unknown.stderr
    assert "no exception case 999999" in unknown.stderr
    assert unknown.stdout == ""
