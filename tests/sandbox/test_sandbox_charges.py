"""Immediate (``/cob``) and due-date (``/cobv``) charges of the sandbox, over real HTTP."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from sandbox.app import create_app
from sandbox.charges import BUSINESS_TZ, ChargeNotPayable, last_payable_day
from sandbox.defaults import DEFAULT_PIX_KEY
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.bcb_schemas import schema_errors
from tests.sandbox.sandbox_support import FakeClock, served_app, token_client, token_http_fixture

START = datetime(2024, 6, 3, 12, tzinfo=UTC)  # a Monday, 09:00 in São Paulo
WINDOW = {"inicio": "2024-06-01T00:00:00Z", "fim": "2024-06-30T00:00:00Z"}
TXID = "Cob0000000000000000000000000001"
ERROR = "https://pix.bcb.gov.br/api/v2/error/"


app, server = served_app(create_app)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def provider(app: Starlette, clock: FakeClock) -> SandboxProvider:
    # Tokens must outlive the clock jumps of the expiry tests.
    fresh = SandboxProvider(seed=5, clock=clock, token_lifetime_seconds=1e9)
    fresh.register_client("pix-reader", "s1", {"pix.read"})
    fresh.register_client("cob-reader", "s2", {"cob.read", "cobv.read"})
    app.state.provider = fresh
    return fresh


http = token_http_fixture()


def _cob_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "calendario": {"expiracao": 3600},
        "devedor": {"cpf": "12345678909", "nome": "Fulano de Tal"},
        "valor": {"original": "123.45"},
        "chave": DEFAULT_PIX_KEY,
        "solicitacaoPagador": "Pedido 42",
        "infoAdicionais": [{"nome": "loja", "valor": "centro"}],
    }
    body.update(changes)
    return body


def _cobv_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "calendario": {"dataDeVencimento": "2024-06-10", "validadeAposVencimento": 2},
        "devedor": {"cnpj": "12345678000195", "nome": "Empresa Ltda", "cidade": "Recife"},
        "valor": {"original": "50.00"},
        "chave": DEFAULT_PIX_KEY,
    }
    body.update(changes)
    return body


def test_put_cob_creates_an_active_charge(http: httpx.Client) -> None:
    created = http.put(f"/cob/{TXID}", json=_cob_body())

    assert created.status_code == 201
    assert schema_errors(created.json(), "CobGerada") == []
    fetched = http.get(f"/cob/{TXID}").json()
    assert schema_errors(fetched, "CobCompleta") == []
    assert fetched["status"] == "ATIVA"
    assert fetched["calendario"] == {"criacao": "2024-06-03T12:00:00.000Z", "expiracao": 3600}
    assert fetched["valor"] == {"original": "123.45"}
    assert "pix" not in fetched


def test_paying_concludes_the_cob_and_shows_its_pix(
    http: httpx.Client, provider: SandboxProvider
) -> None:
    http.put(f"/cob/{TXID}", json=_cob_body())

    pix = provider.pay_charge(TXID)

    cob = http.get(f"/cob/{TXID}").json()
    assert schema_errors(cob, "CobCompleta") == []
    assert cob["status"] == "CONCLUIDA"
    assert cob["pix"] == [pix]
    assert pix["txid"] == TXID
    assert pix["valor"] == "123.45"
    assert pix["pagador"] == {"cpf": "12345678909", "nome": "Fulano de Tal"}
    assert http.get(f"/pix/{pix['endToEndId']}").json() == pix


def test_a_charge_paid_twice_books_two_pix(http: httpx.Client, provider: SandboxProvider) -> None:
    provider.create_cob(Decimal("10.00"), txid=TXID)

    first = provider.pay_charge(TXID)
    second = provider.pay_charge(TXID, Decimal("9.99"), payer_cnpj="12345678000195")

    listed = http.get("/pix", params={**WINDOW, "txid": TXID}).json()["pix"]
    assert [p["endToEndId"] for p in listed] == [first["endToEndId"], second["endToEndId"]]
    assert [p["valor"] for p in listed] == ["10.00", "9.99"]
    cob = http.get(f"/cob/{TXID}").json()
    assert cob["status"] == "CONCLUIDA"
    assert cob["pix"] == [first, second]
    assert provider.balance_cents() == 1999


@pytest.mark.parametrize(
    ("txid", "body", "property_"),
    [
        ("short1", _cob_body(), "txid"),
        (TXID, _cob_body(calendario={"expiracao": 0}), "cob.calendario.expiracao"),
        (TXID, _cob_body(valor={"original": "0.00"}), "cob.valor.original"),
        (TXID, _cob_body(valor={"original": "1.5"}), "cob.valor.original"),
        (TXID, _cob_body(valor={"original": 10.0}), "cob.valor.original"),
        (TXID, _cob_body(chave="someone-else@example.com"), "cob.chave"),
        (TXID, _cob_body(devedor={"cpf": "12345678909"}), "cob.devedor"),
        (TXID, _cob_body(solicitacaoPagador="x" * 141), "solicitacaoPagador"),
        (TXID, _cob_body(infoAdicionais=[{"nome": "a"}]), "infoAdicionais"),
        (TXID, [], "cob"),
    ],
)
def test_put_cob_refuses_invalid_requests(
    http: httpx.Client, txid: str, body: Any, property_: str
) -> None:
    response = http.put(f"/cob/{txid}", json=body)

    assert response.status_code == 400
    problem = response.json()
    assert schema_errors(problem, "Problema") == []
    assert problem["type"] == ERROR + "CobOperacaoInvalida"
    assert [v["propriedade"] for v in problem["violacoes"]] == [property_]


def test_a_txid_names_one_charge(http: httpx.Client) -> None:
    assert http.put(f"/cob/{TXID}", json=_cob_body()).status_code == 201

    assert http.put(f"/cob/{TXID}", json=_cob_body()).status_code == 400
    assert http.put(f"/cobv/{TXID}", json=_cobv_body()).status_code == 400
    missing = http.get(f"/cobv/{TXID}")
    assert missing.status_code == 404
    assert missing.json()["type"] == ERROR + "CobVNaoEncontrada"
    assert http.get("/cob/" + "Z" * 30).json()["type"] == ERROR + "CobNaoEncontrado"


def test_scopes_are_enforced(server: BackgroundServer, provider: SandboxProvider) -> None:
    provider.create_cob(Decimal("1.00"), txid=TXID)
    with token_client(server, "pix-reader", "s1") as pix_only:
        for method, path in [
            ("GET", f"/cob/{TXID}"),
            ("GET", "/cob"),
            ("PUT", f"/cob/{TXID}"),
            ("GET", f"/cobv/{TXID}"),
            ("GET", "/cobv"),
            ("PUT", f"/cobv/{TXID}"),
        ]:
            response = pix_only.request(method, path, params=WINDOW, json=_cob_body())
            assert response.status_code == 403, (method, path)
    with token_client(server, "cob-reader", "s2") as reader:
        assert reader.get(f"/cob/{TXID}").status_code == 200
        assert reader.put("/cob/" + "N" * 30, json=_cob_body()).status_code == 403
        assert reader.put("/cobv/" + "N" * 30, json=_cobv_body()).status_code == 403


def test_cob_list_pages_and_filters(
    http: httpx.Client, provider: SandboxProvider, clock: FakeClock
) -> None:
    txids = []
    for i in range(5):
        txids.append(provider.create_cob(Decimal("1.00"), debtor_cpf=f"{i:011d}")["txid"])
        clock.advance(60)
    provider.pay_charge(txids[1])

    page = http.get("/cob", params={**WINDOW, "paginacao.itensPorPagina": 2}).json()
    assert schema_errors(page, "CobsConsultadas") == []
    assert [c["txid"] for c in page["cobs"]] == txids[:2]
    assert page["parametros"]["paginacao"] == {
        "paginaAtual": 0,
        "itensPorPagina": 2,
        "quantidadeDePaginas": 3,
        "quantidadeTotalDeItens": 5,
    }
    last = http.get(
        "/cob", params={**WINDOW, "paginacao.itensPorPagina": 2, "paginacao.paginaAtual": 2}
    )
    assert [c["txid"] for c in last.json()["cobs"]] == txids[4:]
    concluded = http.get("/cob", params={**WINDOW, "status": "CONCLUIDA"}).json()["cobs"]
    assert [c["txid"] for c in concluded] == [txids[1]]
    by_cpf = http.get("/cob", params={**WINDOW, "cpf": f"{3:011d}"}).json()["cobs"]
    assert [c["txid"] for c in by_cpf] == [txids[3]]
    # Inclusive at both ends, like GET /pix.
    exact = {"inicio": "2024-06-03T12:01:00Z", "fim": "2024-06-03T12:02:00Z"}
    assert [c["txid"] for c in http.get("/cob", params=exact).json()["cobs"]] == txids[1:3]


def test_cob_list_refuses_bad_queries(http: httpx.Client) -> None:
    backwards = http.get("/cob", params={"inicio": WINDOW["fim"], "fim": WINDOW["inicio"]})

    assert backwards.status_code == 400
    assert backwards.json()["type"] == ERROR + "CobConsultaInvalida"
    assert schema_errors(backwards.json(), "Problema") == []
    assert http.get("/cobv", params={"inicio": "yesterday"}).json()["type"] == (
        ERROR + "CobVConsultaInvalida"
    )


def test_a_cob_expires_expiracao_seconds_after_creation(
    http: httpx.Client, provider: SandboxProvider, clock: FakeClock
) -> None:
    provider.create_cob(Decimal("5.00"), txid=TXID, expiracao=60)
    clock.advance(59.999)
    assert not provider.charge_expired(TXID)

    clock.advance(0.001)

    assert provider.charge_expired(TXID)
    with pytest.raises(ChargeNotPayable):
        provider.pay_charge(TXID)
    # The spec's status is the registration's: expiry alone does not change it...
    assert http.get(f"/cob/{TXID}").json()["status"] == "ATIVA"
    # ...but PSPs that remove expired charges can be mimicked.
    provider.charges.expired_status = "REMOVIDA_PELO_PSP"
    assert http.get(f"/cob/{TXID}").json()["status"] == "REMOVIDA_PELO_PSP"
    assert provider.ledger.all() == []


def test_a_payment_timed_before_expiry_is_accepted_late(
    http: httpx.Client, provider: SandboxProvider, clock: FakeClock
) -> None:
    provider.create_cob(Decimal("5.00"), txid=TXID, expiracao=60)
    clock.advance(3600)

    pix = provider.pay_charge(TXID, horario=START + timedelta(seconds=30))

    assert pix["horario"] == "2024-06-03T12:00:30.000Z"
    assert http.get(f"/cob/{TXID}").json()["status"] == "CONCLUIDA"


def test_removed_charges_cannot_be_paid_or_removed_again(
    http: httpx.Client, provider: SandboxProvider
) -> None:
    provider.create_cob(Decimal("5.00"), txid=TXID)
    paid = provider.create_cob(Decimal("5.00"))["txid"]
    provider.pay_charge(paid)

    removed = provider.remove_charge(TXID)

    assert removed["status"] == "REMOVIDA_PELO_USUARIO_RECEBEDOR"
    assert http.get(f"/cob/{TXID}").json()["status"] == "REMOVIDA_PELO_USUARIO_RECEBEDOR"
    with pytest.raises(ChargeNotPayable):
        provider.pay_charge(TXID)
    with pytest.raises(ValueError, match="ATIVA"):
        provider.remove_charge(TXID)
    with pytest.raises(ValueError, match="ATIVA"):
        provider.remove_charge(paid)
    assert (
        provider.remove_charge(provider.create_cob(Decimal("1.00"))["txid"], by_psp=True)["status"]
        == "REMOVIDA_PELO_PSP"
    )
    with pytest.raises(KeyError):
        provider.pay_charge("Unknown000000000000000000000")


def test_cobv_round_trip_matches_the_spec(http: httpx.Client, provider: SandboxProvider) -> None:
    created = http.put(f"/cobv/{TXID}", json=_cobv_body())
    assert created.status_code == 201
    assert schema_errors(created.json(), "CobVGerada") == []

    pix = provider.pay_charge(TXID)

    cobv = http.get(f"/cobv/{TXID}").json()
    assert schema_errors(cobv, "CobVCompleta") == []
    assert cobv["status"] == "CONCLUIDA"
    assert cobv["calendario"]["dataDeVencimento"] == "2024-06-10"
    assert cobv["devedor"]["cidade"] == "Recife"
    assert cobv["pix"] == [pix]
    assert pix["pagador"]["cnpj"] == "12345678000195"
    listed = http.get("/cobv", params=WINDOW).json()
    assert schema_errors(listed, "CobsVConsultadas") == []
    assert [c["txid"] for c in listed["cobs"]] == [TXID]
    assert http.get("/cob", params=WINDOW).json()["cobs"] == []


def test_cobv_is_payable_through_its_last_valid_day_in_sao_paulo(
    provider: SandboxProvider,
) -> None:
    provider.create_cobv(Decimal("50.00"), date(2024, 6, 10), txid=TXID, validade_apos_vencimento=2)
    last_moment = datetime.combine(date(2024, 6, 12), time(23, 59, 59), BUSINESS_TZ)

    with pytest.raises(ChargeNotPayable):
        provider.pay_charge(TXID, horario=last_moment + timedelta(seconds=1))
    provider.pay_charge(TXID, horario=last_moment)


@pytest.mark.parametrize(
    ("due", "validity"),
    [(date(2024, 6, 8), 0), (date(2024, 6, 5), 3)],
    ids=["due-on-a-saturday", "third-day-a-saturday"],
)
def test_a_cobv_whose_last_day_falls_on_a_weekend_is_payable_through_monday(
    provider: SandboxProvider, clock: FakeClock, due: date, validity: int
) -> None:
    """The BCB moves the due date, and the last day counted from it, off a weekend: paid on
    the Monday after, the charge is concluded."""
    provider.create_cobv(Decimal("50.00"), due, txid=TXID, validade_apos_vencimento=validity)
    for weekend_day in (date(2024, 6, 8), date(2024, 6, 9)):
        clock.now = datetime.combine(weekend_day, time(23, 59, 59), BUSINESS_TZ)
        assert not provider.charge_expired(TXID)
    last_moment = datetime.combine(date(2024, 6, 10), time(23, 59, 59), BUSINESS_TZ)

    with pytest.raises(ChargeNotPayable):
        provider.pay_charge(TXID, horario=last_moment + timedelta(seconds=1))
    provider.pay_charge(TXID, horario=last_moment)
    assert (provider.charges.get("cobv", TXID) or {})["status"] == "CONCLUIDA"


@pytest.mark.parametrize(
    ("due", "validity", "last_day"),
    [
        # The spec's examples A, F and G (those its holidays do not change).
        (date(2020, 10, 20), 4, date(2020, 10, 26)),
        (date(2021, 8, 27), 5, date(2021, 9, 1)),
        (date(2021, 8, 28), 5, date(2021, 9, 6)),
    ],
)
def test_the_last_payable_day_follows_the_specs_examples(
    due: date, validity: int, last_day: date
) -> None:
    assert last_payable_day(due, validity) == last_day


@pytest.mark.parametrize(
    ("body", "property_"),
    [
        (
            _cobv_body(calendario={"dataDeVencimento": "2024-06-02"}),
            "cobv.calendario.dataDeVencimento",
        ),
        (
            _cobv_body(calendario={"dataDeVencimento": "2024-06-10", "validadeAposVencimento": -1}),
            "cobv.calendario.validadeAposVencimento",
        ),
        (_cobv_body(devedor=None), "cobv.devedor"),
        (_cobv_body(devedor={"cpf": "1", "nome": "x"}), "cobv.devedor"),
        (
            _cobv_body(
                valor={"original": "50.00", "multa": {"modalidade": 3, "valorPerc": "2.00"}}
            ),
            "cobv.valor.multa",
        ),
    ],
)
def test_put_cobv_refuses_invalid_requests(
    http: httpx.Client, body: dict[str, Any], property_: str
) -> None:
    response = http.put(f"/cobv/{TXID}", json=body)

    assert response.status_code == 400
    assert response.json()["type"] == ERROR + "CobVOperacaoInvalida"
    assert [v["propriedade"] for v in response.json()["violacoes"]] == [property_]


def test_balance_counts_pix_minus_settled_refunds(provider: SandboxProvider) -> None:
    provider.create_cob(Decimal("100.00"), txid=TXID)
    pix = provider.pay_charge(TXID)
    provider.receive_pix(Decimal("0.50"))
    refund = provider.refund_pix(pix["endToEndId"], Decimal("30.00"), status="EM_PROCESSAMENTO")
    assert provider.balance_cents() == 10050

    provider.settle_refund(pix["endToEndId"], refund["id"])

    assert provider.balance_cents() == 7050
