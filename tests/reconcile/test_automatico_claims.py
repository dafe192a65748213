"""Pix Automático notifications are claims (docs/design.md §1.5): a recurrence or a
recurring charge notified counts in the state the provider's API states, and one the API
does not know, or says was never in the state notified, is an exception of its own — a
possible forgery — whatever it would have changed. Each test writes a day through the real
inbox and handlers (``DayBook``), looks the notifications up with a provider that answers
from a dict, and judges the day."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, text

from migrations.apply import upgrade
from reconcile.confirmation import AutomaticoLookup, confirm_all, confirm_pending_claims
from reconcile.db import create_db_engine, session_scope
from reconcile.inbox import store_items
from reconcile.matching.judgement import DayVerdict
from reconcile.models import Recurrence, RecurringCharge, Source
from reconcile.nightly import NightlyResult, reconcile_day
from reconcile.payloads.automatico import cobr_callback_items, rec_callback_items
from reconcile.payloads.charges import charge_item
from reconcile.polling.day import Fetched, sources_of
from reconcile.processing import process_items
from reconcile.provider.errors import NotFound, ProviderUnavailable
from reconcile.timeutil import business_day_bounds
from tests.conftest import make_settings
from tests.reconcile.day_book import DayBook, reais, verdicts_of

PAST = date(2026, 3, 10)
START, END = business_day_bounds(PAST)
AFTER = END + timedelta(hours=2)
# Looked up once the grace period is over: the provider has had the time to know it.
GRACE = timedelta(0)
REC = "RN1234567820260303weekly00001"
COBR = "cobrweekly00000000000000000001"


class Api:
    """The QR code API's Pix Automático, answering from what it holds."""

    def __init__(self) -> None:
        self.recs: dict[str, dict[str, Any]] = {}
        self.cobrs: dict[str, dict[str, Any]] = {}
        self.down = False

    def get_rec(self, id_rec: str) -> dict[str, Any]:
        return self._get(self.recs, id_rec)

    def get_cobr(self, txid: str) -> dict[str, Any]:
        return self._get(self.cobrs, txid)

    def _get(self, held: dict[str, dict[str, Any]], key: str) -> dict[str, Any]:
        if self.down:
            raise ProviderUnavailable("the provider does not answer", status=503)
        if key not in held:
            raise NotFound(f"{key} is not known", status=404)
        return copy.deepcopy(held[key])


def _rec(book: DayBook, status: str = "APROVADA", **changed: str) -> dict[str, Any]:
    """A weekly recurrence of R$ 29,90 begun a week before the book's day, approved at 06:00
    that day; ``changed``: later states and their times."""
    history = [
        {"status": "CRIADA", "data": book.at("06:00").isoformat()},
        {"status": "APROVADA", "data": book.at("06:00").isoformat()},
    ]
    history += [{"status": s, "data": book.at(clock).isoformat()} for s, clock in changed.items()]
    return {
        "idRec": REC,
        "status": status,
        "calendario": {
            "dataInicial": (book.day - timedelta(days=7)).isoformat(),
            "periodicidade": "SEMANAL",
        },
        "valor": {"valorRec": reais(2_990)},
        "atualizacao": history,
    }


def _cobr(book: DayBook, status: str = "CONCLUIDA", attempt: str = "PAGA") -> dict[str, Any]:
    """The recurrence's charge for the book's day, paid by its first attempt at 10:00."""
    e2e = "E12345678202603101300pagaweekly1"
    return {
        "idRec": REC,
        "txid": COBR,
        "status": status,
        "calendario": {
            "criacao": book.at("05:00").isoformat(),
            "dataDeVencimento": book.day.isoformat(),
        },
        "valor": {"original": reais(2_990)},
        "politicaRetentativa": "NAO_PERMITE",
        "atualizacao": [
            {"status": "CRIADA", "data": book.at("05:00").isoformat()},
            {"status": "ATIVA", "data": book.at("05:00").isoformat()},
            {"status": status, "data": book.at("10:00").isoformat()},
        ],
        "tentativas": [
            {
                "dataLiquidacao": book.day.isoformat(),
                "tipo": "AGND",
                "status": attempt,
                "endToEndId": e2e,
            }
        ],
    }


