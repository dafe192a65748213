"""``GET /pix`` and ``GET /pix/{e2eid}`` of the sandbox, over real HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from sandbox.app import create_app
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from tests.sandbox.sandbox_support import served_app, token_http_fixture

BASE = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
DAY = {"inicio": "2024-06-01T00:00:00Z", "fim": "2024-06-01T23:59:59.999Z"}
ERROR = "https://pix.bcb.gov.br/api/v2/error/"
DEFAULT_CREDS = (DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET)


app, server = served_app(create_app)


@pytest.fixture
def provider(app: Starlette) -> SandboxProvider:
    fresh = SandboxProvider(seed=2)
    fresh.register_client("no-pix", "no-pix-secret", {"cob.read"})
    app.state.provider = fresh
    return fresh


def _token(server: BackgroundServer, client: tuple[str, str], scope: str | None = None) -> str:
    data = {"grant_type": "client_credentials"}
    if scope is not None:
        data["scope"] = scope
    response = httpx.post(server.url + "/oauth/token", data=data, auth=client)
    response.raise_for_status()
    token: str = response.json()["access_token"]
    return token


http = token_http_fixture()


def _book(provider: SandboxProvider, count: int, **kwargs: Any) -> list[dict[str, Any]]:
    return [
        provider.receive_pix(Decimal("1.00"), horario=BASE + timedelta(seconds=i), **kwargs)
        for i in range(count)
    ]


def _assert_problem(response: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["type"] == ERROR + kind
    assert body["status"] == status
    assert body["title"]
    return body


def test_get_pix_by_end_to_end_id(http: httpx.Client, provider: SandboxProvider) -> None:
    [pix] = _book(provider, 1, txid="abc")
    response = http.get(f"/pix/{pix['endToEndId']}")
    assert response.status_code == 200
    assert response.json() == pix


@pytest.mark.usefixtures("provider")
def test_unknown_pix_is_a_404_problem(http: httpx.Client) -> None:
    response = http.get("/pix/E00000000202401010000aaaaaaaaaaa")
    body = _assert_problem(response, 404, "PixNaoEncontrado")
    assert "E00000000202401010000aaaaaaaaaaa" in body["detail"]


def test_list_pages_through_every_pix_in_order(
    http: httpx.Client, provider: SandboxProvider
) -> None:
    booked = _book(provider, 25)
    seen: list[dict[str, Any]] = []
    for page in range(3):
        response = http.get(
            "/pix", params={**DAY, "paginacao.paginaAtual": page, "paginacao.itensPorPagina": 10}
        )
        assert response.status_code == 200
        body = response.json()
        assert body["parametros"]["inicio"] == DAY["inicio"]
        assert body["parametros"]["paginacao"] == {
            "paginaAtual": page,
            "itensPorPagina": 10,
            "quantidadeDePaginas": 3,
            "quantidadeTotalDeItens": 25,
        }
        seen.extend(body["pix"])
    assert seen == booked

    past_the_end = http.get("/pix", params={**DAY, "paginacao.paginaAtual": 3})
    assert past_the_end.json()["pix"] == []


def test_list_defaults_to_100_per_page(http: httpx.Client, provider: SandboxProvider) -> None:
    _book(provider, 101)
    body = http.get("/pix", params=DAY).json()
    assert len(body["pix"]) == 100
    assert body["parametros"]["paginacao"]["quantidadeDePaginas"] == 2


def test_list_time_window_is_inclusive(http: httpx.Client, provider: SandboxProvider) -> None:
    booked = _book(provider, 5)
    params = {"inicio": booked[1]["horario"], "fim": booked[3]["horario"]}
    body = http.get("/pix", params=params).json()
    assert [p["endToEndId"] for p in body["pix"]] == [p["endToEndId"] for p in booked[1:4]]

    # Offsets other than Z mean the same instant.
    shifted = {"inicio": "2024-06-01T09:00:01-03:00", "fim": "2024-06-01T09:00:01-03:00"}
    assert http.get("/pix", params=shifted).json()["pix"] == [booked[1]]


@pytest.mark.usefixtures("provider")
def test_empty_result_still_reports_one_page(http: httpx.Client) -> None:
    body = http.get("/pix", params=DAY).json()
    assert body["pix"] == []
    assert body["parametros"]["paginacao"]["quantidadeDePaginas"] == 1
    assert body["parametros"]["paginacao"]["quantidadeTotalDeItens"] == 0


def test_list_filters(http: httpx.Client, provider: SandboxProvider) -> None:
    with_txid = provider.receive_pix(Decimal("1.00"), txid="tx1", horario=BASE)
    without_txid = provider.receive_pix(Decimal("2.00"), payer_cnpj="12345678000195", horario=BASE)
    by_cpf = provider.receive_pix(Decimal("3.00"), payer_cpf="12345678909", horario=BASE)
    refunded = provider.receive_pix(Decimal("4.00"), txid="tx2", horario=BASE)
    provider.refund_pix(refunded["endToEndId"], Decimal("1.00"))

    def ids(**filters: str) -> set[str]:
        response = http.get("/pix", params={**DAY, **filters})
        assert response.status_code == 200, response.text
        return {p["endToEndId"] for p in response.json()["pix"]}

    assert ids(txid="tx1") == {with_txid["endToEndId"]}
    assert ids(txIdPresente="true") == {with_txid["endToEndId"], refunded["endToEndId"]}
    assert without_txid["endToEndId"] in ids(txIdPresente="false")
    assert ids(cnpj="12345678000195") == {without_txid["endToEndId"]}
    assert ids(cpf="12345678909") == {by_cpf["endToEndId"]}
    assert ids(devolucaoPresente="true") == {refunded["endToEndId"]}
    body = http.get("/pix", params={**DAY, "txid": "tx1"}).json()
    assert body["parametros"]["txid"] == "tx1"


@pytest.mark.usefixtures("provider")
@pytest.mark.parametrize(
    ("params", "properties"),
    [
        ({"fim": DAY["fim"]}, {"inicio"}),
        ({**DAY, "inicio": "2024-06-01"}, {"inicio"}),
        ({**DAY, "inicio": "2024-06-01T00:00:00"}, {"inicio"}),
        ({"inicio": DAY["fim"], "fim": DAY["inicio"]}, {"fim"}),
        ({**DAY, "cpf": "12345678909", "cnpj": "12345678000195"}, {"cnpj"}),
        ({**DAY, "cpf": "1234"}, {"cpf"}),
        ({**DAY, "txid": "not-alphanumeric"}, {"txid"}),
        ({**DAY, "txIdPresente": "yes"}, {"txIdPresente"}),
        ({**DAY, "paginacao.paginaAtual": "-1"}, {"paginacao.paginaAtual"}),
        ({**DAY, "paginacao.itensPorPagina": "0"}, {"paginacao.itensPorPagina"}),
        ({**DAY, "paginacao.itensPorPagina": "1001"}, {"paginacao.itensPorPagina"}),
        ({**DAY, "paginacao.itensPorPagina": "ten"}, {"paginacao.itensPorPagina"}),
    ],
)
def test_bad_queries_are_400_with_violations(
    http: httpx.Client, params: dict[str, str], properties: set[str]
) -> None:
    body = _assert_problem(http.get("/pix", params=params), 400, "PixConsultaInvalida")
    assert {v["propriedade"] for v in body["violacoes"]} == properties
    assert all(v["razao"] for v in body["violacoes"])


@pytest.mark.usefixtures("provider")
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic abc"}],
    ids=["missing", "unknown", "wrong-scheme"],
)
def test_requests_without_a_valid_token_are_401(
    server: BackgroundServer, headers: dict[str, str]
) -> None:
    response = httpx.get(server.url + "/pix", params=DAY, headers=headers)
    _assert_problem(response, 401, "NaoAutorizado")
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_expired_tokens_are_401(http: httpx.Client, provider: SandboxProvider) -> None:
    assert http.get("/pix", params=DAY).status_code == 200
    provider.expire_tokens()
    _assert_problem(http.get("/pix", params=DAY), 401, "NaoAutorizado")


@pytest.mark.usefixtures("provider")
def test_tokens_without_pix_read_are_403(server: BackgroundServer) -> None:
    for client, scope in [(("no-pix", "no-pix-secret"), None), (DEFAULT_CREDS, "cob.read")]:
        token = _token(server, client, scope)
        response = httpx.get(
            server.url + "/pix/E00000000202401010000aaaaaaaaaaa",
            headers={"Authorization": f"Bearer {token}"},
        )
        _assert_problem(response, 403, "AcessoNegado")
        assert 'scope="pix.read"' in response.headers["www-authenticate"]


def test_scripted_faults_answer_before_authentication(
    server: BackgroundServer, provider: SandboxProvider
) -> None:
    provider.fail_next(2, status=503, retry_after=0)
    first = httpx.get(server.url + "/pix", params=DAY)
    second = httpx.get(server.url + "/pix", params=DAY)
    third = httpx.get(server.url + "/pix", params=DAY)

    _assert_problem(first, 503, "ServicoIndisponivel")
    assert first.headers["retry-after"] == "0"
    assert second.status_code == 503
    assert third.status_code == 401
    assert provider.request_count("GET /pix") == 3


def test_a_delay_fault_slows_a_successful_answer(
    http: httpx.Client, provider: SandboxProvider
) -> None:
    provider.delay_next(1, seconds=0.3)
    with pytest.raises(httpx.ReadTimeout):
        http.get("/pix", params=DAY, timeout=0.05)
    assert http.get("/pix", params=DAY).status_code == 200


def test_webhook_registration_round_trip(http: httpx.Client, provider: SandboxProvider) -> None:
    url = "https://merchant.example/webhooks/qrcode"
    key = provider.pix_key

    assert http.put(f"/webhook/{key}", json={"webhookUrl": url}).status_code == 200
    registered = http.get(f"/webhook/{key}").json()
    assert registered["webhookUrl"] == url
    assert registered["chave"] == key
    assert provider.webhooks.get(key) == registered

    bad = http.put(f"/webhook/{key}", json={"webhookUrl": "ftp://nope"})
    _assert_problem(bad, 400, "WebhookOperacaoInvalida")
    assert http.delete(f"/webhook/{key}").status_code == 204
    _assert_problem(http.get(f"/webhook/{key}"), 404, "WebhookNaoEncontrado")
