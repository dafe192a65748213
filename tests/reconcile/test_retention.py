"""Retention (``reconcile/retention.py``): old raw bodies and processed items of reconciled
days go; days not reconciled, open exceptions and items that need a person keep theirs;
results stay, their personal data masked; dry runs change nothing; a second prune is a
no-op; every prune is recorded."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, select, update
from sqlmodel import SQLModel, col

from reconcile.db import session_scope, table_of
from reconcile.inbox import Delivery, NewItem, dump_json, store_deliveries, store_items
from reconcile.models import (
    CaseState,
    ExceptionCase,
    InboxItem,
    InboxRef,
    ItemStatus,
    OperatorAction,
    PixReceived,
    QuarantinedDelivery,
    ReconciliationRun,
    Source,
    UnreadItem,
    WebhookDelivery,
)
from reconcile.processing import process_items
from reconcile.retention import PRUNED_PAYLOAD, mask_column, prune
from reconcile.timeutil import BUSINESS_TZ, business_day_bounds, utcnow
from reconcile.unread import Skipped, remember, unread_on
from tests.factories import e2e_id, pix

RETENTION_DAYS = 90
CPF = "12345678909"


@dataclass
class World:
    """A history of items, days and cases around the retention period, by name."""

    now: datetime
    items: dict[str, int] = field(default_factory=dict)
    deliveries: dict[str, int] = field(default_factory=dict)
    e2e: dict[str, str] = field(default_factory=dict)
    quarantined: dict[str, int] = field(default_factory=dict)


def _noon(day: date) -> datetime:
    return datetime.combine(day, time(12), tzinfo=BUSINESS_TZ).astimezone(UTC)


def _run(engine: Engine, day: date, verdict: str, status: str = "completed") -> int:
    with session_scope(engine) as session:
        run = ReconciliationRun(
            business_date=day, status=status, verdict=verdict, finished_at=utcnow()
        )
        session.add(run)
        session.flush()
        assert run.id is not None
        return run.id


def build_world(engine: Engine, now: datetime | None = None) -> World:
    """Four business days — reconciled and old, ``breaks`` (after an earlier reconciled
    run) and old, old without any run, reconciled and recent — holding processed Pix
    (with their results), processed items no result points at, an ignored one, failed
    and pending ones, a Pix an open case names, and refused deliveries old and new."""
    now = now or utcnow()
    today = now.astimezone(BUSINESS_TZ).date()
    days = {
        "ok": today - timedelta(days=RETENTION_DAYS + 30),
        "breaks": today - timedelta(days=RETENTION_DAYS + 29),
        "no_run": today - timedelta(days=RETENTION_DAYS + 28),
        "recent": today - timedelta(days=RETENTION_DAYS - 10),
    }
    world = World(now=now)

    def pix_item(name: str, day: str, **extra: Any) -> None:
        e2e = world.e2e[name] = e2e_id()
        body = pix(e2e=e2e, **extra)
        raw = json.dumps({"pix": [body]}).encode()
        item = NewItem(kind="pix", key=f"pix:{e2e}", payload=dump_json(body))
        delivery = Delivery("/webhooks/qrcode/pix", "10.0.0.1", {}, raw, [item])
        with session_scope(engine) as session:
            (stored,) = store_deliveries(session, [delivery], now=_noon(days[day]))
            world.items[name] = stored.item_ids[0]
            found = session.execute(
                select(col(InboxItem.delivery_id)).where(col(InboxItem.id) == stored.item_ids[0])
            ).scalar_one()
            assert found is not None
            world.deliveries[name] = found

    def plain_item(name: str, day: str, status: ItemStatus) -> None:
        e2e = world.e2e[name] = e2e_id()
        payload = dump_json({"endToEndId": e2e, "pagador": {"cpf": CPF, "nome": "Beltrano"}})
        with session_scope(engine) as session:
            (item_id,) = store_items(
                session,
                [NewItem(kind="accounts.transfer", key=f"t:{e2e}", payload=payload, refs=(e2e,))],
                source=Source.POLL,
                now=_noon(days[day]),
            ).new_ids
            session.execute(
                update(InboxItem).where(col(InboxItem.id) == item_id).values(status=status.value)
            )
        world.items[name] = item_id

    pix_item("pix_ok", "ok", infoPagador=f"pedido 42, CPF {CPF[:3]}.{CPF[3:6]}.{CPF[6:9]}-09")
    pix_item("pix_case", "ok")
    pix_item("pix_breaks", "breaks")
    pix_item("pix_recent", "recent")
    process_items(
        engine, [world.items[n] for n in ("pix_ok", "pix_case", "pix_breaks", "pix_recent")]
    )
    plain_item("done_ok", "ok", ItemStatus.PROCESSED)
    plain_item("ignored_ok", "ok", ItemStatus.IGNORED)
    plain_item("failed_ok", "ok", ItemStatus.FAILED)
    plain_item("pending_ok", "ok", ItemStatus.PENDING)
    plain_item("unsupported_ok", "ok", ItemStatus.UNSUPPORTED)
    plain_item("done_breaks", "breaks", ItemStatus.PROCESSED)
    plain_item("done_no_run", "no_run", ItemStatus.PROCESSED)
    plain_item("done_recent", "recent", ItemStatus.PROCESSED)

    _run(engine, days["ok"], "breaks")
    _run(engine, days["ok"], "reconciled")
    _run(engine, days["breaks"], "reconciled")
    breaks = _run(engine, days["breaks"], "breaks")
    _run(engine, days["recent"], "reconciled")
    with session_scope(engine) as session:
        # A case raised on another day names a Pix of the reconciled day (a refund
        # deadline, a Pix carried across midnight): that Pix is kept whole.
        session.add(
            ExceptionCase(
                business_date=days["breaks"],
                subject="movement",
                ref=world.e2e["pix_case"],
                status="amount_mismatch",
                state=CaseState.ACKNOWLEDGED.value,
                first_seen_run_id=breaks,
                last_seen_run_id=breaks,
            )
        )
        for name, at in (("old", _noon(days["ok"])), ("new", _noon(days["recent"]))):
            refused = QuarantinedDelivery(
                received_at=at,
                route="/webhooks/qrcode/pix",
                status_code=400,
                reason="no_business_key",
                detail="{}",
                headers="{}",
                body=json.dumps({"pagador": {"cpf": CPF}}).encode(),
            )
            session.add(refused)
            session.flush()
            assert refused.id is not None
            world.quarantined[name] = refused.id
    return world


def snapshot(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table but the operator's record, comparable."""
    with engine.connect() as connection:
        return {
            table.name: sorted(
                tuple(str(v) for v in row)
                for row in connection.execute(select(table).order_by(*table.primary_key))
            )
            for table in SQLModel.metadata.sorted_tables
            if table.name != "operator_action"
        }


