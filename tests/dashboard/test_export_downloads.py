"""The day page's download links (``/dashboard/export``, docs/exports.md): behind the
sign-in, each answers the file ``pixrecon export`` would write, and a download that cannot
be made answers an error page instead of a file."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import httpx
from sqlalchemy import Engine

from reconcile.cases import set_state
from reconcile.db import session_scope
from reconcile.formats import br_date
from reconcile.models import CaseState
from reconcile.timeutil import business_today
from tests.conftest import RunningNode
from tests.dashboard.support import DAY, seed_case, sign_in
from tests.reconcile.day_book import DayBook


def _links(html: str) -> dict[str, str]:
    found = re.findall(r'href="([^"]+)" data-download="([^"]+)"', html)
    return {name: href.replace("&amp;", "&") for href, name in found}


def test_the_day_page_links_every_download_and_each_answers_its_file(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    case_id = seed_case(engine)
    book = DayBook(engine, DAY)
    book.line("PIX_RECEIVED", 901, "10:00", credit=True, endToEndId="E1", feeAmount="0.99")
    client = sign_in(dashboard_node.url)
    page = client.get(f"/dashboard/?date={DAY.isoformat()}")
    assert page.status_code == 200
    links = _links(page.text)
    assert set(links) == {
        "exceptions-csv",
        "exceptions-excel",
        "exceptions-jsonl",
        "movements-csv",
        "movements-excel",
        "movements-jsonl",
        "statement-ofx",
        "statement-excel",
    }
    answers = {name: client.get(href) for name, href in links.items()}
    assert {name: a.status_code for name, a in answers.items()} == dict.fromkeys(links, 200)

    plain = answers["exceptions-csv"]
    assert plain.headers["content-type"] == "text/csv; charset=utf-8"
    assert plain.headers["content-disposition"] == (
        f'attachment; filename="exceptions-{DAY.isoformat()}.csv"'
    )
    (row,) = csv.DictReader(io.StringIO(plain.content.decode("utf-8")))
    assert (row["key"], row["case_id"]) == (
        f"exc:{DAY.isoformat()}:charge:cob:tx1:overpaid",
        str(case_id),
    )
    excel = answers["exceptions-excel"].content
    assert excel.startswith(b"\xef\xbb\xbf")
    (row,) = csv.DictReader(io.StringIO(excel.decode("utf-8-sig")), delimiter=";")
    assert row["date"] == br_date(DAY)
    assert answers["exceptions-jsonl"].headers["content-type"].startswith("application/x-ndjson")

    ofx = answers["statement-ofx"]
    assert ofx.headers["content-type"] == "application/x-ofx"
    assert "<FITID>E1:fee</FITID>" in ofx.text
    assert "<TRNAMT>-0.99</TRNAMT>" in ofx.text


def test_downloads_need_a_sign_in_and_a_possible_export(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    seed_case(engine)
    url = dashboard_node.url
    here = f"/dashboard/export?date={DAY.isoformat()}&kind=exceptions&format=csv"
    assert httpx.get(url + here).status_code == 303
    client = sign_in(url)
    assert client.get(here).status_code == 200
    refused = {
        "kind=exceptions&format=ofx": 400,
        "kind=movements&format=jsonl&excel=1": 400,
        "kind=everything&format=csv": 400,
        "kind=statement&format=ofx": 404,  # nothing booked, no balance known
    }
    for query, status in refused.items():
        answer = client.get(f"/dashboard/export?date={DAY.isoformat()}&{query}")
        assert answer.status_code == status, (query, answer.text)
    never = client.get("/dashboard/export?date=2020-01-01&kind=movements&format=csv")
    assert never.status_code == 404
    assert "pixrecon reconcile --date 2020-01-01" in never.text
    assert client.get("/dashboard/export?date=not-a-day&kind=movements").status_code == 400


def test_a_statement_nobody_read_is_not_handed_out_as_a_quiet_day(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    # A balance is known from the day before, so an OFX could be made: empty, it would
    # import as a day without movement.
    DayBook(engine, DAY).line("PIX_RECEIVED", 901, "10:00", credit=True, endToEndId="E1")
    unread = (DAY + timedelta(days=1)).isoformat()
    client = sign_in(dashboard_node.url)
    for fmt in ("format=ofx", "format=csv&excel=1", "format=jsonl"):
        answer = client.get(f"/dashboard/export?date={unread}&kind=statement&{fmt}")
        assert answer.status_code == 404, (fmt, answer.text)
        assert "does not say that nothing moved" in answer.text
    read = client.get(f"/dashboard/export?date={DAY.isoformat()}&kind=statement&format=ofx")
    assert read.status_code == 200
    assert "<FITID>" in read.text


def test_what_cannot_exist_answers_an_error_page_never_a_500(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    """A day to come, a case id or a page beyond the database's integers."""
    case_id = seed_case(engine)
    client = sign_in(dashboard_node.url)
    later = (business_today() + timedelta(days=2)).isoformat()
    ahead = client.get(f"/dashboard/export?date={later}&kind=statement&format=csv")
    assert ahead.status_code == 404
    assert "has not begun yet" in ahead.text
    huge = "9" * 23
    assert client.get(f"/dashboard/exceptions/{huge}").status_code == 404
    beyond = client.get(f"/dashboard/exceptions?page={huge}")
    assert beyond.status_code == 200
    assert "is past the last one" in beyond.text
    assert "page=1" in beyond.text, "a way back to the cases"
    # Dates at the edges of what a date holds, and filters mistyped: told, not guessed.
    for query in [
        "recent?until=9999-12-31",
        "recent?until=0001-01-01",
        "recent?hours=9999-12-31",
        "?date=0001-01-01",
        "recent?days=abc",
        "recent?days=5",
        "exceptions?state=resolvd",
        "exceptions?sort=xyz",
        "exceptions?subject=nonsense",
        "exceptions?page=abc",
        "exceptions?page=-1",
    ]:
        answer = client.get(f"/dashboard/{query}")
        assert answer.status_code == 400, (query, answer.text[:300])
    assert "one of remaining" in client.get("/dashboard/exceptions?state=resolvd").text
    assert client.get("/dashboard/exceptions?subject=charge").status_code == 200
    # The pages still answer afterwards, on the same connection pool.
    assert client.get(f"/dashboard/exceptions/{case_id}").status_code == 200


