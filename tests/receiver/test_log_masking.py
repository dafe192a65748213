"""No CPF/CNPJ or name appears unmasked in the logs, whatever path a delivery takes."""

from __future__ import annotations

import io
import json

from reconcile.logs import get_logger
from tests.conftest import RunningNode
from tests.factories import pix
from tests.receiver.test_notification_kinds import load

CPF = "12345678909"
CNPJ = "11222333000181"
NAMES = ["Fulana de Tal", "Loja Exemplo LTDA", "Fornecedor Um"]


def test_personal_data_is_masked_in_every_log_line(
    running_node: RunningNode, json_logs: io.StringIO
) -> None:
    body = pix(pagador={"cpf": CPF, "nome": "Fulana de Tal"}, infoPagador=f"CPF {CPF}")
    assert running_node.post_pix({"pix": [body]}).status_code == 200
    refused = running_node.post_pix({"pix": [{"pagador": {"cnpj": CNPJ}, "valor": "x"}]})
    assert refused.status_code == 400
    for fixture in ("accounts/transfer.json", "accounts/receive.json", "qrcode/pix_flat.json"):
        running_node.http.post(
            "/webhooks/accounts" if fixture.startswith("accounts") else "/webhooks/qrcode/pix",
            json=load(fixture),
        )
    running_node.wait_processed()
    # Anything a developer might log directly is masked too.
    get_logger("test").info(
        "debugging", pagador={"cpf": CPF, "nome": "Fulana de Tal"}, note=f"cliente {CNPJ}"
    )

    output = json_logs.getvalue()
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert any(line.get("event") == "pix_received" for line in lines)
    assert any(line.get("event") == "webhook_refused" for line in lines)
    assert any(line.get("payer_document") == "*********09" for line in lines)
    for secret in (CPF, CNPJ, "123.456.789-09", *NAMES):
        assert secret not in output, secret
    assert all("request_id" in line for line in lines if line["event"].startswith("webhook_"))