def _item(engine: Engine, item_id: int) -> InboxItem | None:
    with session_scope(engine) as session:
        found = session.get(InboxItem, item_id)
        if found is not None:
            session.expunge(found)
        return found


def _pix_row(engine: Engine, e2e: str) -> PixReceived:
    with session_scope(engine) as session:
        row: PixReceived = session.execute(
            select(PixReceived).where(col(PixReceived.end_to_end_id) == e2e)
        ).scalar_one()
        session.expunge(row)
        return row


def _count(engine: Engine, model: type[SQLModel]) -> int:
    with engine.connect() as connection:
        return int(
            connection.execute(select(func.count()).select_from(table_of(model))).scalar_one()
        )


def test_masking_a_masked_value_changes_nothing() -> None:
    for kind, value in (("document", CPF), ("name", "Fulana de Tal"), ("text", f"CPF {CPF}")):
        once = mask_column(kind, value)
        assert once != value
        assert mask_column(kind, once) == once
    assert mask_column("document", CPF) == "*********09"


def test_old_items_of_reconciled_days_go_and_everything_needed_stays(engine: Engine) -> None:
    world = build_world(engine)
    results_before = _count(engine, PixReceived)
    with session_scope(engine) as session:
        delivery_ok = session.get(WebhookDelivery, world.deliveries["pix_ok"])
        assert delivery_ok is not None
        assert delivery_ok.body

    report = prune(engine, now=world.now, retention_days=RETENTION_DAYS, actor="cli:ana", batch=2)

    # Gone: old final items of the reconciled day that no result points at, and their refs.
    for name in ("done_ok", "ignored_ok"):
        assert _item(engine, world.items[name]) is None, name
    with session_scope(engine) as session:
        refs = session.execute(
            select(col(InboxRef.item_id)).where(
                col(InboxRef.item_id).in_([world.items["done_ok"], world.items["ignored_ok"]])
            )
        ).all()
    assert refs == []
    # Kept without its raw body: the Pix whose result points at it, and its delivery's body.
    kept = _item(engine, world.items["pix_ok"])
    assert kept is not None
    assert kept.payload == PRUNED_PAYLOAD
    assert kept.status == ItemStatus.PROCESSED.value
    with session_scope(engine) as session:
        delivery = session.get(WebhookDelivery, world.deliveries["pix_ok"])
        assert delivery is not None
        assert delivery.body == b""
        case_delivery = session.get(WebhookDelivery, world.deliveries["pix_case"])
        assert case_delivery is not None
        assert case_delivery.body
    # Results stay, their personal data masked.
    assert _count(engine, PixReceived) == results_before
    row = _pix_row(engine, world.e2e["pix_ok"])
    assert row.payer_document == "*********09"
    assert row.payer_name == "F***** d* T**"
    assert row.info_pagador == "pedido 42, CPF *********09"
    assert row.amount_cents == 11000
    # Kept whole: items needing a person, days not reconciled or without a run, an item an
    # open case names, recent items; and the results of those.
    for name in (
        "failed_ok",
        "pending_ok",
        "unsupported_ok",
        "done_breaks",
        "pix_breaks",
        "done_no_run",
        "pix_case",
        "pix_recent",
        "done_recent",
    ):
        found = _item(engine, world.items[name])
        assert found is not None, name
        assert found.payload != PRUNED_PAYLOAD, name
        assert CPF in found.payload, name
    for name in ("pix_case", "pix_breaks", "pix_recent"):
        assert _pix_row(engine, world.e2e[name]).payer_document == CPF, name
    # Refused deliveries: the period alone decides.
    with session_scope(engine) as session:
        assert session.get(QuarantinedDelivery, world.quarantined["old"]) is None
        assert session.get(QuarantinedDelivery, world.quarantined["new"]) is not None
    # Runs and cases are never touched.
    assert _count(engine, ReconciliationRun) == 5
    assert _count(engine, ExceptionCase) == 1

    assert report.tables()["inbox_item"] == {"deleted": 2, "raw_removed": 1, "masked": 0}
    assert report.tables()["webhook_delivery"]["raw_removed"] == 1
    assert report.tables()["pix_received"] == {"deleted": 0, "raw_removed": 0, "masked": 1}
    assert report.tables()["quarantined_delivery"]["deleted"] == 1
    assert report.deleted["inbox_ref"] == 2
    assert report.kept == {
        "needs_a_person": 3,
        "open_exception": 1,
        "day_not_reconciled": 3,
        "unread": 0,
    }
    assert report.total == 2 + 2 + 1 + 1 + 1 + 1
    with session_scope(engine) as session:
        (action,) = session.execute(select(OperatorAction)).scalars()
    assert (action.action, action.actor, action.dry_run, action.count) == (
        "prune",
        "cli:ana",
        False,
        report.total,
    )
    assert action.id == report.action_id
    detail = json.loads(action.detail or "{}")
    assert detail["tables"]["inbox_item"]["deleted"] == 2
    assert json.loads(action.selection)["retention_days"] == RETENTION_DAYS


