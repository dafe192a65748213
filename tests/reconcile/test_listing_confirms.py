"""A walk of ``GET /pix`` is a look-up of every Pix it lists (docs/design.md §1.5): a Pix or
refund a webhook brought first is settled by its listing, as ``GET /pix/{e2eid}`` would
have settled it, instead of waiting for a call of its own."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

from sqlalchemy import Engine, select, update
from sqlmodel import col

from pixrecon.sandbox_wiring import sandbox_servers
from reconcile.confirmation import confirm_all, confirm_listed, confirm_pending_pix, take_api_times
from reconcile.db import session_scope
from reconcile.inbox import store_items
from reconcile.models import PixReceived, PixRefund, Source
from reconcile.payloads.pix import pix_callback_items
from reconcile.polling.qrcode import poll_received_pix
from reconcile.processing import process_items
from reconcile.provider.factory import qrcode_api
from reconcile.settings import Settings
from reconcile.timeutil import as_utc
from sandbox.state import SandboxProvider
from tests.factories import e2e_id


def _notify(engine: Engine, *bodies: dict[str, Any]) -> None:
    """Webhooks, stored and processed as the receiver and a worker would."""
    with session_scope(engine) as session:
        items = [item for body in bodies for item in pix_callback_items(body)]
        new = store_items(session, items, source=Source.WEBHOOK).new_ids
    assert process_items(engine, new).processed == new


Row = TypeVar("Row", PixReceived, PixRefund)


def _row(engine: Engine, model: type[Row], e2e: str) -> Row:
    with session_scope(engine) as session:
        found = session.execute(select(model).where(col(model.end_to_end_id) == e2e))
        row: Row = found.scalar_one()
        session.expunge(row)
        return row


def _pix(engine: Engine, e2e: str) -> PixReceived:
    return _row(engine, PixReceived, e2e)


def _refund(engine: Engine, e2e: str) -> PixRefund:
    return _row(engine, PixRefund, e2e)


def _listed(e2e: str, valor: str, **more: Any) -> dict[str, Any]:
    return {"endToEndId": e2e, "valor": valor, "horario": "2026-03-02T10:00:00-03:00", **more}


def test_a_listed_pix_is_confirmed_with_the_amount_the_api_states(engine: Engine) -> None:
    same, other, unreadable, absent = (e2e_id(n) for n in (1, 2, 3, 4))
    _notify(
        engine,
        _listed(same, "10.00"),
        _listed(other, "20.00"),
        # An amount nested as a charge's is, which nobody can read as the Pix's.
        _listed(unreadable, "x") | {"valor": {"original": "30.00"}},
        _listed(absent, "40.00"),
    )
    report = confirm_listed(
        engine,
        [_listed(same, "10.00"), _listed(other, "25.00"), _listed(unreadable, "30.00")],
    )
    assert (len(report.confirmed), len(report.mismatched)) == (2, 1)

    confirmed = _pix(engine, same)
    assert (confirmed.confirmation, confirmed.confirmed_amount_cents) == ("confirmed", 1_000)
    assert confirmed.confirmed_at is not None
    assert confirmed.next_check_at is None
    mismatch = _pix(engine, other)
    assert (mismatch.confirmation, mismatch.amount_cents, mismatch.confirmed_amount_cents) == (
        "amount_mismatch",
        2_000,
        2_500,
    )
    # An amount nobody could read from the webhook is the API's from now on.
    filled = _pix(engine, unreadable)
    assert (filled.confirmation, filled.amount_cents) == ("confirmed", 3_000)
    # Not listed: a listing covers a window, so it says nothing of this one.
    left = _pix(engine, absent)
    assert (left.confirmation, left.check_attempts) == ("pending", 0)


def test_only_pending_rows_are_settled_by_a_listing(engine: Engine) -> None:
    e2e = e2e_id(5)
    _notify(engine, _listed(e2e, "10.00"))
    with session_scope(engine) as session:
        session.execute(update(PixReceived).values(confirmation="unconfirmed_webhook"))
    assert confirm_listed(engine, [_listed(e2e, "10.00")]).handled == 0
    assert _pix(engine, e2e).confirmation == "unconfirmed_webhook"
    # Nothing a listing holds that is not a Pix changes anything either.
    assert confirm_listed(engine, [{"valor": "1.00"}, "E123", None]).handled == 0


def test_a_listed_refund_is_confirmed_in_the_state_the_api_states(engine: Engine) -> None:
    kept, refused, later, progressed = (e2e_id(n) for n in (6, 7, 8, 9))

    def refund(status: str) -> dict[str, Any]:
        return {
            "id": "D1",
            "rtrId": "D9999900820260302abcdefghij1",
            "valor": "4.00",
            "status": status,
            "horario": {"solicitacao": "2026-03-02T11:00:00-03:00"},
        }

    _notify(
        engine,
        _listed(kept, "10.00", devolucoes=[refund("DEVOLVIDO")]),
        _listed(refused, "10.00", devolucoes=[refund("DEVOLVIDO") | {"rtrId": None}]),
        _listed(later, "10.00", devolucoes=[refund("EM_PROCESSAMENTO") | {"rtrId": None}]),
        _listed(progressed, "10.00", devolucoes=[refund("EM_PROCESSAMENTO") | {"rtrId": None}]),
    )
    report = confirm_listed(
        engine,
        [
            _listed(kept, "10.00", devolucoes=[refund("DEVOLVIDO")]),
            # Notified as returned; the API says it never was.
            _listed(refused, "10.00", devolucoes=[refund("NAO_REALIZADO") | {"rtrId": None}]),
            # The listing came before the refund: no evidence about it either way.
            _listed(later, "10.00"),
            # Settled since it was notified: the listing's own item brings that fact.
            _listed(progressed, "10.00", devolucoes=[refund("DEVOLVIDO") | {"rtrId": None}]),
        ],
    )
    assert (_refund(engine, kept).confirmation, _refund(engine, kept).confirmed_amount_cents) == (
        "confirmed",
        400,
    )
    assert _refund(engine, refused).confirmation == "status_mismatch"
    assert _refund(engine, later).confirmation == "pending"
    assert (_refund(engine, progressed).confirmation, _refund(engine, progressed).status) == (
        "pending",
        "EM_PROCESSAMENTO",
    )
    # Four Pix confirmed, one refund confirmed, one refund in another final state.
    assert (len(report.confirmed), len(report.mismatched)) == (5, 1)


def test_polling_the_day_leaves_no_notified_pix_to_look_up(engine: Engine) -> None:
    """Through real HTTP: the webhooks' Pix, listed by the poll, need no call each."""
    provider = SandboxProvider(seed=11)
    booked = [provider.receive_pix(Decimal("12.34") + n) for n in range(30)]
    # A refund notified in progress, settled at the provider before the poll.
    refunding = booked[1]["endToEndId"]
    refund = provider.refund_pix(refunding, Decimal("1.00"), status="EM_PROCESSAMENTO")
    booked[1] = provider.get_pix(refunding) or {}
    forged = _listed(e2e_id(99), "50.00")
    notified = [copy.deepcopy(pix) for pix in booked]
    # One notification with an amount the provider does not stand behind.
    notified[0]["valor"] = "99.99"
    _notify(engine, *notified, forged)
    provider.settle_refund(refunding, refund["id"])

    with sandbox_servers(provider) as urls:
        settings = urls.configure(Settings(_env_file=None, confirm_grace_seconds=900))
        api = qrcode_api(settings)
        assert api is not None
        now = datetime.now(UTC)
        polled = poll_received_pix(
            api,
            engine,
            now - timedelta(days=1),
            now + timedelta(hours=1),
            # As a command without workers does: what is new is processed page by page.
            on_new=lambda ids: process_items(engine, ids),
        )
        # The settled refund is a new fact (an item of its own), not a disagreement.
        assert (polled.seen, len(polled.new_ids), polled.settled) == (30, 1, 30)
        # Only the forged one is left for a look-up of its own.
        with session_scope(engine) as session:
            session.execute(update(PixReceived).values(next_check_at=PixReceived.created_at))
        left = confirm_all(engine, api, None, settings)
        assert (left.handled, len(left.still_pending)) == (1, 1)

    assert _pix(engine, booked[0]["endToEndId"]).confirmation == "amount_mismatch"
    assert {_pix(engine, p["endToEndId"]).confirmation for p in booked[1:]} == {"confirmed"}
    assert _pix(engine, forged["endToEndId"]).confirmation == "pending"
    settled = _refund(engine, refunding)
    assert (settled.status, settled.confirmation, settled.amount_cents) == (
        "DEVOLVIDO",
        "confirmed",
        100,
    )


