"""Pix Automático in the sandbox: recurrences, recurring charges and their attempts,
their webhooks (registration and delivery with faults), over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from reconcile.payloads.automatico import cobr_callback_items, rec_callback_items
from sandbox.app import create_app
from sandbox.automatico_webhooks import AutomaticoDeliverer
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from sandbox.webhooks import PixFault
from tests.sandbox.bcb_schemas import request_body_errors, schema_errors
from tests.sandbox.sandbox_support import Recipient, served_app, token_client, token_http_fixture

START = datetime(2024, 6, 3, 12, tzinfo=UTC)
WINDOW = {"inicio": "2024-06-01T00:00:00Z", "fim": "2024-06-30T00:00:00Z"}
ERROR = "https://pix.bcb.gov.br/api/v2/error/"
DUE = date(2024, 6, 10)


app, server = served_app(create_app)


@pytest.fixture
def provider(app: Starlette) -> SandboxProvider:
    fresh = SandboxProvider(seed=6)
    fresh.register_client("pix-reader", "s1", {"pix.read"})
    app.state.provider = fresh
    return fresh


http = token_http_fixture()


def _approved(provider: SandboxProvider, **options: Any) -> str:
    rec = provider.create_recurrence(Decimal("29.90"), at=START, **options)
    provider.update_recurrence(rec["idRec"], "APROVADA", at=START + timedelta(hours=1))
    return str(rec["idRec"])


def test_a_recurrence_goes_from_criada_to_aprovada(
    http: httpx.Client, provider: SandboxProvider
) -> None:
    rec = provider.create_recurrence(
        Decimal("29.90"), debtor_cpf="12345678909", contract="PLANO-7", at=START
    )
    id_rec = rec["idRec"]
    assert len(id_rec) == 29
    assert id_rec.startswith("RN99999008")  # no retries, the sandbox's ISPB

    created = http.get(f"/rec/{id_rec}").json()
    assert schema_errors(created, "RecCompleta") == []
    assert created["status"] == "CRIADA"
    provider.update_recurrence(id_rec, "APROVADA", at=START + timedelta(minutes=5))

    approved = http.get(f"/rec/{id_rec}").json()
    assert schema_errors(approved, "RecCompleta") == []
    assert approved["status"] == "APROVADA"
    assert approved["atualizacao"] == [
        {"status": "CRIADA", "data": "2024-06-03T12:00:00.000Z"},
        {"status": "APROVADA", "data": "2024-06-03T12:05:00.000Z"},
    ]
    assert approved["vinculo"]["devedor"] == {"cpf": "12345678909", "nome": "Fulano de Tal"}
    assert approved["valor"] == {"valorRec": "29.90"}


def test_recurrence_transitions_follow_the_spec(provider: SandboxProvider) -> None:
    rejected = provider.create_recurrence(at=START)["idRec"]
    ended = provider.update_recurrence(rejected, "REJEITADA")
    assert ended["encerramento"]["rejeicao"]["codigo"] == "AP13"
    assert schema_errors(ended, "RecCompleta") == []
    with pytest.raises(ValueError, match="cannot go from REJEITADA"):
        provider.update_recurrence(rejected, "APROVADA")

    id_rec = _approved(provider)
    open_charge = provider.create_recurring_charge(id_rec, Decimal("29.90"), DUE)["txid"]
    paid = provider.create_recurring_charge(id_rec, Decimal("29.90"), DUE)["txid"]
    provider.attempt_recurring_charge(paid, succeed=True)

    cancelled = provider.update_recurrence(id_rec, "CANCELADA")

    assert cancelled["encerramento"]["cancelamento"]["solicitante"] == "USUARIO_PAGADOR"
    assert schema_errors(cancelled, "RecCompleta") == []
    # Open charges die with their recurrence; settled ones stay settled.
    cancelled_charge = provider.automatico.get_cobr(open_charge) or {}
    assert cancelled_charge["status"] == "CANCELADA"
    assert schema_errors(cancelled_charge, "CobRCompleta") == []
    assert provider.automatico.get_cobr(paid)["status"] == "CONCLUIDA"  # type: ignore[index]
    with pytest.raises(ValueError, match="not APROVADA"):
        provider.create_recurring_charge(id_rec, Decimal("1.00"), DUE)


def test_rec_list_filters_and_matches_the_spec(
    http: httpx.Client, provider: SandboxProvider
) -> None:
    ids = [
        provider.create_recurrence(debtor_cpf=f"{i:011d}", at=START + timedelta(minutes=i))["idRec"]
        for i in range(3)
    ]
    provider.update_recurrence(ids[2], "APROVADA")

    listed = http.get("/rec", params=WINDOW).json()
    assert schema_errors(listed, "RecsConsultadas") == []
    assert [r["idRec"] for r in listed["recs"]] == ids
    approved = http.get("/rec", params={**WINDOW, "status": "APROVADA"}).json()["recs"]
    assert [r["idRec"] for r in approved] == ids[2:]
    by_cpf = http.get("/rec", params={**WINDOW, "cpf": f"{1:011d}"}).json()["recs"]
    assert [r["idRec"] for r in by_cpf] == ids[1:2]
    missing = http.get("/rec/" + "R" * 29)
    assert missing.status_code == 404
    assert missing.json()["type"] == ERROR + "RecNaoEncontrada"


def test_a_paid_recurring_charge_books_its_pix(
    http: httpx.Client, provider: SandboxProvider
) -> None:
    id_rec = _approved(provider)
    txid = provider.create_recurring_charge(id_rec, Decimal("29.90"), DUE, at=START)["txid"]
    active = http.get(f"/cobr/{txid}").json()
    assert schema_errors(active, "CobRCompleta") == []
    assert active["status"] == "ATIVA"

    settled = provider.attempt_recurring_charge(txid, succeed=True, at=START + timedelta(days=7))

    cobr = http.get(f"/cobr/{txid}").json()
    assert cobr == settled
    assert schema_errors(cobr, "CobRCompleta") == []
    assert cobr["status"] == "CONCLUIDA"
    [attempt] = cobr["tentativas"]
    assert (attempt["tipo"], attempt["status"], attempt["dataLiquidacao"]) == (
        "AGND",
        "PAGA",
        "2024-06-10",
    )
    [pix] = cobr["pix"]
    assert pix["endToEndId"] == attempt["endToEndId"]
    assert http.get("/pix", params={**WINDOW, "txid": txid}).json()["pix"] == [pix]
    assert provider.balance_cents() == 2990
    with pytest.raises(ValueError, match="not ATIVA"):
        provider.attempt_recurring_charge(txid, succeed=True)


def test_failed_attempts_are_retried_only_when_the_policy_allows(
    http: httpx.Client, provider: SandboxProvider
) -> None:
    retrying = provider.create_recurring_charge(
        _approved(provider, retry_policy="PERMITE_3R_7D"), Decimal("10.00"), DUE
    )["txid"]
    for _ in range(3):
        assert provider.attempt_recurring_charge(retrying, succeed=False)["status"] == "ATIVA"
    provider.attempt_recurring_charge(retrying, succeed=True)
    cobr = http.get(f"/cobr/{retrying}").json()
    assert schema_errors(cobr, "CobRCompleta") == []
    assert [(t["tipo"], t["status"]) for t in cobr["tentativas"]] == [
        ("AGND", "REJEITADA"),
        ("NTAG", "REJEITADA"),
        ("NTAG", "REJEITADA"),
        ("NTAG", "PAGA"),
    ]
    assert len({t["endToEndId"] for t in cobr["tentativas"]}) == 4
    assert [p["endToEndId"] for p in cobr["pix"]] == [cobr["tentativas"][-1]["endToEndId"]]

    once = provider.create_recurring_charge(_approved(provider), Decimal("10.00"), DUE)["txid"]
    rejected = provider.attempt_recurring_charge(once, succeed=False, rejection_code="MSUC")
    assert schema_errors(rejected, "CobRCompleta") == []
    assert rejected["status"] == "REJEITADA"
    assert rejected["encerramento"] == {"rejeicao": rejected["tentativas"][0]["rejeicao"]}
    assert rejected["tentativas"][0]["rejeicao"]["codigo"] == "MSUC"
    assert "pix" not in rejected
    # Only the one successful attempt moved money.
    assert provider.balance_cents() == 1000


def test_cobr_list_walks_pages_and_filters_by_recurrence(
    http: httpx.Client, provider: SandboxProvider
) -> None:
    first, second = _approved(provider), _approved(provider)
    txids = [
        provider.create_recurring_charge(
            rec, Decimal("1.00"), DUE, at=START + timedelta(minutes=i)
        )["txid"]
        for i, rec in enumerate([first, second, first])
    ]

    page = http.get("/cobr", params={**WINDOW, "paginacao.itensPorPagina": 2}).json()
    assert schema_errors(page, "CobsRConsultadas") == []
    assert [c["txid"] for c in page["cobsr"]] == txids[:2]
    assert page["parametros"]["paginacao"]["quantidadeDePaginas"] == 2
    of_first = http.get("/cobr", params={**WINDOW, "idRec": first}).json()["cobsr"]
    assert [c["txid"] for c in of_first] == [txids[0], txids[2]]
    bad = http.get("/cobr", params={**WINDOW, "idRec": "short"})
    assert bad.json()["type"] == ERROR + "CobRConsultaInvalida"
    assert http.get("/cobr/" + "T" * 32).json()["type"] == ERROR + "CobRNaoEncontrado"


@pytest.mark.parametrize("kind", ["rec", "cobr"])
def test_webhook_registration_round_trip(http: httpx.Client, kind: str) -> None:
    path = f"/webhook{kind}"
    assert http.get(path).status_code == 404

    assert http.put(path, json={"webhookUrl": "https://merchant.example/hooks"}).status_code == 200

    registered = http.get(path).json()
    schema = "WebhookRecCompleto" if kind == "rec" else "WebhookCobRCompleto"
    assert schema_errors(registered, schema) == []
    assert registered["webhookUrl"] == "https://merchant.example/hooks"
    invalid = http.put(path, json={"webhookUrl": "merchant.example"})
    assert invalid.status_code == 400
    assert invalid.json()["type"] == ERROR + ("WebhookRec" if kind == "rec" else "WebhookCobR") + (
        "OperacaoInvalida"
    )
    assert http.delete(path).status_code == 204
    assert http.delete(path).status_code == 404


def test_automatico_scopes_are_enforced(
    server: BackgroundServer, provider: SandboxProvider
) -> None:
    id_rec = _approved(provider)
    txid = provider.create_recurring_charge(id_rec, Decimal("1.00"), DUE)["txid"]
    with token_client(server, "pix-reader", "s1") as pix_only:
        for method, path in [
            ("GET", f"/rec/{id_rec}"),
            ("GET", "/rec"),
            ("GET", f"/cobr/{txid}"),
            ("GET", "/cobr"),
            ("PUT", "/webhookrec"),
            ("GET", "/webhookrec"),
            ("DELETE", "/webhookrec"),
            ("PUT", "/webhookcobr"),
            ("GET", "/webhookcobr"),
            ("DELETE", "/webhookcobr"),
        ]:
            body = {"webhookUrl": "https://merchant.example/hooks"}
            response = pix_only.request(method, path, params=WINDOW, json=body)
            assert response.status_code == 403, (method, path)
    assert provider.rec_webhook.get() is None


@pytest.fixture
def recipient() -> Iterator[tuple[Recipient, str]]:
    recipient = Recipient()
    with BackgroundServer(recipient.app) as server:
        yield recipient, server.url + "/webhooks/qrcode/"


def test_recurrences_are_delivered_with_drops_and_repeats(
    provider: SandboxProvider, recipient: tuple[Recipient, str]
) -> None:
    target, url = recipient
    ids = [provider.create_recurrence(at=START)["idRec"] for _ in range(3)]
    provider.update_recurrence(ids[0], "APROVADA", at=START + timedelta(minutes=1))
    recs = [provider.automatico.get_rec(i) or {} for i in ids]
    plan = {ids[1]: PixFault.drop(), ids[2]: PixFault.duplicate(3)}

    with AutomaticoDeliverer(url, batch_size=2) as deliverer:
        report = deliverer.deliver_recs(recs, plan)

    assert (report.delivered, report.copies_delivered, report.dropped) == (2, 4, 1)
    assert report.duplicates_sent == 2
    assert report.requests_sent == 3  # [0, 2] together, then two lone repeats of 2
    assert {path for path, _ in target.posts} == {"/webhooks/qrcode/rec"}
    notified = [rec for _, body in target.posts for rec in body["recs"]]
    assert [r["idRec"] for r in notified] == [ids[0], ids[2], ids[2], ids[2]]
    for _, body in target.posts:
        assert request_body_errors(body, "WebhookRecBody") == []
    # The receiver accepts them, keyed by status and time of the latest update.
    keys = {item.key for _, body in target.posts for item in rec_callback_items(body)}
    assert keys == {
        f"rec:{ids[0]}:APROVADA:2024-06-03T12:01:00.000Z",
        f"rec:{ids[2]}:CRIADA:2024-06-03T12:00:00.000Z",
    }


def test_recurring_charges_are_delivered_and_retried(
    provider: SandboxProvider, recipient: tuple[Recipient, str]
) -> None:
    target, url = recipient
    id_rec = _approved(provider, retry_policy="PERMITE_3R_7D")
    txid = provider.create_recurring_charge(id_rec, Decimal("5.00"), DUE)["txid"]
    failed = provider.attempt_recurring_charge(txid, succeed=False)
    paid = provider.attempt_recurring_charge(txid, succeed=True)
    target.script.extend([503])
    sleeps: list[float] = []

    with AutomaticoDeliverer(url, sleep=sleeps.append, retry_delay=0.25) as deliverer:
        report = deliverer.deliver_cobrs([failed, paid])

    assert (report.delivered, report.requests_sent, report.non_2xx_responses) == (2, 3, 1)
    assert report.statuses == [503, 200, 200]
    assert sleeps == [0.25]
    assert report.undelivered == []
    bodies = [body for _, body in target.posts]
    assert {path for path, _ in target.posts} == {"/webhooks/qrcode/cobr"}
    for body in bodies:
        assert request_body_errors(body, "WebhookCobRBody") == []
    keys = [item.key for body in bodies[1:] for item in cobr_callback_items(body)]
    assert keys == [f"cobr:{txid}:ATIVA:1.REJEITADA", f"cobr:{txid}:CONCLUIDA:2.PAGA"]


def test_undeliverable_notifications_are_reported(provider: SandboxProvider) -> None:
    rec = provider.create_recurrence(at=START)
    with AutomaticoDeliverer(
        "http://127.0.0.1:9/hooks", max_attempts=2, sleep=lambda _: None, timeout=0.5
    ) as deliverer:
        report = deliverer.deliver_recs([rec])

    assert (report.delivered, report.connection_errors) == (0, 2)
    assert report.undelivered == [rec["idRec"]]
