"""``pixrecon events replay``: one item, failed items since a time, a kind, a reference;
dry runs; never an effect twice; every replay recorded."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, update
from sqlmodel import col

from reconcile.db import session_scope
from reconcile.inbox import NewItem, dump_json, store_items
from reconcile.models import InboxItem, ItemStatus, OperatorAction, PixReceived, Source
from reconcile.processing import process_items
from reconcile.replay import NothingSelected, Selection, replay_items
from reconcile.timeutil import utcnow
from tests.cli_support import clean_env, run_pixrecon
from tests.factories import pix

BROKEN = {"valor": "oops"}  # no endToEndId: fails permanently


def _store(engine: Engine, kind: str, key: str, body: object) -> int:
    with session_scope(engine) as session:
        (item_id,) = store_items(
            session, [NewItem(kind=kind, key=key, payload=dump_json(body))], source=Source.WEBHOOK
        ).new_ids
    return item_id


def _mend(engine: Engine, item_id: int, body: object, received_days_ago: float = 0) -> None:
    with session_scope(engine) as session:
        session.execute(
            update(InboxItem)
            .where(col(InboxItem.id) == item_id)
            .values(
                payload=dump_json(body),
                received_at=utcnow() - timedelta(days=received_days_ago),
            )
        )


def _status(engine: Engine, item_id: int) -> str:
    with session_scope(engine) as session:
        item = session.get(InboxItem, item_id)
        assert item is not None
        return item.status


def _pix_rows(engine: Engine) -> int:
    with session_scope(engine) as session:
        return int(session.execute(select(func.count()).select_from(PixReceived)).scalar_one())


def _day_of_failures(engine: Engine) -> dict[str, int]:
    """A processed Pix, an old failed one, a recent failed one, a failed refund, an
    unsupported item — then every failed payload mended, as after a fix."""
    done = pix()
    ids = {
        "done": _store(engine, "pix", f"pix:{done['endToEndId']}", done),
        "old": _store(engine, "pix", "pix:old", BROKEN),
        "recent": _store(engine, "pix", "pix:recent", BROKEN),
        "refund": _store(engine, "pix_refund", "refund:r1:DEVOLVIDO", {"devolucao": {}}),
        "odd": _store(engine, "mystery", "mystery:1", {"x": 1}),
    }
    report = process_items(engine, list(ids.values()))
    assert sorted(report.failed) == sorted([ids["old"], ids["recent"], ids["refund"]])
    assert report.processed == [ids["done"]]
    _mend(engine, ids["old"], pix(), received_days_ago=3)
    _mend(engine, ids["recent"], pix())
    return ids


def test_a_selection_needs_a_selector_and_an_id_stands_alone() -> None:
    with pytest.raises(NothingSelected):
        Selection()
    with pytest.raises(NothingSelected):
        Selection(item_id=1, kind="pix")


def test_failed_since_a_time_replays_only_those(engine: Engine) -> None:
    ids = _day_of_failures(engine)
    since = utcnow() - timedelta(days=1)
    result = replay_items(
        engine, Selection(since=since, statuses=(ItemStatus.FAILED,)), actor="cli:test"
    )
    assert sorted(result.flipped) == sorted([ids["recent"], ids["refund"]])
    assert _status(engine, ids["old"]) == "failed"
    assert _status(engine, ids["recent"]) == "pending"
    assert _status(engine, ids["done"]) == "processed"
    report = process_items(engine, result.flipped)
    assert report.processed == [ids["recent"]]
    assert report.failed == [ids["refund"]]  # its payload was not mended
    assert _pix_rows(engine) == 2


def test_by_kind_by_ref_and_unsupported_by_default(engine: Engine) -> None:
    ids = _day_of_failures(engine)
    of_kind = replay_items(engine, Selection(kind="mystery"), actor="cli:test")
    assert of_kind.flipped == [ids["odd"]]
    with session_scope(engine) as session:
        refs = {
            r.key: r.id for r in session.execute(select(InboxItem)).scalars() if r.id == ids["done"]
        }
    (done_key,) = refs
    by_ref = replay_items(engine, Selection(ref=done_key.removeprefix("pix:")), actor="cli:test")
    # The processed Pix carries that endToEndId, and a selection never takes it.
    assert by_ref.chosen == []
    assert _status(engine, ids["done"]) == "processed"


def test_a_dry_run_changes_nothing_and_is_recorded(engine: Engine) -> None:
    ids = _day_of_failures(engine)
    result = replay_items(engine, Selection(kind="pix"), actor="cli:ana", dry_run=True)
    assert sorted(item.id for item in result.chosen) == sorted([ids["old"], ids["recent"]])
    assert result.flipped == []
    assert _status(engine, ids["old"]) == "failed"
    with session_scope(engine) as session:
        (action,) = session.execute(select(OperatorAction)).scalars()
    assert (action.action, action.actor, action.dry_run, action.count) == (
        "replay",
        "cli:ana",
        True,
        2,
    )
    assert json.loads(action.selection) == {"kind": "pix"}
    assert json.loads(action.detail or "{}") == {"pix": 2}


def test_a_processed_item_is_never_processed_twice(engine: Engine) -> None:
    ids = _day_of_failures(engine)
    refused = replay_items(engine, Selection(item_id=ids["done"]), actor="cli:test")
    assert refused.refused is not None
    assert refused.flipped == []
    everything = replay_items(engine, Selection(statuses=tuple(ItemStatus)), actor="cli:test")
    assert ids["done"] not in everything.flipped
    with session_scope(engine) as session:
        before = session.execute(select(PixReceived)).scalars().one()
        first_seen = (before.end_to_end_id, before.created_at)
    forced = replay_items(engine, Selection(item_id=ids["done"], force=True), actor="cli:test")
    assert forced.flipped == [ids["done"]]
    assert process_items(engine, forced.flipped).processed == [ids["done"]]
    with session_scope(engine) as session:
        rows = session.execute(select(PixReceived)).scalars().all()
    # Its write is keyed: forcing it again left the one row as it was.
    assert [(r.end_to_end_id, r.created_at) for r in rows if r.end_to_end_id == first_seen[0]] == [
        first_seen
    ]


def test_the_command_replays_and_says_so(tmp_path: Path) -> None:
    from migrations.apply import upgrade
    from reconcile.db import create_db_engine

    url = f"sqlite:///{tmp_path / 'replay.db'}"
    engine = create_db_engine(url)
    upgrade(engine)
    ids = _day_of_failures(engine)
    env = {**clean_env(), "PIXRECON_DATABASE_URL": url}

    def run(*args: str) -> tuple[int, str, str]:
        done = run_pixrecon("events", "replay", *args, cwd=tmp_path, env=env)
        return done.returncode, done.stdout, done.stderr

    code, out, err = run("--kind", "pix", "--dry-run", "--format", "json")
    assert code == 0, err
    shown = json.loads(out)
    assert (shown["dry_run"], shown["selected"], shown["replayed"]) == (True, 2, 0)
    code, out, err = run("--since", (utcnow() - timedelta(days=1)).date().isoformat())
    assert code == 0, err
    # Failed and unsupported since then: the mended Pix goes through, the rest fail again.
    said = " ".join(out.split())
    assert "3 items pending again and processed here: 1 processed, 1 failed, 1 unsupported" in said
    assert _status(engine, ids["old"]) == "failed"
    code, out, err = run(str(ids["old"]))
    assert code == 0, err
    assert "1 item pending again and processed here" in " ".join(out.split())
    code, out, err = run(str(ids["done"]))
    assert code == 2, "exit 1 is reconcile's: exceptions remain"
    assert "already processed" in err
    assert "--force" in err
    for bad, words in (
        ((), "name an item id"),
        (("--since", "yesterday"), "is not a date or time"),
        (("424242",), "no inbox item 424242"),
    ):
        code, out, err = run(*bad)
        assert code == 2, (bad, out, err)
        assert words in err
        assert "Traceback" not in err
    with session_scope(engine) as session:
        recorded = (
            session.execute(select(OperatorAction).order_by(col(OperatorAction.id))).scalars().all()
        )
    assert [(a.dry_run, a.count) for a in recorded][:2] == [(True, 2), (False, 3)]
    assert all(a.actor.startswith("cli:") for a in recorded)