def test_a_refund_looked_up_after_it_settled_takes_the_apis_state(engine: Engine) -> None:
    """``GET /pix/{e2eid}`` of a refund notified in progress and settled since: the refund
    moved on, it does not disagree. The API's answer is stored and processed (``on_new``),
    and the refund is settled and confirmed as the API states it."""
    provider = SandboxProvider(seed=12)
    pix = provider.receive_pix(Decimal("20.00"))
    e2e = pix["endToEndId"]
    refund = provider.refund_pix(e2e, Decimal("5.00"), status="EM_PROCESSAMENTO")
    _notify(engine, provider.get_pix(e2e) or {})
    provider.settle_refund(e2e, refund["id"])
    stored: list[int] = []

    def on_new(ids: list[int]) -> None:
        stored.extend(ids)
        process_items(engine, ids)

    with sandbox_servers(provider) as urls:
        settings = urls.configure(Settings(_env_file=None, confirm_grace_seconds=900))
        api = qrcode_api(settings)
        assert api is not None
        report = confirm_all(engine, api, None, settings, on_new=on_new)

    assert (report.mismatched, len(stored)) == ([], 1)
    settled = _refund(engine, e2e)
    assert (settled.status, settled.confirmation, settled.confirmed_amount_cents) == (
        "DEVOLVIDO",
        "confirmed",
        500,
    )
    assert _pix(engine, e2e).confirmation == "confirmed"


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def test_the_api_states_which_day_a_pix_is_of(engine: Engine) -> None:
    """A webhook's clock two seconds ahead puts a Pix of 23:59:59 in the next day; the
    API's time is the Pix's, by a listing or by a look-up of its own."""
    listed, looked_up = e2e_id(11), e2e_id(12)
    ahead = "2026-03-03T00:00:01-03:00"
    _notify(
        engine, _listed(listed, "0.01", horario=ahead), _listed(looked_up, "0.01", horario=ahead)
    )
    stated = "2026-03-02T23:59:59-03:00"
    confirm_listed(engine, [_listed(listed, "0.01", horario=stated)])
    assert as_utc(_pix(engine, listed).horario or EPOCH) == datetime(
        2026, 3, 3, 2, 59, 59, tzinfo=UTC
    )
    assert _pix(engine, listed).confirmation == "confirmed"

    class Api:
        def get_pix(self, e2e: str) -> dict[str, Any]:
            return _listed(e2e, "0.01", horario=stated)

    confirm_pending_pix(engine, Api(), grace=timedelta(minutes=10))
    assert as_utc(_pix(engine, looked_up).horario or EPOCH) == datetime(
        2026, 3, 3, 2, 59, 59, tzinfo=UTC
    )
    # A time the API states unreadably leaves the stored one.
    assert take_api_times(engine, {looked_up: "yesterday"}) == 0
