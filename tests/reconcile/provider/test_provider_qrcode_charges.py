"""``QrCodeApi``'s charge, Pix Automático and webhook calls against the sandbox, over HTTP."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from starlette.applications import Starlette

from reconcile.provider import Forbidden, NotFound, ProviderUnavailable, QrCodeApi
from sandbox.app import create_app
from sandbox.defaults import DEFAULT_PIX_KEY
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import FakeClock, qrcode_api, qrcode_api_fixtures, served_app

START = datetime(2024, 6, 3, 12, tzinfo=UTC)
DAY_START = datetime(2024, 6, 3, tzinfo=UTC)
DAY_END = datetime(2024, 6, 4, tzinfo=UTC)
DUE = date(2024, 6, 10)
ERROR = "https://pix.bcb.gov.br/api/v2/error/"


app, server = served_app(create_app)
sleeps, api = qrcode_api_fixtures()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def provider(app: Starlette, clock: FakeClock) -> SandboxProvider:
    fresh = SandboxProvider(seed=9, clock=clock, token_lifetime_seconds=1e9)
    fresh.register_client("pix-only", "pix-secret", {"pix.read"})
    app.state.provider = fresh
    return fresh


def _cobs(provider: SandboxProvider, clock: FakeClock, count: int) -> list[dict[str, Any]]:
    created = []
    for i in range(count):
        clock.now = START + timedelta(seconds=i)
        created.append(provider.create_cob(Decimal("1.00") + i))
    return created


def test_get_cob_follows_the_charge_until_paid(
    api: QrCodeApi, provider: SandboxProvider, clock: FakeClock
) -> None:
    [cob] = _cobs(provider, clock, 1)
    assert api.get_cob(cob["txid"]) == {**cob, "status": "ATIVA"}

    pix = provider.pay_charge(cob["txid"])

    paid = api.get_cob(cob["txid"])
    assert paid["status"] == "CONCLUIDA"
    assert paid["pix"] == [pix]


@pytest.mark.usefixtures("provider")
@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (lambda api: api.get_cob("A" * 30), "CobNaoEncontrado"),
        (lambda api: api.get_cobv("A" * 30), "CobVNaoEncontrada"),
        (lambda api: api.get_rec("R" * 29), "RecNaoEncontrada"),
        (lambda api: api.get_cobr("A" * 30), "CobRNaoEncontrado"),
    ],
)
def test_unknown_ids_raise_not_found(api: QrCodeApi, call: Any, kind: str) -> None:
    with pytest.raises(NotFound) as caught:
        call(api)
    assert caught.value.type == ERROR + kind


@pytest.mark.usefixtures("provider")
def test_ids_that_would_change_the_path_are_refused(api: QrCodeApi) -> None:
    for call in (api.get_cob, api.get_cobv, api.get_cobr, api.get_rec):
        with pytest.raises(ValueError, match="not a"):
            call("../oauth/token")


def test_list_cobs_walks_every_page(
    api: QrCodeApi, provider: SandboxProvider, clock: FakeClock
) -> None:
    created = _cobs(provider, clock, 250)

    listed = list(api.list_cobs(DAY_START, DAY_END, page_size=100))

    assert [c["txid"] for c in listed] == [c["txid"] for c in created]
    assert provider.request_count("GET /cob") == 3
    assert provider.tokens_issued == 1


def test_list_filters_reach_the_provider(
    api: QrCodeApi, provider: SandboxProvider, clock: FakeClock
) -> None:
    created = _cobs(provider, clock, 3)
    provider.pay_charge(created[1]["txid"])
    due = provider.create_cobv(Decimal("9.00"), DUE, debtor_cnpj="12345678000195")

    concluded = api.list_cobs(DAY_START, DAY_END, status="CONCLUIDA")
    assert [c["txid"] for c in concluded] == [created[1]["txid"]]
    listed = list(api.list_cobvs(DAY_START, DAY_END, page_size=1, cnpj="12345678000195"))
    assert [c["txid"] for c in listed] == [due["txid"]]
    assert list(api.list_cobvs(DAY_START, DAY_END, cpf="12345678909")) == []


def test_recurrences_and_recurring_charges_are_listed(
    api: QrCodeApi, provider: SandboxProvider, clock: FakeClock
) -> None:
    recs = []
    for i in range(3):
        clock.now = START + timedelta(minutes=i)
        recs.append(provider.create_recurrence(Decimal("10.00"))["idRec"])
        provider.update_recurrence(recs[-1], "APROVADA")
    txids = [provider.create_recurring_charge(rec, Decimal("10.00"), DUE)["txid"] for rec in recs]
    txids.append(provider.create_recurring_charge(recs[0], Decimal("10.00"), DUE)["txid"])
    provider.attempt_recurring_charge(txids[0], succeed=True)

    listed_recs = list(api.list_recs(DAY_START, DAY_END, page_size=2))
    assert [r["idRec"] for r in listed_recs] == recs
    assert api.get_rec(recs[1])["status"] == "APROVADA"
    assert [c["txid"] for c in api.list_cobrs(DAY_START, DAY_END, page_size=1)] == txids
    assert provider.request_count("GET /cobr") == 4
    of_first = api.list_cobrs(DAY_START, DAY_END, id_rec=recs[0])
    assert [c["txid"] for c in of_first] == [txids[0], txids[3]]
    settled = api.get_cobr(txids[0])
    assert settled["status"] == "CONCLUIDA"
    assert settled["tentativas"][0]["endToEndId"] == settled["pix"][0]["endToEndId"]
    assert [c["txid"] for c in api.list_cobrs(DAY_START, DAY_END, status="CONCLUIDA")] == [txids[0]]


@pytest.mark.usefixtures("provider")
@pytest.mark.parametrize("method", ["list_cobs", "list_cobvs", "list_recs", "list_cobrs"])
def test_lists_refuse_naive_or_backwards_windows(api: QrCodeApi, method: str) -> None:
    list_ = getattr(api, method)
    with pytest.raises(ValueError, match="timezone-aware"):
        list_(datetime(2024, 6, 3), DAY_END)  # naive on purpose
    with pytest.raises(ValueError, match="before"):
        list_(DAY_END, DAY_START)
    with pytest.raises(ValueError, match="page_size"):
        list_(DAY_START, DAY_END, page_size=0)


def test_transient_failures_are_retried(
    api: QrCodeApi, provider: SandboxProvider, clock: FakeClock, sleeps: list[float]
) -> None:
    [cob] = _cobs(provider, clock, 1)
    provider.fail_next(2, status=503)

    assert api.get_cob(cob["txid"])["txid"] == cob["txid"]
    assert len(sleeps) == 2
    provider.fail_next(4, status=503)
    with pytest.raises(ProviderUnavailable):
        next(api.list_recs(DAY_START, DAY_END))


def test_a_client_without_the_scope_is_forbidden(
    server: BackgroundServer, provider: SandboxProvider, sleeps: list[float]
) -> None:
    with qrcode_api(server, sleeps, client=("pix-only", "pix-secret")) as pix_only:
        with pytest.raises(Forbidden):
            pix_only.get_cob("A" * 30)
        with pytest.raises(Forbidden):
            list(pix_only.list_cobrs(DAY_START, DAY_END))
        with pytest.raises(Forbidden):
            pix_only.register_webhook_rec("https://merchant.example/hooks")
    assert sleeps == []


def test_webhooks_are_registered(api: QrCodeApi, provider: SandboxProvider) -> None:
    provider.fail_next(1, status=503)  # PUT is idempotent: retried

    api.register_webhook(DEFAULT_PIX_KEY, "https://merchant.example/webhooks/qrcode")
    api.register_webhook("+5511999998888", "https://merchant.example/webhooks/phone")
    api.register_webhook_rec("https://merchant.example/webhooks/qrcode")
    api.register_webhook_cobr("https://merchant.example/webhooks/qrcode")

    pix_hook = provider.webhooks.get(DEFAULT_PIX_KEY) or {}
    assert pix_hook["webhookUrl"] == "https://merchant.example/webhooks/qrcode"
    phone_hook = provider.webhooks.get("+5511999998888") or {}
    assert phone_hook["webhookUrl"] == "https://merchant.example/webhooks/phone"
    for slot in (provider.rec_webhook, provider.cobr_webhook):
        assert (slot.get() or {})["webhookUrl"] == "https://merchant.example/webhooks/qrcode"
    with pytest.raises(ValueError, match="absolute"):
        api.register_webhook_rec("/webhooks/qrcode")
