"""Scenario features the reconciliation tests lean on, checked on the sandbox's own APIs: a
statement that books a Pix after midnight, MED debit lines as different providers book
them, MED blocks and deadlines, recurrences that started before the day (and the cycles
that fall on it), and a transfer notification with no key to look it up by."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from sandbox.accounts import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_ACCOUNTS_CLIENT_ID,
    DEFAULT_ACCOUNTS_CLIENT_SECRET,
    create_accounts_app,
)
from sandbox.app import create_app
from sandbox.automatico_records import is_cycle_date, next_cycle_date
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from sandbox.scenario import ScenarioError, ScenarioOutcome, parse_scenario
from sandbox.scenario.fields import to_cents
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.scenario_support import Recorder, bearer, day, pix, play
from tests.sandbox.scenario_support import recorder_server as recorder_server

Server = tuple[Recorder, BackgroundServer]


@dataclass
class Apis:
    """Both sandbox APIs over HTTP, serving whichever provider a test played its day on."""

    qrcode: BackgroundServer
    accounts: BackgroundServer
    apps: tuple[Starlette, Starlette]

    def serve(self, provider: SandboxProvider) -> None:
        for app in self.apps:
            app.state.provider = provider

    def accounts_get(self, path: str, **params: str) -> Any:
        token = bearer(
            self.accounts.url,
            "/oauth/token",
            {"grant_type": "client_credentials"},
            (DEFAULT_ACCOUNTS_CLIENT_ID, DEFAULT_ACCOUNTS_CLIENT_SECRET),
        )
        answer = httpx.get(
            self.accounts.url + path,
            params=params,
            headers={"Authorization": f"Bearer {token}", "x-account-id": DEFAULT_ACCOUNT_ID},
        )
        assert answer.status_code == 200, answer.text
        return json.loads(answer.content, parse_float=Decimal)

    def statement(self, start: datetime, end: datetime) -> list[dict[str, Any]]:
        window = {"start": start.isoformat(), "end": end.isoformat(), "perPage": "100"}
        lines: list[dict[str, Any]] = self.accounts_get("/accounts/statement", **window)["data"]
        return lines

    def qrcode_get(self, path: str) -> Any:
        token = bearer(
            self.qrcode.url,
            "/oauth/token",
            {"grant_type": "client_credentials"},
            (DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET),
        )
        answer = httpx.get(self.qrcode.url + path, headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 200, answer.text
        return answer.json()


@pytest.fixture(scope="module")
def apis() -> Iterator[Apis]:
    apps = (create_app(), create_accounts_app())
    with BackgroundServer(apps[0]) as qrcode, BackgroundServer(apps[1]) as accounts:
        yield Apis(qrcode, accounts, apps)


def _played(server: Server, apis: Apis, *events: dict[str, Any], **top: Any) -> ScenarioOutcome:
    outcome, provider = play(day(*events, **top), server[1])
    apis.serve(provider)
    return outcome


def _problems(*events: dict[str, Any], **top: Any) -> list[str]:
    data = {"name": "d", "date": "2026-03-02", **top, "events": list(events)}
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, source="day.json")
    return caught.value.problems


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- A statement booked late (midnight crossing) -------------------------------------------


def test_a_pix_booked_after_midnight_is_on_the_next_days_statement(
    recorder_server: Server, apis: Apis
) -> None:
    outcome = _played(
        recorder_server,
        apis,
        pix("pixNoon", "12:00", "42.00"),
        pix("pixLate", "23:59:30", "70.00", booked_after=60),
        opening_balance="300.00",
        fees={"pix_received": "0.99"},
    )
    late, noon = outcome.movement("pixLate"), outcome.movement("pixNoon")
    # 23:59:30 in São Paulo (UTC-3) is 02:59:30Z; booked a minute later, on the next day.
    assert late.at == datetime(2026, 3, 3, 2, 59, 30, tzinfo=UTC)
    assert late.booked_at == datetime(2026, 3, 3, 3, 0, 30, tzinfo=UTC)
    assert late.booked_after == 60
    assert noon.booked_at == noon.at
    assert outcome.day_end == datetime(2026, 3, 3, 3, 0, tzinfo=UTC)
    assert outcome.booked_next_day == (late,)

    # The QR code API and the notification keep the Pix's own time.
    assert apis.qrcode_get(f"/pix/{late.key}")["horario"] == "2026-03-03T02:59:30.000Z"
    (notified,) = [n for n in outcome.notifications if n.keys == (f"pix:{late.key}",)]
    assert notified.payload["horario"] == "2026-03-03T02:59:30.000Z"

    today = apis.statement(outcome.day_start, outcome.day_end)
    assert [(line["category"], line["endToEndId"]) for line in today] == [
        ("PIX_RECEIVED", noon.key),
        ("PIX_RECEIVED_FEE", noon.key),
    ]
    tomorrow = apis.statement(outcome.day_end, outcome.day_end + timedelta(days=1))
    assert [(line["category"], line["endToEndId"], line["createdAt"]) for line in tomorrow] == [
        ("PIX_RECEIVED", late.key, "2026-03-03T03:00:30.000Z"),
        ("PIX_RECEIVED_FEE", late.key, "2026-03-03T03:00:30.000Z"),
    ]

    totals = outcome.totals
    assert (totals.credits_cents, totals.debits_cents, totals.fees_cents) == (4200, 99, 99)
    assert dict(totals.by_category) == {"PIX_RECEIVED": 4200, "PIX_RECEIVED_FEE": 99}
    assert outcome.closing_balance_cents == 30_000 + 4200 - 99
    assert to_cents(today[-1]["balanceAfter"]) == outcome.closing_balance_cents
    assert outcome.final_balance_cents == outcome.closing_balance_cents + 7000 - 99
    assert to_cents(tomorrow[-1]["balanceAfter"]) == outcome.final_balance_cents
    balance = apis.accounts_get("/accounts/balances")["available"]
    assert to_cents(balance) == outcome.final_balance_cents


def test_a_charge_payment_and_a_debit_booked_late_within_the_day(
    recorder_server: Server, apis: Apis
) -> None:
    outcome = _played(
        recorder_server,
        apis,
        {"type": "charge_payment", "ref": "pix-order", "charge": "order", "at": "10:00",
         "booked_after": 600},
        {"type": "recurring_charge_attempt", "charge": "gym-march", "succeed": True,
         "ref": "pix-gym", "at": "11:00", "booked_after": 3600},
        charges=[{"ref": "order", "kind": "cob", "amount": "80.00", "at": "08:00"}],
        recurrences=[{"ref": "gym", "amount": "99.90", "at": "06:00"}],
        recurring_charges=[{"ref": "gym-march", "recurrence": "gym", "amount": "99.90",
                            "at": "06:10"}],
    )  # fmt: skip
    order, gym = outcome.movement("pix-order"), outcome.movement("pix-gym")
    assert order.booked_at == order.at + timedelta(minutes=10)
    assert gym.booked_at == gym.at + timedelta(hours=1)
    assert outcome.booked_next_day == ()
    lines = apis.statement(outcome.day_start, outcome.day_end)
    assert [(line["endToEndId"], _utc(line["createdAt"])) for line in lines] == [
        (order.key, order.booked_at),
        (gym.key, gym.booked_at),
    ]
    assert outcome.totals.credits_cents == 8000 + 9990
    assert outcome.closing_balance_cents == outcome.final_balance_cents == 17_990
    cobr = next(n.payload for n in outcome.notifications if n.channel == "cobr")
    assert cobr["tentativas"][0]["endToEndId"] == gym.key


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (pix("p", "10:00", booked_after=3601), "events[0] (pix).booked_after: Input should be"),
        (pix("p", "10:00", booked_after=-1), "events[0] (pix).booked_after: Input should be"),
        (pix("p", "10:00", booked_after="soon"), "events[0] (pix).booked_after: Input should"),
        (
            {"type": "refund", "ref": "r", "pix": "p", "amount": "1.00", "at": "10:00",
             "booked_after": 60},
            "events[0] (refund): unknown key 'booked_after'",
        ),
        (
            {"type": "recurring_charge_attempt", "charge": "c", "succeed": False, "at": "10:00",
             "booked_after": 60},
            "events[0] (recurring_charge_attempt): a failed attempt books no Pix: drop its "
            "booked_after",
        ),
    ],
)  # fmt: skip
def test_a_bad_booking_lag_is_refused(event: dict[str, Any], expected: str) -> None:
    problems = _problems(event)
    assert any(problem.startswith(expected) for problem in problems), problems


# -- MED: debit lines, partial debits, blocks and deadlines ----------------------------------


MED_EVENTS: tuple[dict[str, Any], ...] = (
    pix("pixA", "09:00", "500.00"),
    pix("pixB", "09:05", "300.00"),
    pix("pixC", "09:10", "200.00"),
    pix("pixD", "09:15", "100.00"),
    {"type": "infraction_opened", "ref": "medA", "pix": "pixA", "at": "10:00",
     "blocked": "500.00"},
    {"type": "infraction_opened", "ref": "medB", "pix": "pixB", "at": "10:05",
     "amount": "120.00", "blocked": "50.00", "reason": "SCAM"},
    {"type": "infraction_opened", "ref": "medC", "pix": "pixC", "at": "10:10"},
    {"type": "infraction_opened", "ref": "medD", "pix": "pixD", "at": "10:15",
     "blocked": "40.00"},
    {"type": "infraction_closed", "infraction": "medA", "debit": True, "at": "15:00"},
    {"type": "infraction_closed", "infraction": "medB", "debit": True, "at": "15:05",
     "debit_line": "end_to_end_id"},
    {"type": "infraction_closed", "infraction": "medC", "debit": True, "at": "15:10",
     "debit_line": "bare"},
)  # fmt: skip


def test_med_debit_lines_name_as_much_as_the_provider_says(
    recorder_server: Server, apis: Apis
) -> None:
    outcome = _played(recorder_server, apis, *MED_EVENTS, opening_balance="1000.00")
    refs = outcome.refs
    lines = apis.statement(outcome.day_start, outcome.day_end)
    # Blocking moved no money: four Pix in, three MED debits out, nothing else.
    assert [line["category"] for line in lines] == ["PIX_RECEIVED"] * 4 + ["INFRACTION_DEBIT"] * 3
    debits = [
        {k: line[k] for k in ("amount", "infractionId", "endToEndId", "originalEndToEndId")}
        for line in lines[4:]
    ]
    assert debits == [
        {
            "amount": Decimal("500.00"),
            "infractionId": refs["medA"],
            "endToEndId": None,
            "originalEndToEndId": refs["pixA"],
        },
        {
            "amount": Decimal("120.00"),  # the case was for part of the Pix
            "infractionId": None,
            "endToEndId": refs["pixB"],
            "originalEndToEndId": None,
        },
        {
            "amount": Decimal("200.00"),
            "infractionId": None,
            "endToEndId": None,
            "originalEndToEndId": None,
        },
    ]
    # Not even its line id gives the case away.
    assert not any(refs[ref] in line["id"] for line in lines[5:] for ref in ("medB", "medC"))

    med = {m.ref: m for m in outcome.movements_of("infraction_debit")}
    assert {ref: (m.debit_line, m.end_to_end_id) for ref, m in med.items()} == {
        "medA": ("full", None),
        "medB": ("end_to_end_id", refs["pixB"]),
        "medC": ("bare", None),
    }
    assert {ref: m.original_end_to_end_id for ref, m in med.items()} == {
        "medA": refs["pixA"],
        "medB": refs["pixB"],
        "medC": refs["pixC"],
    }
    assert outcome.totals.by_category["INFRACTION_DEBIT"] == 50_000 + 12_000 + 20_000
    assert outcome.closing_balance_cents == 100_000 + 110_000 - 82_000


def test_med_blocks_and_deadlines_in_the_api_notifications_and_truth(
    recorder_server: Server, apis: Apis
) -> None:
    recorder, _ = recorder_server
    recorder.reset()
    outcome = _played(recorder_server, apis, *MED_EVENTS, opening_balance="1000.00")
    refs = outcome.refs
    blocked = {"medA": "500.00", "medB": "50.00", "medC": "0.00", "medD": "40.00"}
    for ref, amount in blocked.items():
        case = apis.accounts_get(f"/infractions/{refs[ref]}")
        assert case["blockedAmount"] == Decimal(amount)
        assert _utc(case["analysisDeadline"]) == _utc(case["createdAt"]) + timedelta(days=7)
    listed = apis.accounts_get("/infractions", status="OPEN")["data"]
    assert [(c["id"], c["blockedAmount"]) for c in listed] == [(refs["medD"], Decimal("40.00"))]

    # Every INFRACTION notification carries them, as posted.
    posted = [p.body["data"] for p in recorder.posts if p.body.get("type") == "INFRACTION"]
    assert len(posted) == 7
    opened = {d["id"]: d for d in posted if d["status"] == "OPEN"}
    assert {case: data["blockedAmount"] for case, data in opened.items()} == {
        refs[ref]: Decimal(amount) for ref, amount in blocked.items()
    }
    assert opened[refs["medA"]]["analysisDeadline"] == "2026-03-09T13:00:00.000Z"
    assert all("blockedAmount" in data and "analysisDeadline" in data for data in posted)

    truth = {i.ref: i for i in outcome.infractions}
    assert {ref: i.blocked_cents for ref, i in truth.items()} == {
        "medA": 50_000,
        "medB": 5_000,
        "medC": 0,
        "medD": 4_000,
    }
    assert truth["medA"].opened_at == datetime(2026, 3, 2, 13, 0, tzinfo=UTC)
    assert truth["medA"].analysis_deadline == datetime(2026, 3, 9, 13, 0, tzinfo=UTC)
    assert {ref: (i.status, i.debited_cents, i.debit_line) for ref, i in truth.items()} == {
        "medA": ("CLOSED", 50_000, "full"),
        "medB": ("CLOSED", 12_000, "end_to_end_id"),
        "medC": ("CLOSED", 20_000, "bare"),
        "medD": ("OPEN", 0, None),
    }
    assert outcome.blocked_cents == 4_000  # what the cases still open hold


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (
            [pix("p", "09:00", "100.00"),
             {"type": "infraction_opened", "ref": "m", "pix": "p", "at": "10:00",
              "amount": "50.00", "blocked": "60.00"}],
            "events[1] (infraction_opened): blocked exceeds the disputed amount, 50.00",
        ),
        (
            [pix("p", "09:00", "100.00"),
             {"type": "infraction_opened", "ref": "m", "pix": "p", "at": "10:00",
              "blocked": "100.01"}],
            "events[1] (infraction_opened): blocked exceeds the disputed amount, 100.00",
        ),
        (
            [pix("p", "09:00", "100.00"),
             {"type": "infraction_opened", "ref": "m", "pix": "p", "at": "10:00",
              "blocked": "0.00"}],
            "events[1] (infraction_opened).blocked: '0.00' is not a positive amount",
        ),
        (
            [pix("p", "09:00", "100.00"),
             {"type": "infraction_opened", "ref": "m", "pix": "p", "at": "10:00"},
             {"type": "infraction_closed", "infraction": "m", "debit": False, "at": "11:00",
              "debit_line": "bare"}],
            "events[2] (infraction_closed): debit_line describes a debit: it needs debit true",
        ),
        (
            [pix("p", "09:00", "100.00"),
             {"type": "infraction_opened", "ref": "m", "pix": "p", "at": "10:00"},
             {"type": "infraction_closed", "infraction": "m", "debit": True, "at": "11:00",
              "debit_line": "txid"}],
            "events[2] (infraction_closed).debit_line: Input should be 'full', "
            "'end_to_end_id' or 'bare'",
        ),
    ],
)  # fmt: skip
def test_a_bad_med_case_is_refused(events: list[dict[str, Any]], expected: str) -> None:
    problems = _problems(*events)
    assert any(problem.startswith(expected) for problem in problems), problems


# -- Recurrences that started before the day, and the day's cycles ---------------------------


def test_recurrences_start_when_told_and_the_days_cycles_are_listed(
    recorder_server: Server, apis: Apis
) -> None:
    outcome = _played(
        recorder_server,
        apis,
        recurrences=[
            {"ref": "gym", "amount": "99.90", "at": "06:00", "start_in_days": -28},
            {"ref": "weekly", "amount": "10.00", "at": "06:01", "periodicity": "SEMANAL",
             "start_in_days": -7},
            {"ref": "new", "at": "06:02"},
            {"ref": "off-cycle", "amount": "5.00", "at": "06:03", "start_in_days": -10},
            {"ref": "later", "amount": "5.00", "at": "06:04", "start_in_days": 3},
            {"ref": "box", "amount": "15.00", "at": "06:05", "periodicity": "SEMANAL",
             "start_in_days": -14},
        ],
        recurring_charges=[
            {"ref": "weekly-0302", "recurrence": "weekly", "amount": "10.00", "at": "06:10"},
            {"ref": "new-0302", "recurrence": "new", "amount": "20.00", "at": "06:11"},
            {"ref": "gym-later", "recurrence": "gym", "amount": "99.90", "at": "06:12",
             "due_in_days": 2},
            {"ref": "box-next", "recurrence": "box", "amount": "15.00", "at": "06:13",
             "due_in_days": 7},
        ],
    )  # fmt: skip
    starts = {"gym": "2026-02-02", "weekly": "2026-02-23", "new": "2026-03-02"}
    starts |= {"off-cycle": "2026-02-20", "later": "2026-03-05", "box": "2026-02-16"}
    # The /rec notification carries the status only: the calendar is the API's.
    for ref, start in starts.items():
        rec = apis.qrcode_get(f"/rec/{outcome.refs[ref]}")
        assert rec["calendario"]["dataInicial"] == start

    cycles = {c.recurrence: c for c in outcome.cycles}
    assert set(cycles) == {"gym", "weekly", "new", "box"}
    assert {ref: c.charges for ref, c in cycles.items()} == {
        "gym": ("gym-later",),  # due two days later, still within this cycle
        "weekly": ("weekly-0302",),
        "new": ("new-0302",),
        "box": (),  # due on the next cycle's date: that cycle's charge, not this one's
    }
    assert {ref: c.next_date for ref, c in cycles.items()} == {
        "gym": date(2026, 4, 2),
        "weekly": date(2026, 3, 9),
        "new": date(2026, 4, 2),
        "box": date(2026, 3, 9),
    }
    (missed,) = outcome.missed_cycles
    assert (missed.recurrence, missed.id_rec, missed.due_date) == (
        "box",
        outcome.refs["box"],
        date(2026, 3, 2),
    )
    assert (missed.start_date, missed.periodicity, missed.amount_cents) == (
        date(2026, 2, 16),
        "SEMANAL",
        1500,
    )
    assert cycles["new"].amount_cents is None  # a variable amount


@pytest.mark.parametrize(
    ("start", "periodicity", "day", "expected"),
    [
        (date(2026, 1, 31), "MENSAL", date(2026, 2, 28), True),
        (date(2026, 1, 31), "MENSAL", date(2026, 3, 31), True),
        (date(2026, 1, 31), "MENSAL", date(2026, 3, 28), False),
        (date(2026, 1, 15), "TRIMESTRAL", date(2026, 4, 15), True),
        (date(2026, 1, 15), "TRIMESTRAL", date(2026, 3, 15), False),
        (date(2026, 1, 15), "SEMESTRAL", date(2026, 7, 15), True),
        (date(2024, 2, 29), "ANUAL", date(2025, 2, 28), True),
        (date(2026, 3, 2), "SEMANAL", date(2026, 3, 16), True),
        (date(2026, 3, 2), "SEMANAL", date(2026, 3, 15), False),
        (date(2026, 3, 2), "MENSAL", date(2026, 2, 2), False),  # before it starts
    ],
)
def test_cycle_dates(start: date, periodicity: str, day: date, expected: bool) -> None:
    assert is_cycle_date(start, periodicity, day) is expected


@pytest.mark.parametrize(
    ("start", "periodicity", "cycle", "expected"),
    [
        (date(2026, 1, 31), "MENSAL", date(2026, 1, 31), date(2026, 2, 28)),
        (date(2026, 1, 31), "MENSAL", date(2026, 2, 28), date(2026, 3, 31)),
        (date(2026, 1, 15), "TRIMESTRAL", date(2026, 10, 15), date(2027, 1, 15)),
        (date(2026, 1, 15), "SEMESTRAL", date(2026, 7, 15), date(2027, 1, 15)),
        (date(2024, 2, 29), "ANUAL", date(2025, 2, 28), date(2026, 2, 28)),
        (date(2023, 2, 28), "ANUAL", date(2023, 2, 28), date(2024, 2, 28)),
        (date(2026, 3, 2), "SEMANAL", date(2026, 3, 30), date(2026, 4, 6)),
    ],
)
def test_next_cycle_dates(start: date, periodicity: str, cycle: date, expected: date) -> None:
    assert is_cycle_date(start, periodicity, cycle)
    assert next_cycle_date(start, periodicity, cycle) == expected
    assert is_cycle_date(start, periodicity, expected)
    between = (expected - cycle).days
    assert not any(
        is_cycle_date(start, periodicity, cycle + timedelta(days=d)) for d in range(1, between)
    )


@pytest.mark.parametrize(
    ("top", "expected"),
    [
        (
            {"recurrences": [{"ref": "r", "start_in_days": "soon"}]},
            "recurrences[0].start_in_days: Input should be a valid integer",
        ),
        (
            {
                "recurrences": [{"ref": "r", "start_in_days": 3}],
                "recurring_charges": [{"ref": "c", "recurrence": "r", "amount": "1.00"}],
            },
            "recurring_charges[0]: due before recurrence 'r' starts (its start_in_days is 3)",
        ),
    ],
)
def test_a_bad_recurrence_start_is_refused(top: dict[str, Any], expected: str) -> None:
    problems = _problems(**top)
    assert any(problem.startswith(expected) for problem in problems), problems


# -- A transfer notification with no key ----------------------------------------------------


def test_a_keyless_forged_transfer_carries_only_an_id(recorder_server: Server) -> None:
    recorder, server = recorder_server
    recorder.reset()
    scenario = day(
        {"type": "forged_transfer", "ref": "forged-keyed", "amount": "10.00", "at": "10:00"},
        {"type": "forged_transfer", "ref": "forged-keyless", "amount": "5000.00",
         "at": "11:00", "keys": "none"},
    )  # fmt: skip
    outcome, provider = play(scenario, server)
    (keyed, keyless) = [p.body["data"] for p in recorder.posts]
    assert isinstance(keyless["id"], int)
    assert (keyless["idempotencyKey"], keyless["endToEndId"]) == (None, None)
    assert keyless["payment"]["amount"] == Decimal("5000.00")
    assert keyed["idempotencyKey"] == "forged-keyed"
    assert keyed["endToEndId"] is not None

    assert outcome.refs == {"forged-keyed": "forged-keyed", "forged-keyless": str(keyless["id"])}
    assert outcome.forged_idempotency_keys == ("forged-keyed",)
    assert outcome.forged_transfer_ids == (str(keyed["id"]), str(keyless["id"]))
    note = next(n for n in outcome.notifications if n.source == "events[1]")
    assert note.forged
    assert note.identity == f"accounts:TRANSFER:{keyless['id']}:LIQUIDATED"
    assert recorder.identities()[1] == note.identity
    assert provider.accounts.payments.get_by_key("forged-keyless") is None


def test_a_keyless_forgery_shifts_no_other_id(recorder_server: Server) -> None:
    _, server = recorder_server
    later = {"type": "forged_pix", "ref": "forged-pix", "amount": "1.00", "at": "12:00"}

    def forged(keys: str) -> ScenarioOutcome:
        transfer = {"type": "forged_transfer", "ref": "t", "amount": "1.00", "at": "10:00"}
        return play(day({**transfer, "keys": keys}, pix("real", "11:00"), later), server)[0]

    keyed, keyless = forged("both"), forged("none")
    assert keyed.forged_transfer_ids == keyless.forged_transfer_ids
    assert keyed.forged_end_to_end_ids == keyless.forged_end_to_end_ids
    assert keyed.refs["real"] == keyless.refs["real"]


def test_a_bad_keys_value_is_refused() -> None:
    event = {"type": "forged_transfer", "ref": "t", "amount": "1.00", "at": "10:00"}
    problems = _problems({**event, "keys": "some"})
    assert problems == ["events[0] (forged_transfer).keys: Input should be 'both' or 'none'"]
    assert _problems({**event, "keys": "none", "idempotency_key": "x"}) == [
        "events[0] (forged_transfer): unknown key 'idempotency_key'"
    ]


# -- The same, driven from Python ----------------------------------------------------------


def test_the_accounts_books_refuse_what_cannot_happen() -> None:
    provider = SandboxProvider(seed=3)
    pix_body = provider.receive_pix(Decimal("10.00"), horario=datetime(2026, 3, 2, 12, tzinfo=UTC))
    e2e = pix_body["endToEndId"]
    with pytest.raises(ValueError, match="booked before it happened"):
        provider.accounts.book_later(e2e, datetime(2026, 3, 2, 11, tzinfo=UTC))
    with pytest.raises(ValueError, match="between zero and the disputed amount"):
        provider.accounts.open_infraction(e2e, Decimal("5.00"), blocked=Decimal("6.00"))
    case = provider.accounts.open_infraction(e2e, Decimal("5.00"), blocked=Decimal("5.00"))
    with pytest.raises(ValueError, match="a debit line is one of"):
        provider.accounts.close_infraction(case["id"], True, debit_line="txid")  # type: ignore[arg-type]
    provider.accounts.book_later(e2e, datetime(2026, 3, 3, 3, 0, 30, tzinfo=UTC))
    (line,) = provider.accounts.statement()
    assert line["createdAt"] == "2026-03-03T03:00:30.000Z"