def _store(engine: Engine, source: Source, *items: Any) -> None:
    with session_scope(engine) as session:
        new = store_items(session, list(items), source=source).new_ids
    process_items(engine, new)


def _notified(engine: Engine, *, rec: dict[str, Any] | None = None, cobr: Any = None) -> None:
    if rec is not None:
        _store(engine, Source.WEBHOOK, *rec_callback_items(rec))
    if cobr is not None:
        _store(engine, Source.WEBHOOK, *cobr_callback_items(cobr))


def _polled(engine: Engine, *, rec: dict[str, Any] | None = None, cobr: Any = None) -> None:
    if rec is not None:
        _store(engine, Source.POLL, *rec_callback_items(rec))
    if cobr is not None:
        _store(engine, Source.POLL, charge_item("cobr", cobr), *cobr_callback_items(cobr))


@dataclass
class Providers:
    qrcode: Any
    accounts: Any


def _quiet_day(engine: Engine) -> DayBook:
    """A Pix received, confirmed and booked: a day with nothing to say but what follows."""
    book = DayBook(engine, PAST)
    e2e = book.pix(15_000, "10:00")
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 15_000, "10:00", credit=True, endToEndId=e2e)
    return book


def _look_up(engine: Engine, api: AutomaticoLookup) -> None:
    for model in (Recurrence, RecurringCharge):
        confirm_pending_claims(engine, api, model, grace=GRACE)


def _recurrence_verdicts(engine: Engine, result: NightlyResult) -> dict[str, tuple[str, bool]]:
    return {
        ref: (v.status, v.exception)
        for (subject, ref), v in verdicts_of(engine, result).items()
        if subject == "recurrence"
    }


def test_a_cancellation_the_api_denies_hides_no_missed_cycle(engine: Engine) -> None:
    """The API still has the recurrence approved, and no charge was created for the day's
    cycle: a notification saying it was cancelled that morning changes neither, and is
    itself the day's exception."""
    book = _quiet_day(engine)
    api = Api()
    api.recs[REC] = _rec(book)
    _polled(engine, rec=api.recs[REC])
    _notified(engine, rec=_rec(book, "CANCELADA", CANCELADA="06:30"))
    # Before any look-up, the state the API stated counts: the claim is pending.
    waiting = reconcile_day(engine, PAST, now=AFTER)
    assert _recurrence_verdicts(engine, waiting) == {
        f"rec:{REC}:{PAST.isoformat()}": ("missed_cycle", True),
        f"rec:{REC}": ("pending", False),
    }
    _look_up(engine, api)
    result = reconcile_day(engine, PAST, now=AFTER)
    assert _recurrence_verdicts(engine, result) == {
        f"rec:{REC}:{PAST.isoformat()}": ("missed_cycle", True),
        f"rec:{REC}": ("status_mismatch", True),
    }
    assert result.verdict is DayVerdict.BREAKS
    (forged,) = [c for c in result.report["exceptions"] if c["ref"] == f"rec:{REC}"]
    assert forged["reason"].startswith(
        "a recurrence notified as cancelled (CANCELADA), but the provider's API contradicts "
        "it: it states it is approved by the payer (APROVADA). A notification the API does "
        "not stand behind may be forged"
    )
    assert forged["action"].startswith(
        "do not count the recurrence of R$ 29,90 as notified: act on it as the provider's "
        "API states it"
    )
    assert "ask the provider whether it sent this notification" not in forged["action"]
    assert "check with the provider whether it sent this notification" in forged["action"]
    (cycle,) = [c for c in result.report["exceptions"] if c["status"] == "missed_cycle"]
    assert cycle["action"].startswith(
        "check why no recurring charge was created for the cycle of R$ 29,90 due 10/03/2026"
    )
    # The denied cancellation decided nothing about the cycle: no notification did.
    missed = verdicts_of(engine, result)[("recurrence", f"rec:{REC}:{PAST.isoformat()}")]
    assert missed.inbox_item_id is None


