"""A MED case's closing is confirmed by the provider's API before its debit counts
(docs/design.md §1.5): a notification saying the case closed with a debit that the API
says closed without one is an exception (possible forgery), and neither the bridge's API
column nor the day's MED money counts it. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, text
from sqlmodel import Session, select

from migrations.apply import upgrade
from reconcile.confirmation import confirm_all
from reconcile.db import create_db_engine
from reconcile.models import Confirmation, Infraction
from reconcile.nightly import reconcile_day
from reconcile.provider.errors import NotFound
from reconcile.settings import Settings
from reconcile.timeutil import as_utc, business_day_bounds, business_today, utcnow
from tests.reconcile.day_book import DayBook, verdicts_of

PAST = date(2026, 3, 10)
AFTER = business_day_bounds(PAST)[1] + timedelta(hours=2)


class _Accounts:
    """The accounts API: the cases as it states them; no payout to look up."""

    def __init__(self, *cases: dict[str, Any]) -> None:
        self.cases = {case["id"]: case for case in cases}

    def get_infraction(self, infraction_id: str) -> dict[str, Any]:
        if infraction_id not in self.cases:
            raise NotFound(infraction_id)
        return self.cases[infraction_id]

    def get_payment(self, end_to_end_id: str) -> dict[str, Any]:
        raise NotFound(end_to_end_id)

    def get_payment_by_key(self, idempotency_key: str) -> dict[str, Any]:
        raise NotFound(idempotency_key)


def _case(book: DayBook, result: str, debited: str, status: str = "CLOSED") -> dict[str, Any]:
    return {
        "id": "med-x",
        "status": status,
        "amount": "20.00",
        "analysisResult": result,
        "debitedAmount": debited,
        "createdAt": book.at("12:00").isoformat(),
        "closedAt": book.at("13:00").isoformat() if status != "OPEN" else None,
    }


def _bridge_med(result: Any) -> tuple[int, int, int]:
    (row,) = [r for r in result.report["bridge"]["categories"] if r["category"] == "med_debits"]
    return row["webhook_cents"], row["api_cents"], row["statement_cents"]


def test_a_debit_notified_for_a_case_the_api_closed_without_one_is_not_counted(
    engine: Engine,
) -> None:
    book = DayBook(engine, PAST)
    book.infraction({**_case(book, "", "0.00", status="OPEN")})
    # The real closing's notification was lost; a forged one says the case was debited.
    book.infraction(_case(book, "AGREED", "20.00"))
    api_says = _case(book, "DISAGREED", "0.00")
    # Polled in the notified status: a repeat of the forged notification's item.
    book.infraction(api_says, webhook=False)

    confirm_all(engine, None, _Accounts(api_says), Settings(_env_file=None))

    result = reconcile_day(engine, PAST, now=AFTER)
    assert _bridge_med(result) == (2_000, 0, 0)
    assert result.report["med"]["debited_cents"] == 0
    verdict = verdicts_of(engine, result)[("infraction", "med-x")]
    assert (verdict.status, verdict.exception) == ("status_mismatch", True)
    # As a refund or payout the API contradicts (docs/exports.md): what the notification
    # claimed, and what a statement line booked of it (none).
    assert (verdict.expected_cents, verdict.actual_cents) == (2_000, 0)
    assert "possible forgery" in verdict.reason
    (shown,) = [e for e in result.report["exceptions"] if e["ref"] == "med-x"]
    assert shown["action"] == (
        "do not book the MED debit of R$ 20,00 notified: the provider's API states it closed "
        "with nothing debited (possible forgery); find out who sent the notification"
    )


def test_a_closing_the_api_states_as_notified_debits_what_it_states(engine: Engine) -> None:
    from reconcile.confirmation import confirm_closed_infractions

    book = DayBook(engine, PAST)
    book.infraction(_case(book, "AGREED", "20.00"))
    book.line("INFRACTION_DEBIT", 2_000, "13:00", credit=False, infractionId="med-x")
    before = reconcile_day(engine, PAST, now=AFTER)
    # Not yet confirmed: the debit is the notification's word only.
    assert _bridge_med(before)[1] == 0

    report = confirm_closed_infractions(
        engine, _Accounts(_case(book, "AGREED", "20.00")), grace=timedelta(minutes=15)
    )
    assert len(report.confirmed) == 1

    result = reconcile_day(engine, PAST, now=AFTER)
    assert _bridge_med(result) == (2_000, 2_000, 2_000)
    assert result.report["med"]["debited_cents"] == 2_000
    assert verdicts_of(engine, result)[("infraction", "med-x")].status == "closed"


def test_a_closing_notified_without_its_time_is_dated_by_the_api(engine: Engine) -> None:
    """Notified closed after its day, without ``closedAt``: dated by its arrival, the case
    read open at its day's end, and the day it arrived had a debit with no line. The API's
    answer says when it closed: the case is its day's, closed against its debit."""
    from reconcile.confirmation import confirm_closed_infractions

    book = DayBook(engine, PAST)
    undated = {**_case(book, "AGREED", "20.00"), "closedAt": None}
    book.infraction(undated)
    book.line("INFRACTION_DEBIT", 2_000, "13:00", credit=False, infractionId="med-x")
    before = reconcile_day(engine, PAST, now=AFTER)
    assert verdicts_of(engine, before)[("infraction", "med-x")].status == "open_case"

    confirm_closed_infractions(
        engine, _Accounts(_case(book, "AGREED", "20.00")), grace=timedelta(minutes=15)
    )
    result = reconcile_day(engine, PAST, now=AFTER)
    assert verdicts_of(engine, result)[("infraction", "med-x")].status == "closed"
    assert _bridge_med(result) == (2_000, 2_000, 2_000)


