"""Each fault a scenario scripts, observed from outside: by a recording receiver for
delivery faults, through the sandbox's HTTP APIs for API faults and forgeries."""

from __future__ import annotations

import socket
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from sandbox.accounts.app import create_accounts_app
from sandbox.accounts.defaults import (
    DEFAULT_ACCOUNT_ID,
    DEFAULT_ACCOUNTS_CLIENT_ID,
    DEFAULT_ACCOUNTS_CLIENT_SECRET,
)
from sandbox.app import create_app
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from sandbox.scenario import BUSINESS_TZ, ScenarioOutcome, run_scenario, scenario_provider
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.scenario_support import Recorder, bearer, day, pix, play
from tests.sandbox.scenario_support import recorder as recorder
from tests.sandbox.scenario_support import recorder_server as recorder_server

Server = tuple[Recorder, BackgroundServer]
GRANT = {"grant_type": "client_credentials"}


def _identity(outcome: ScenarioOutcome, ref: str) -> str:
    return f"pix:{outcome.refs[ref]}"


def test_a_dropped_notification_never_arrives(recorder: Recorder, recorder_server: Server) -> None:
    scenario = day(
        pix("a", "09:00"), pix("b", "09:05", delivery={"fault": "drop"}), pix("c", "09:10")
    )
    outcome, _ = play(scenario, recorder_server[1])
    assert recorder.identities() == [_identity(outcome, "a"), _identity(outcome, "c")]
    (dropped,) = outcome.dropped
    assert dropped.identity == _identity(outcome, "b")
    assert (dropped.copies_planned, dropped.copies_acknowledged, dropped.positions) == (0, 0, ())
    assert outcome.pix_only_by_polling == (outcome.refs["b"],)


def test_a_duplicated_notification_arrives_n_times(
    recorder: Recorder, recorder_server: Server
) -> None:
    duplicate = {"fault": "duplicate", "copies": 3}
    scenario = day(pix("a", "09:00"), pix("b", "09:05", delivery=duplicate), pix("c", "09:10"))
    outcome, _ = play(scenario, recorder_server[1])
    a, b, c = (_identity(outcome, ref) for ref in "abc")
    # Repeats come after every first copy, as separate requests.
    assert recorder.identities() == [a, b, c, b, b]
    (duplicated,) = outcome.duplicated
    assert (duplicated.copies_planned, duplicated.copies_acknowledged) == (3, 3)
    assert duplicated.positions == (1, 3, 4)


def test_delayed_notifications_arrive_after_the_rest(
    recorder: Recorder, recorder_server: Server
) -> None:
    scenario = day(
        pix("a", "09:00", delivery={"fault": "delay"}),
        pix("b", "09:05", delivery={"fault": "delay", "seconds": 0.3}),
        pix("c", "09:10"),
        pix("d", "09:15"),
    )
    started = time.monotonic()
    outcome, _ = play(scenario, recorder_server[1])
    assert time.monotonic() - started >= 0.3
    a, b, c, d = (_identity(outcome, ref) for ref in "abcd")
    # The timed delay goes when due; the untimed one after everything else.
    assert recorder.identities() == [c, d, b, a]
    assert {n.identity: n.delay_seconds for n in outcome.delayed} == {a: None, b: 0.3}


def test_reorder_shuffles_deterministically(recorder: Recorder, recorder_server: Server) -> None:
    events = [pix(f"p{n:02d}", f"09:{n:02d}") for n in range(12)]
    in_time = day(*events)
    shuffled = day(*events, reorder=True)

    def arrival(scenario: Any, seed: int = 7) -> list[str]:
        recorder.reset()
        outcome, _ = play(scenario.model_copy(update={"seed": seed}), recorder_server[1])
        refs = {f"pix:{e2eid}": ref for ref, e2eid in outcome.refs.items()}
        return [refs[identity] for identity in recorder.identities()]

    time_order = [f"p{n:02d}" for n in range(12)]
    assert arrival(in_time) == time_order
    first = arrival(shuffled)
    assert sorted(first) == time_order
    assert first != time_order
    assert arrival(shuffled) == first
    assert arrival(shuffled, seed=8) != first


@contextmanager
def _apis(provider: SandboxProvider) -> Iterator[tuple[httpx.Client, httpx.Client]]:
    """Both sandbox APIs over HTTP, with clients that hold a token of each family."""
    with (
        BackgroundServer(create_app(provider)) as qrcode,
        BackgroundServer(create_accounts_app(provider)) as accounts,
    ):
        pix_token = bearer(
            qrcode.url, "/oauth/token", GRANT, (DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET)
        )
        accounts_token = bearer(
            accounts.url,
            "/oauth/token",
            GRANT,
            (DEFAULT_ACCOUNTS_CLIENT_ID, DEFAULT_ACCOUNTS_CLIENT_SECRET),
        )
        headers = {"Authorization": f"Bearer {accounts_token}", "x-account-id": DEFAULT_ACCOUNT_ID}
        with (
            httpx.Client(
                base_url=qrcode.url, headers={"Authorization": f"Bearer {pix_token}"}
            ) as q,
            httpx.Client(base_url=accounts.url, headers=headers) as a,
        ):
            yield q, a