def test_a_cancellation_the_api_confirms_ends_the_cycles(engine: Engine) -> None:
    """A real cancellation before the cycle: no cycle is missed, nothing is an exception. A
    notification that trails the API (approved, cancelled since) agrees with it too."""
    book = _quiet_day(engine)
    api = Api()
    api.recs[REC] = _rec(book, "CANCELADA", CANCELADA="06:30")
    _notified(engine, rec=_rec(book))
    _notified(engine, rec=api.recs[REC])
    _look_up(engine, api)
    result = reconcile_day(engine, PAST, now=AFTER)
    assert _recurrence_verdicts(engine, result) == {}
    assert result.verdict is DayVerdict.RECONCILED, result.report


def test_a_recurrence_approved_after_its_cycle_missed_nothing_that_day(engine: Engine) -> None:
    """Created before the day, approved by the payer only the day after: at the end of the
    cycle's date nothing was owed, and asking that day again once the API states it
    approved must answer as it did."""
    book = _quiet_day(engine)
    created = {"status": "CRIADA", "data": book.at("06:00", PAST - timedelta(days=8)).isoformat()}
    rec = {**_rec(book, "CRIADA"), "atualizacao": [created]}
    _polled(engine, rec=rec)
    before = reconcile_day(engine, PAST, now=AFTER)
    assert _recurrence_verdicts(engine, before) == {}
    assert before.verdict is DayVerdict.RECONCILED, before.report
    approved = {
        "status": "APROVADA",
        "data": book.at("10:00", PAST + timedelta(days=1)).isoformat(),
    }
    _polled(engine, rec={**rec, "status": "APROVADA", "atualizacao": [created, approved]})
    again = reconcile_day(engine, PAST, now=AFTER + timedelta(days=2))
    assert _recurrence_verdicts(engine, again) == {}
    assert again.verdict is DayVerdict.RECONCILED, again.report
    # Approved by the next cycle's date: that cycle is owed, and missed.
    week = PAST + timedelta(days=7)
    missed = reconcile_day(engine, week, now=AFTER + timedelta(days=7))
    assert _recurrence_verdicts(engine, missed) == {
        f"rec:{REC}:{week.isoformat()}": ("missed_cycle", True)
    }


@pytest.mark.parametrize(
    ("claim", "reason"),
    [
        (
            "recurrence unknown",
            "a recurrence notified as approved by the payer (APROVADA), but the provider's "
            "API does not know it",
        ),
        (
            "charge unknown",
            "a recurring charge notified as paid (CONCLUIDA), its last attempt paid (PAGA) "
            "with endToEndId E12345678202603101300pagaweekly1, but the provider's API does "
            "not know it",
        ),
        (
            "charge paid, notified rejected",
            "a recurring charge notified as rejected, not debited (REJEITADA), its last "
            "attempt rejected by the payer's bank (REJEITADA) with endToEndId "
            "E12345678202603101300pagaweekly1, but the provider's API contradicts it: it "
            "states it is paid (CONCLUIDA)",
        ),
        (
            "attempt the api does not list",
            "a recurring charge notified as paid (CONCLUIDA), its last attempt paid (PAGA) "
            "with endToEndId E12345678202603101300forgedpaga1, but the provider's API "
            "contradicts it: it states it is paid (CONCLUIDA) too, but not with the attempt "
            "or recurrence notified",
        ),
    ],
)
def test_a_notification_the_api_denies_is_an_exception(
    engine: Engine, claim: str, reason: str
) -> None:
    """The charge is paid as the API states; what a notification claims otherwise counts
    for nothing, and says so."""
    book = _quiet_day(engine)
    api = Api()
    api.recs[REC] = _rec(book)
    api.cobrs[COBR] = _cobr(book)
    _polled(engine, rec=api.recs[REC], cobr=api.cobrs[COBR])
    e2e = api.cobrs[COBR]["tentativas"][0]["endToEndId"]
    book.pix(2_990, "10:00", e2e=e2e, txid=COBR)
    book.confirm_all_pix()
    book.line("PIX_RECEIVED", 2_990, "10:00", credit=True, endToEndId=e2e)
    if claim == "recurrence unknown":
        _notified(engine, rec={**_rec(book), "idRec": "RN1234567820260303unknown0001"})
        ref = "rec:RN1234567820260303unknown0001"
    elif claim == "charge unknown":
        _notified(engine, cobr={**_cobr(book), "txid": "cobrunknown0000000000000000001"})
        ref = "cobr:cobrunknown0000000000000000001"
    elif claim == "charge paid, notified rejected":
        _notified(engine, cobr=_cobr(book, "REJEITADA", "REJEITADA"))
        ref = f"cobr:{COBR}"
    else:
        forged = _cobr(book)
        forged["tentativas"][0]["endToEndId"] = "E12345678202603101300forgedpaga1"
        forged["tentativas"].insert(0, copy.deepcopy(_cobr(book)["tentativas"][0]))
        _notified(engine, cobr=forged)
        ref = f"cobr:{COBR}"
    _look_up(engine, api)
    result = reconcile_day(engine, PAST, now=AFTER)
    verdicts = verdicts_of(engine, result)
    assert verdicts[("charge", f"cobr:{COBR}")].status == "paid"
    assert _recurrence_verdicts(engine, result) == {
        ref: ("status_mismatch" if "contradicts" in reason else "unconfirmed_webhook", True)
    }
    assert verdicts[("recurrence", ref)].reason.startswith(reason)
    assert result.verdict is DayVerdict.BREAKS
    (case,) = [c for c in result.report["exceptions"] if c["ref"] == ref]
    assert case["action"].startswith("do not count the "), case["action"]
    if ref.startswith("cobr:"):
        # Found as finance knows it: the charge's txid and its attempt's Pix.
        assert case["txid"] == ref.removeprefix("cobr:")
        assert case["end_to_end_id"] == reason.split("endToEndId ")[1][:32]