@pytest.mark.parametrize(
    ("api", "outcome"),
    [
        ("open", Confirmation.STATUS_MISMATCH),
        ("unknown", Confirmation.UNCONFIRMED_WEBHOOK),
    ],
)
def test_a_closing_the_api_does_not_state_counts_no_debit(
    engine: Engine, api: str, outcome: Confirmation
) -> None:
    from reconcile.confirmation import confirm_closed_infractions

    book = DayBook(engine, PAST)
    book.infraction(_case(book, "AGREED", "20.00"))
    accounts = _Accounts(_case(book, "", "0.00", status="OPEN")) if api == "open" else _Accounts()
    grace = timedelta(minutes=15)
    # Inside the grace period the API may still catch up: asked again later.
    assert confirm_closed_infractions(engine, accounts, grace=grace).still_pending
    confirm_closed_infractions(engine, accounts, grace=grace, now=utcnow() + grace)
    with Session(engine) as session:
        case = session.exec(select(Infraction)).one()
    assert (case.confirmation, case.confirmed_debited_cents) == (outcome.value, None)

    result = reconcile_day(engine, PAST, now=AFTER)
    assert _bridge_med(result) == (2_000, 0, 0)
    assert result.report["med"]["debited_cents"] == 0
    verdict = verdicts_of(engine, result)[("infraction", "med-x")]
    assert verdict.exception
    assert verdict.status == ("status_mismatch" if api == "open" else "unconfirmed_webhook")
    if api == "open":
        # The notified debit on the side a case the provider does not know puts it.
        assert (verdict.expected_cents, verdict.actual_cents) == (2_000, 0)
        (shown,) = [e for e in result.report["exceptions"] if e["ref"] == "med-x"]
        assert shown["action"].startswith(
            "do not book the MED debit of R$ 20,00 notified: the provider's API states the "
            "case still open (possible forgery)"
        )
        # Still open at the provider, so its money is still at risk that day.
        med = result.report["med"]
        assert (med["open_cases"], med["at_risk_cents"]) == (1, 2_000)
        (listed,) = med["cases"]
        assert (listed["state"], listed["status"], listed["debited_cents"]) == ("open", "OPEN", 0)


def test_the_apis_word_read_after_a_notified_closing_keeps_the_notified_debit_beside_it(
    engine: Engine,
) -> None:
    """A poll of the case in another closed status is read: the API's debit replaces the
    notified one as what counts, and the notification it contradicts still says so."""
    book = DayBook(engine, PAST)
    book.infraction(_case(book, "AGREED", "20.00"))
    book.infraction(_case(book, "DISAGREED", "0.00", status="CANCELED"), webhook=False)
    with Session(engine) as session:
        case = session.exec(select(Infraction)).one()
    assert (case.status, case.debited_cents, case.confirmed_debited_cents) == ("CANCELED", 2_000, 0)
    assert case.confirmation == Confirmation.AMOUNT_MISMATCH.value

    result = reconcile_day(engine, PAST, now=AFTER)
    assert _bridge_med(result)[1:] == (0, 0)
    assert verdicts_of(engine, result)[("infraction", "med-x")].status == "status_mismatch"


