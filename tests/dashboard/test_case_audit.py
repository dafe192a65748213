"""The audit of people's actions on exception cases (``case_event``): written by
``reconcile.cases.set_state`` whoever calls it — the dashboard or ``pixrecon exceptions`` —
and append-only in the database itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from reconcile.cases import (
    NoteRequired,
    case_events,
    case_rows,
    command_line_actor,
    set_state,
)
from reconcile.db import session_scope
from reconcile.models import CaseState, ExceptionCase
from tests.cli_support import clean_env, run_pixrecon
from tests.dashboard.support import seed_case


def test_each_action_is_recorded_with_who_when_and_the_note(engine: Engine) -> None:
    case_id = seed_case(engine)
    with session_scope(engine) as session:
        set_state(session, case_id, CaseState.ACKNOWLEDGED, None, actor="dashboard:alice")
    with session_scope(engine) as session:
        set_state(session, case_id, CaseState.RESOLVED, "  refunded  ")
    with session_scope(engine) as session:
        events = case_events(session, case_id)
        case = session.get(ExceptionCase, case_id)
        assert case is not None
        assert case.state == "resolved"
        assert case.note == "refunded"
    assert [(e.action, e.actor, e.note, e.previous_state) for e in events] == [
        ("acknowledge", "dashboard:alice", None, "open"),
        ("resolve", command_line_actor(), "refunded", "acknowledged"),
    ]
    assert command_line_actor().startswith("cli:")
    assert events[0].at <= events[1].at


def test_resolving_without_a_note_records_nothing(engine: Engine) -> None:
    case_id = seed_case(engine)
    for note in (None, "", "   "):
        with pytest.raises(NoteRequired), session_scope(engine) as session:
            set_state(session, case_id, CaseState.RESOLVED, note, actor="dashboard:alice")
    with session_scope(engine) as session:
        assert case_events(session, case_id) == []
        case = session.get(ExceptionCase, case_id)
        assert case is not None
        assert case.state == "open"


@pytest.mark.parametrize(
    "statement",
    ["UPDATE case_event SET note = 'rewritten'", "DELETE FROM case_event"],
)
def test_the_audit_cannot_be_rewritten(engine: Engine, statement: str) -> None:
    case_id = seed_case(engine)
    with session_scope(engine) as session:
        set_state(session, case_id, CaseState.RESOLVED, "refunded", actor="dashboard:alice")
    with pytest.raises(DBAPIError, match="append-only"), engine.begin() as connection:
        connection.execute(text(statement))
    with session_scope(engine) as session:
        [event] = case_events(session, case_id)
        assert event.note == "refunded"


def test_the_command_line_leaves_the_same_trail(engine: Engine, tmp_path: Path) -> None:
    case_id = seed_case(engine)
    env = clean_env(database_url=engine.url.render_as_string(hide_password=False))
    acked = run_pixrecon("exceptions", "ack", str(case_id), cwd=tmp_path, env=env)
    assert acked.returncode == 0, acked.stderr
    resolved = run_pixrecon(
        "exceptions", "resolve", str(case_id), "--note", "paid back", cwd=tmp_path, env=env
    )
    assert resolved.returncode == 0, resolved.stderr
    with session_scope(engine) as session:
        events = case_events(session, case_id)
    assert [(e.action, e.note) for e in events] == [
        ("acknowledge", None),
        ("resolve", "paid back"),
    ]
    assert {e.actor for e in events} == {command_line_actor()}


def test_a_document_typed_into_a_note_is_masked_wherever_cases_are_listed(
    engine: Engine,
) -> None:
    """``pixrecon exceptions`` and the day's report list cases from ``case_rows``: a CPF
    or CNPJ a person typed there leaves masked, as the dashboard and exports show it."""
    case_id = seed_case(engine)
    with session_scope(engine) as session:
        note = "refunded to CPF 390.533.447-05, CNPJ 11.222.333/0001-81"
        set_state(session, case_id, CaseState.ACKNOWLEDGED, note, actor="dashboard:alice")
    with session_scope(engine) as session:
        (row,) = case_rows(session, case_ids=[case_id], states=tuple(CaseState))
    assert row["note"] == "refunded to CPF *********05, CNPJ ************81"


def test_the_tables_granted_to_bi_never_hold_a_typed_document(engine: Engine) -> None:
    case_id = seed_case(engine)
    with session_scope(engine) as session:
        note = "refunded to CPF 390.533.447-05"
        set_state(session, case_id, CaseState.ACKNOWLEDGED, note, actor="dashboard:alice")
    with engine.connect() as connection:
        stored = connection.execute(
            text(
                "SELECT c.note, e.note, v.note FROM exception_case c "
                "JOIN case_event e ON e.case_id = c.id "
                "JOIN v_open_exceptions v ON v.case_id = c.id"
            )
        ).one()
    assert tuple(stored) == ("refunded to CPF *********05",) * 3


def test_acknowledging_a_resolved_case_is_recorded_as_reopening_it(engine: Engine) -> None:
    case_id = seed_case(engine)
    with session_scope(engine) as session:
        set_state(session, case_id, CaseState.RESOLVED, "refunded")
    with session_scope(engine) as session:
        set_state(session, case_id, CaseState.ACKNOWLEDGED, "not refunded after all")
    with session_scope(engine) as session:
        events = case_events(session, case_id)
        case = session.get(ExceptionCase, case_id)
        assert case is not None
        assert case.state == "acknowledged"
    assert [(e.action, e.previous_state) for e in events] == [
        ("resolve", "open"),
        ("reopen", "resolved"),
    ]