def test_a_day_whose_recurrences_could_not_be_looked_up_is_incomplete(engine: Engine) -> None:
    """The provider stopped answering while the notified recurrences were looked up: the
    run did not read what it judges, so the day is not signed off as reconciled."""
    book = _quiet_day(engine)
    api = Api()
    api.recs[REC] = _rec(book, "CANCELADA", CANCELADA="06:30")
    _notified(engine, rec=api.recs[REC])
    api.down = True
    settings = make_settings(str(engine.url), confirm_grace_seconds=600)
    report = confirm_all(engine, None, None, settings, automatico=api)
    assert report.interrupted

    fetched = Fetched(START, END, confirmed=report)
    sources = sources_of(Providers(api, object()), settings, fetched)
    result = reconcile_day(engine, PAST, now=AFTER, sources=sources)
    assert result.verdict is DayVerdict.INCOMPLETE
    assert result.summary["incomplete_because"] == [
        "the provider stopped answering while pending notifications were confirmed"
    ]


def test_without_look_ups_a_notified_recurrence_counts_as_notified(engine: Engine) -> None:
    """``PIXRECON_CONFIRM_POLICY=none`` trusts webhooks: a recurrence only notified is
    judged in the state notified, its day's cycle missed like any other."""
    book = _quiet_day(engine)
    _notified(engine, rec=_rec(book))
    settings = make_settings(str(engine.url), confirm_policy="none")
    confirm_all(engine, None, None, settings, automatico=Api())
    result = reconcile_day(engine, PAST, now=AFTER)
    assert _recurrence_verdicts(engine, result) == {
        f"rec:{REC}:{PAST.isoformat()}": ("missed_cycle", True)
    }


def test_the_migration_keeps_what_was_stored_before_it_as_judged(blank_url: str) -> None:
    """A recurrence notified before notifications were looked up counted as notified: a
    past day re-run after the upgrade reads the cycles it read before."""
    engine = create_db_engine(blank_url)
    upgrade(engine, "0030")
    at = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
    with engine.begin() as connection:
        item = connection.execute(
            text(
                "INSERT INTO inbox_item (source, kind, key, payload, status, received_at, "
                "last_seen_at, webhook_count, poll_count, attempts) VALUES ('webhook', 'rec', "
                "'rec:RR1:CANCELADA:x', '{}', 'processed', :at, :at, 1, 0, 1) RETURNING id"
            ),
            {"at": at},
        ).scalar_one()
        connection.execute(
            text(
                "INSERT INTO recurrence (id_rec, status, status_at, rank, inbox_item_id, "
                "updated_at) VALUES ('RR1', 'CANCELADA', :at, 1, :item, :at)"
            ),
            {"item": item, "at": at},
        )
    upgrade(engine)
    with engine.connect() as connection:
        row = connection.execute(
            text("SELECT confirmation, confirmed_status FROM recurrence WHERE id_rec = 'RR1'")
        ).one()
    engine.dispose()
    assert tuple(row) == ("confirmed", "CANCELADA")


