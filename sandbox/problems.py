"""BCB ``Problema`` responses (RFC 7807), the only error shape the QR code API uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from starlette.responses import JSONResponse

PROBLEM_MEDIA_TYPE: Final = "application/problem+json"
ERROR_TYPE_BASE: Final = "https://pix.bcb.gov.br/api/v2/error/"

# The spec names no type for 401 or 429; these two are the sandbox's own.
_GENERIC: Final[Mapping[int, tuple[str, str]]] = {
    400: ("RequisicaoInvalida", "Requisição inválida"),
    401: ("NaoAutorizado", "Não autorizado"),
    403: ("AcessoNegado", "Acesso negado"),
    404: ("NaoEncontrado", "Não encontrado"),
    410: ("PermanentementeRemovido", "Permanentemente removido"),
    429: ("LimiteDeRequisicoesExcedido", "Limite de requisições excedido"),
    500: ("ErroInternoDoServidor", "Erro interno do servidor"),
    503: ("ServicoIndisponivel", "Serviço indisponível"),
    504: ("IndisponibilidadePorTempoEsgotado", "Indisponibilidade por tempo esgotado"),
}


def violation(propriedade: str, razao: str, valor: str | None = None) -> dict[str, str]:
    item = {"razao": razao, "propriedade": propriedade}
    if valor is not None:
        item["valor"] = valor
    return item


def problem(
    status: int,
    kind: str | None = None,
    title: str | None = None,
    detail: str | None = None,
    *,
    violacoes: Sequence[Mapping[str, str]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """A problem+json response; ``kind`` and ``title`` default to the generic BCB ones."""
    default_kind, default_title = _GENERIC.get(
        status, _GENERIC[500] if status >= 500 else _GENERIC[400]
    )
    body: dict[str, Any] = {
        "type": ERROR_TYPE_BASE + (kind or default_kind),
        "title": title or default_title,
        "status": status,
    }
    if detail is not None:
        body["detail"] = detail
    if violacoes:
        body["violacoes"] = [dict(v) for v in violacoes]
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_MEDIA_TYPE)