def test_a_closing_waiting_for_the_api_today_says_when_it_becomes_a_break(
    engine: Engine,
) -> None:
    today, now = business_today(), utcnow()
    book = DayBook(engine, today)
    # Opened and closed before now, whatever the hour: a closing later in the day than
    # the run is not yet a closing, and the case would be open at the run's "as of".
    start = as_utc(book.at("00:00"))
    case = _case(book, "AGREED", "20.00")
    case["createdAt"] = (start + (now - start) / 3).isoformat()
    case["closedAt"] = (start + (now - start) * 2 / 3).isoformat()
    book.infraction(case)
    with Session(engine) as session:
        notified = session.exec(select(Infraction)).one().updated_at
    result = reconcile_day(engine, today, now=now)
    verdict = verdicts_of(engine, result)[("infraction", "med-x")]
    assert verdict.status == "pending", verdict.reason
    assert verdict.due_at is not None
    grace = timedelta(seconds=Settings().confirm_grace_seconds)
    assert abs(as_utc(verdict.due_at) - (as_utc(notified) + grace)) < timedelta(seconds=1)


def test_the_migration_keeps_closings_stored_before_it_as_judged(blank_url: str) -> None:
    """Cases stored closed before the API confirmed closings stay as they were judged: a
    past day re-run after the upgrade reads the money it read before (asked again, a
    notified one read as a possible forgery until the confirm job ran). One read from the
    API was the API's debit; one only notified counted, but not as the API's."""
    engine = create_db_engine(blank_url)
    upgrade(engine, "0029")
    at = datetime(2026, 3, 10, 16, 0, tzinfo=UTC)
    with engine.begin() as connection:
        for source, case_id, webhooks, polls in (
            ("webhook", "med-notified", 1, 0),
            ("poll", "med-polled", 0, 1),
            ("webhook", "med-seen-by-both", 1, 1),
        ):
            item = connection.execute(
                text(
                    "INSERT INTO inbox_item (source, kind, key, payload, status, received_at, "
                    "last_seen_at, webhook_count, poll_count, attempts) VALUES (:source, "
                    "'accounts.infraction', :key, '{}', 'processed', :at, :at, :webhooks, "
                    ":polls, 1) RETURNING id"
                ),
                {
                    "source": source,
                    "key": f"accounts:INFRACTION:{case_id}:CLOSED",
                    "at": at,
                    "webhooks": webhooks,
                    "polls": polls,
                },
            ).scalar_one()
            connection.execute(
                text(
                    "INSERT INTO infraction (infraction_id, status, amount_cents, debited_cents, "
                    "rank, inbox_item_id, updated_at) VALUES (:case_id, 'CLOSED', 2000, 2000, "
                    "3, :item, :at)"
                ),
                {"case_id": case_id, "item": item, "at": at},
            )
    upgrade(engine)
    with engine.connect() as connection:
        rows = dict(
            (case_id, (confirmation, debited))
            for case_id, confirmation, debited in connection.execute(
                text("SELECT infraction_id, confirmation, confirmed_debited_cents FROM infraction")
            )
        )
    engine.dispose()
    assert rows == {
        "med-notified": ("not_required", None),
        "med-polled": ("confirmed", 2000),
        "med-seen-by-both": ("confirmed", 2000),
    }


def test_closings_whose_look_ups_fail_hold_back_none_behind_them(engine: Engine) -> None:
    """More cases whose look-up fails than a batch: the pass goes on to the cases behind
    them, and a failed one is not asked again at once but after a while."""
    book = DayBook(engine, PAST)
    broken = [f"med-{n}" for n in range(3)]
    for case_id in [*broken, "med-x"]:
        book.infraction({**_case(book, "AGREED", "20.00"), "id": case_id})

    asked: list[str] = []

    class Failing(_Accounts):
        def get_infraction(self, infraction_id: str) -> dict[str, Any]:
            asked.append(infraction_id)
            if infraction_id in broken:
                raise ValueError("an answer nobody can read")
            return super().get_infraction(infraction_id)

    api = Failing(_case(book, "AGREED", "20.00"))
    settings = Settings(_env_file=None, confirm_batch_size=2)
    report = confirm_all(engine, None, api, settings)
    assert (len(report.failed), len(report.confirmed)) == (3, 1)
    assert asked == [*broken, "med-x"]
    with Session(engine) as session:
        cases = {c.infraction_id: c for c in session.exec(select(Infraction))}
    assert cases["med-x"].confirmation == Confirmation.CONFIRMED.value
    for case_id in broken:
        case = cases[case_id]
        assert case.confirmation == Confirmation.PENDING.value
        assert case.check_attempts == 1
        assert case.next_check_at is not None
        assert as_utc(case.next_check_at) > utcnow()
    # Asked again only once their wait is over.
    asked.clear()
    confirm_all(engine, None, api, settings)
    assert asked == []