def test_the_former_download_keeps_a_note_from_running_as_a_formula(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    case_id = seed_case(engine)
    with session_scope(engine) as session:
        set_state(session, case_id, CaseState.ACKNOWLEDGED, "=1+1 refund pending", actor="t")
    client = sign_in(dashboard_node.url)
    answer = client.get(f"/dashboard/exceptions.csv?date={DAY.isoformat()}")
    (row,) = csv.DictReader(io.StringIO(answer.content.decode("utf-8")))
    assert row["note"] == "'=1+1 refund pending"


def test_a_day_to_come_is_not_offered_for_reconciliation(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    client = sign_in(dashboard_node.url)
    later = (business_today() + timedelta(days=3)).isoformat()
    page = client.get(f"/dashboard/?date={later}")
    assert page.status_code == 200
    assert "has not begun yet" in page.text
    assert f"pixrecon reconcile --date {later}" not in page.text


def test_a_day_without_a_run_offers_no_download_and_its_csv_is_refused(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    seed_case(engine)
    client = sign_in(dashboard_node.url)
    unjudged = (DAY - timedelta(days=1)).isoformat()
    # A file with the header alone would read as "no exceptions that day".
    answer = client.get(f"/dashboard/exceptions.csv?date={unjudged}")
    assert answer.status_code == 404
    assert "no completed reconciliation run" in answer.text
    page = client.get(f"/dashboard/exceptions?date={unjudged}").text
    assert "/dashboard/export?" not in page
    assert "nothing to download" in page
    judged = client.get(f"/dashboard/exceptions?date={DAY.isoformat()}").text
    assert f"/dashboard/export?date={DAY.isoformat()}" in judged