def test_forged_notifications_arrive_but_the_api_denies_them(
    recorder: Recorder, recorder_server: Server
) -> None:
    scenario = day(
        pix("real", "09:00"),
        {"type": "payout", "ref": "po-real", "at": "09:30", "amount": "20.00"},
        {"type": "payout_settled", "payout": "po-real", "at": "09:31"},
        {"type": "forged_pix", "ref": "fake-pix", "at": "10:00", "amount": "99.00"},
        {"type": "forged_transfer", "ref": "fake-payout", "at": "10:05", "amount": "900.00"},
    )
    outcome, provider = play(scenario, recorder_server[1])
    (forged_e2eid,) = outcome.forged_end_to_end_ids
    assert outcome.forged_idempotency_keys == ("fake-payout",)
    received = Counter(recorder.identities())
    assert received[f"pix:{forged_e2eid}"] == 1
    assert received["accounts:TRANSFER:fake-payout:LIQUIDATED"] == 1
    with _apis(provider) as (qrcode, accounts):
        assert qrcode.get(f"/pix/{forged_e2eid}").status_code == 404
        assert qrcode.get(f"/pix/{outcome.refs['real']}").status_code == 200
        assert accounts.get("/pix/payments/idempotencyKey/fake-payout").status_code == 404
        assert accounts.get("/pix/payments/idempotencyKey/po-real").status_code == 200
    # Forgeries are not movements: the books ignore them.
    assert {m.ref for m in outcome.movements} == {"real", "po-real"}


def test_api_faults_take_effect(recorder: Recorder, recorder_server: Server) -> None:
    scenario = day(
        pix("early", "09:00"),
        {"type": "api_errors", "api": "qrcode", "status": 503, "count": 2, "at": "10:00"},
        {"type": "api_errors", "api": "accounts", "status": 429, "retry_after": 2, "at": "10:00"},
        {"type": "api_slow", "api": "accounts", "seconds": 0.3, "at": "10:30"},
        pix("late", "11:00"),
    )
    outcome, provider = play(scenario, recorder_server[1])
    # Armed between the 09:00 and the 11:00 notification, as their times say.
    assert [f.position for f in outcome.api_faults] == [1, 1, 1]
    with _apis(provider) as (qrcode, accounts):
        path = f"/pix/{outcome.refs['early']}"
        assert [qrcode.get(path).status_code for _ in range(3)] == [503, 503, 200]
        assert provider.request_count("GET /pix/{e2eid}") == 3
        limited = accounts.get("/accounts/balances")
        assert (limited.status_code, limited.headers["Retry-After"]) == (429, "2")
        started = time.monotonic()
        assert accounts.get("/accounts/balances").status_code == 200
        assert time.monotonic() - started >= 0.3
        assert accounts.get("/accounts/balances").status_code == 200


@pytest.mark.parametrize("expire", [True, False])
def test_tokens_expire_at_their_point_of_the_day(recorder_server: Server, expire: bool) -> None:
    # Yesterday: once played, the sandbox clock is back to real time, so tokens issued
    # before the run are still within their lifetime unless the scenario expires them.
    yesterday = (datetime.now(BUSINESS_TZ) - timedelta(days=1)).date().isoformat()
    events = [pix("a", "09:00"), {"type": "tokens_expired", "at": "12:00"}]
    scenario = day(*events[: 2 if expire else 1], date=yesterday)
    provider = scenario_provider(scenario)
    with _apis(provider) as (qrcode, accounts):
        assert accounts.get("/accounts/balances").status_code == 200
        run_scenario(
            scenario,
            provider,
            qrcode_webhook_url=recorder_server[1].url + "/webhooks/qrcode",
            accounts_webhook_url=recorder_server[1].url + "/webhooks/accounts",
        )
        e2eid = provider.all_pix()[0]["endToEndId"]
        assert qrcode.get(f"/pix/{e2eid}").status_code == (401 if expire else 200)
        balance = accounts.get("/accounts/balances")
        assert balance.status_code == (401 if expire else 200)
        if expire:
            assert balance.json()["type"].endswith("onz-0018")


def test_an_unreachable_receiver_is_reported_not_raised() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    scenario = day(pix("a", "09:00"), pix("b", "09:05", delivery={"fault": "duplicate"}))
    outcome = run_scenario(
        scenario,
        scenario_provider(scenario),
        qrcode_webhook_url=closed + "/webhooks/qrcode",
        accounts_webhook_url=closed + "/webhooks/accounts",
        max_attempts=1,
    )
    assert [(n.copies_planned, n.copies_acknowledged) for n in outcome.notifications] == [
        (1, 0),
        (2, 0),
    ]
    assert outcome.posts_sent == 3


def test_a_scenario_needs_a_fresh_provider_with_its_clock() -> None:
    scenario = day(pix("a", "09:00"))

    def run(provider: SandboxProvider) -> None:
        run_scenario(
            scenario, provider, qrcode_webhook_url="http://x", accounts_webhook_url="http://y"
        )

    with pytest.raises(TypeError, match="ScenarioClock"):
        run(SandboxProvider())
    used = scenario_provider(scenario)
    used.receive_pix(Decimal("1.00"))
    with pytest.raises(ValueError, match="fresh provider"):
        run(used)