NEXT = PAST + timedelta(days=1)
FORGED_E2E = "E12345678202603101300forgedpaga1"
REJECTED_E2E = "E12345678202603100900rejeitada01"


def _claim_then_genuine(engine: Engine, book: DayBook, kind: str) -> tuple[Api, str, Any]:
    """The API's object as it stands on the day, a notification of it the API denies that
    day, and what the object becomes the next day (the API's, to be notified genuinely)."""
    api = Api()
    api.recs[REC] = _rec(book)
    if kind == "rec":
        _polled(engine, rec=api.recs[REC])
        _notified(engine, rec=_rec(book, "CANCELADA", CANCELADA="06:30"))
        cancelled = _rec(book, "CANCELADA")
        cancelled["atualizacao"].append(
            {"status": "CANCELADA", "data": book.at("08:00", NEXT).isoformat()}
        )
        return api, f"rec:{REC}", cancelled
    # A charge due the next day, awaiting its debit: notified paid today, by an attempt
    # the API never made; paid for real the next day.
    waiting = _cobr(book, "ATIVA")
    waiting["calendario"]["dataDeVencimento"] = NEXT.isoformat()
    waiting["atualizacao"] = waiting["atualizacao"][:2]
    waiting["tentativas"] = []
    api.cobrs[COBR] = waiting
    _polled(engine, rec=api.recs[REC], cobr=waiting)
    forged = _cobr(book)
    forged["tentativas"][0]["endToEndId"] = FORGED_E2E
    # Two attempts: with the one the genuine notification names, it would be the same
    # item under the same key (how far collection went), a repeat.
    rejected = {**forged["tentativas"][0], "status": "REJEITADA", "endToEndId": REJECTED_E2E}
    forged["tentativas"].insert(0, rejected)
    _notified(engine, cobr=forged)
    paid = _cobr(book)
    paid["calendario"]["dataDeVencimento"] = NEXT.isoformat()
    paid["atualizacao"][2]["data"] = book.at("10:00", NEXT).isoformat()
    paid["tentativas"][0]["dataLiquidacao"] = NEXT.isoformat()
    return api, f"cobr:{COBR}", paid


def _as_shown(engine: Engine, result: NightlyResult, ref: str) -> tuple[Any, ...]:
    """The exception as a person reads it: how much, why, and what finds it."""
    verdict = verdicts_of(engine, result)[("recurrence", ref)]
    (case,) = [c for c in result.report["exceptions"] if c["ref"] == ref]
    return (
        verdict.status,
        verdict.exception,
        verdict.expected_cents,
        verdict.reason,
        verdict.inbox_item_id,
        case["txid"],
        case["end_to_end_id"],
    )


@pytest.mark.parametrize("kind", ["rec", "cobr"])
def test_a_denied_claim_stays_its_days_exception_after_a_genuine_one(
    engine: Engine, kind: str
) -> None:
    """The object's row keeps only its latest state: a genuine notification the next day
    takes it over. Asked again, the day of the denied notification still shows it, as it
    did; the next day judges the genuine one, which the API stands behind."""
    book = _quiet_day(engine)
    api, ref, genuine = _claim_then_genuine(engine, book, kind)
    _look_up(engine, api)
    first = reconcile_day(engine, PAST, now=AFTER)
    shown = _as_shown(engine, first, ref)
    assert shown[:3] == ("status_mismatch", True, 2_990)
    if kind == "rec":
        assert shown[3].startswith(
            "a recurrence notified as cancelled (CANCELADA), but the provider's API "
            "contradicts it: it states it is approved by the payer (APROVADA)"
        )
    else:
        assert shown[3].startswith(
            "a recurring charge notified as paid (CONCLUIDA), its last attempt paid (PAGA) "
            f"with endToEndId {FORGED_E2E}, but the provider's API contradicts it: it "
            "states it is awaiting its debit (ATIVA)"
        )
        assert shown[5:] == (COBR, FORGED_E2E)
    assert first.verdict is DayVerdict.BREAKS

    if kind == "rec":
        api.recs[REC] = genuine
        _notified(engine, rec=genuine)
    else:
        api.cobrs[COBR] = genuine
        _notified(engine, cobr=genuine)
    _look_up(engine, api)
    with session_scope(engine) as session:
        model = Recurrence if kind == "rec" else RecurringCharge
        (confirmation,) = session.execute(select(model.confirmation)).one()  # type: ignore[call-overload]
    assert confirmation == "confirmed"

    later = AFTER + timedelta(days=1)
    again = reconcile_day(engine, PAST, now=later)
    assert _as_shown(engine, again, ref) == shown
    assert again.verdict is DayVerdict.BREAKS
    next_day = reconcile_day(engine, NEXT, now=later)
    assert ref not in {r for s, r in verdicts_of(engine, next_day) if s == "recurrence"}