def test_a_dry_run_counts_the_same_and_changes_nothing(engine: Engine) -> None:
    world = build_world(engine)
    before = snapshot(engine)
    dry = prune(engine, now=world.now, retention_days=RETENTION_DAYS, actor="cli:x", dry_run=True)
    assert snapshot(engine) == before
    real = prune(engine, now=world.now, retention_days=RETENTION_DAYS, actor="cli:x")
    assert dry.tables() == real.tables()
    assert dry.kept == real.kept
    assert dry.total == real.total > 0
    with session_scope(engine) as session:
        recorded = (
            session.execute(select(OperatorAction).order_by(col(OperatorAction.id))).scalars().all()
        )
    assert [(a.dry_run, a.count) for a in recorded] == [(True, dry.total), (False, real.total)]


def test_a_second_prune_is_a_no_op(engine: Engine) -> None:
    world = build_world(engine)
    prune(engine, now=world.now, retention_days=RETENTION_DAYS, actor="job:prune")
    after_first = snapshot(engine)
    again = prune(engine, now=world.now, retention_days=RETENTION_DAYS, actor="job:prune")
    assert again.total == 0
    assert snapshot(engine) == after_first
    assert again.kept == {
        "needs_a_person": 3,
        "open_exception": 1,
        "day_not_reconciled": 3,
        "unread": 0,
    }