def test_a_claim_still_waiting_on_the_day_of_a_denied_one_adds_no_verdict(
    engine: Engine,
) -> None:
    """One verdict per object a day: the notification the API denied, whatever else of the
    day still waits for its look-up."""
    book = _quiet_day(engine)
    api, ref, _ = _claim_then_genuine(engine, book, "rec")
    _look_up(engine, api)
    _notified(engine, rec=_rec(book, "CANCELADA", CANCELADA="09:00"))
    result = reconcile_day(engine, PAST, now=AFTER)
    verdict = verdicts_of(engine, result)[("recurrence", ref)]
    assert (verdict.status, verdict.exception) == ("status_mismatch", True)
    assert "approved by the payer (APROVADA)" in verdict.reason


def test_the_migration_keeps_the_claims_denied_before_it(blank_url: str) -> None:
    """Claims the API denied before their table existed are copied in, with their day: a
    past day re-run after the upgrade shows the exceptions it showed before."""
    engine = create_db_engine(blank_url)
    upgrade(engine, "0034")
    at = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
    with engine.begin() as connection:
        item = connection.execute(
            text(
                "INSERT INTO inbox_item (source, kind, key, payload, status, received_at, "
                "last_seen_at, webhook_count, poll_count, attempts) VALUES ('webhook', 'cobr', "
                "'cobr:C1:CONCLUIDA:1', '{}', 'processed', :received, :received, 1, 0, 1) "
                "RETURNING id"
            ),
            {"received": at + timedelta(minutes=1)},
        ).scalar_one()
        connection.execute(
            text(
                "INSERT INTO recurring_charge (txid, status, attempts, last_attempt_status, "
                "last_attempt_end_to_end_id, status_at, rank, inbox_item_id, updated_at, "
                "confirmation, confirmed_status, confirmed_at, check_attempts) VALUES ('C1', "
                "'CONCLUIDA', 1, 'PAGA', 'E1', :at, 1, :item, :at, 'status_mismatch', "
                "'ATIVA', :at, 1)"
            ),
            {"item": item, "at": at},
        )
        connection.execute(
            text(
                "INSERT INTO expected_payment (kind, ref, amount_cents, status, rank, "
                "inbox_item_id, updated_at) VALUES ('cobr', 'C1', 2990, 'ATIVA', 0, :item, :at)"
            ),
            {"item": item, "at": at},
        )
    upgrade(engine)
    with engine.connect() as connection:
        row = connection.execute(
            text(
                "SELECT kind, key, status, attempt_status, attempt_end_to_end_id, "
                "confirmation, confirmed_status, amount_cents, claimed_at, inbox_item_id "
                "FROM denied_claim"
            )
        ).one()
    engine.dispose()
    assert tuple(row[:8]) == (
        "cobr",
        "C1",
        "CONCLUIDA",
        "PAGA",
        "E1",
        "status_mismatch",
        "ATIVA",
        2_990,
    )
    claimed = row[8] if isinstance(row[8], datetime) else datetime.fromisoformat(row[8])
    assert claimed.replace(tzinfo=claimed.tzinfo or UTC) == at
    assert row[9] == item