def test_released_later_when_the_day_is_reconciled_and_the_case_resolved(engine: Engine) -> None:
    world = build_world(engine)
    prune(engine, now=world.now, retention_days=RETENTION_DAYS, actor="job:prune")
    breaks_day = (world.now.astimezone(BUSINESS_TZ) - timedelta(days=RETENTION_DAYS + 29)).date()
    _run(engine, breaks_day, "reconciled")
    with session_scope(engine) as session:
        session.execute(update(ExceptionCase).values(state=CaseState.RESOLVED.value))
    later = prune(engine, now=world.now, retention_days=RETENTION_DAYS, actor="job:prune")
    assert _item(engine, world.items["done_breaks"]) is None
    for name in ("pix_breaks", "pix_case"):
        found = _item(engine, world.items[name])
        assert found is not None, name
        assert found.payload == PRUNED_PAYLOAD, name
        assert _pix_row(engine, world.e2e[name]).payer_document == "*********09"
    assert later.kept == {
        "needs_a_person": 3,
        "open_exception": 0,
        "day_not_reconciled": 1,
        "unread": 0,
    }


def test_a_day_re_run_with_breaks_is_kept(engine: Engine) -> None:
    """The latest run decides, even when it is still running or failed."""
    world = build_world(engine)
    ok_day = (world.now.astimezone(BUSINESS_TZ) - timedelta(days=RETENTION_DAYS + 30)).date()
    _run(engine, ok_day, "reconciled", status="running")
    report = prune(engine, now=world.now, retention_days=RETENTION_DAYS, actor="job:prune")
    assert report.days == []
    assert _item(engine, world.items["done_ok"]) is not None


def test_bad_arguments_are_refused(engine: Engine) -> None:
    with pytest.raises(ValueError, match="at least one day"):
        prune(engine, now=utcnow(), retention_days=0, actor="cli:x")
    with pytest.raises(ValueError, match="at least one row"):
        prune(engine, now=utcnow(), retention_days=1, actor="cli:x", batch=0)


def test_an_item_a_listing_could_not_read_is_kept_past_the_period_and_counted(
    engine: Engine,
) -> None:
    """What it left out is in no total: pruned, its day judged again would say
    ``reconciled`` of a day nobody read whole. So it stays, however old, and the prune
    says how many such old items there are; a read that reads them clears them."""
    now = utcnow()
    old_day = (now - timedelta(days=RETENTION_DAYS + 30)).astimezone(BUSINESS_TZ).date()
    recent_day = (now - timedelta(days=3)).astimezone(BUSINESS_TZ).date()
    for day in (old_day, recent_day):
        remember(
            engine,
            "statement",
            _noon(day) - timedelta(hours=1),
            _noon(day) + timedelta(hours=1),
            [Skipped("line-unreadable", "amount: not a number", None)],
        )
    _run(engine, old_day, "reconciled")

    report = prune(engine, now=now, retention_days=RETENTION_DAYS, actor="job:prune")

    assert report.kept["unread"] == 1
    assert _count(engine, UnreadItem) == 2
    with session_scope(engine) as session:
        start, end = business_day_bounds(old_day)
        (because,) = unread_on(session, old_day, start, end, end)
    assert "line-unreadable" in because
