"""Query lists of the BCB API (``GET /cob``, ``/cobv``, ``/rec``, ``/cobr``): a time window,
optional filters and ``paginacao``, answered as ``{"parametros": ..., key: [...]}``.

``QueryReader`` and ``parametros`` also serve ``GET /pix`` (``sandbox.pix_routes``), whose
filters and paging come from the ledger rather than from a ``ListRequest``."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeVar

from starlette.datastructures import QueryParams
from starlette.responses import JSONResponse, Response

from sandbox.clock import parse_rfc3339
from sandbox.problems import problem, violation

T = TypeVar("T")

DEFAULT_PAGE_SIZE: Final = 100
MAX_PAGE_SIZE: Final = 1000

CPF_RE: Final = re.compile(r"\d{11}")
CNPJ_RE: Final = re.compile(r"[0-9A-Z]{14}")
STATUS_RE: Final = re.compile(r"[A-Z_]{1,40}")

# name -> (pattern, reason given when the value does not match it)
Filters = Mapping[str, tuple[re.Pattern[str], str]]
DOCUMENT_FILTERS: Final[Filters] = {
    "cpf": (CPF_RE, "Deve ter 11 dígitos."),
    "cnpj": (CNPJ_RE, "Deve ter 14 dígitos ou letras maiúsculas."),
    "status": (STATUS_RE, "Deve ser um status conhecido."),
}


@dataclass(frozen=True, slots=True)
class ListRequest:
    inicio: datetime
    fim: datetime
    filters: dict[str, str]
    page: int
    per_page: int
    echo: dict[str, Any]  # the parameters as the client sent them, for ``parametros``

    def covers(self, moment: datetime) -> bool:
        """Inclusive at both ends, as ``GET /pix`` is."""
        return self.inicio <= moment <= self.fim


class QueryReader:
    """Reads the parameters of a BCB list query one by one, collecting the ``violacoes``
    and echoing every accepted filter for ``parametros``."""

    _BOOLEANS: Final = {"true": True, "false": False}

    def __init__(self, params: QueryParams) -> None:
        self.params = params
        self.problems: list[dict[str, str]] = []
        self.echo: dict[str, Any] = {}

    def timestamp(self, name: str) -> datetime | None:
        raw = self.params.get(name)
        if raw is None:
            self.problems.append(violation(name, "O parâmetro é obrigatório."))
            return None
        parsed = parse_rfc3339(raw)
        if parsed is None:
            self.problems.append(violation(name, "Deve ser um timestamp RFC 3339 com fuso.", raw))
        self.echo[name] = raw
        return parsed

    def pattern(self, name: str, regex: re.Pattern[str], reason: str) -> str | None:
        raw = self.params.get(name)
        if raw is None:
            return None
        if not regex.fullmatch(raw):
            self.problems.append(violation(name, reason, raw))
            return None
        self.echo[name] = raw
        return raw

    def flag(self, name: str) -> bool | None:
        raw = self.params.get(name)
        if raw is None:
            return None
        if raw.lower() not in self._BOOLEANS:
            self.problems.append(violation(name, "Deve ser true ou false.", raw))
            return None
        self.echo[name] = self._BOOLEANS[raw.lower()]
        return self._BOOLEANS[raw.lower()]

    def integer(self, name: str, default: int, low: int, high: int | None) -> int:
        raw = self.params.get(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            value = low - 1
        if value < low or (high is not None and value > high):
            bounds = f"entre {low} e {high}" if high is not None else f"maior ou igual a {low}"
            self.problems.append(violation(name, f"Deve ser um inteiro {bounds}.", raw))
            return default
        return value

    def paging(self) -> tuple[int, int]:
        """``paginacao.paginaAtual`` (from 0) and ``paginacao.itensPorPagina``."""
        page = self.integer("paginacao.paginaAtual", 0, 0, None)
        per_page = self.integer("paginacao.itensPorPagina", DEFAULT_PAGE_SIZE, 1, MAX_PAGE_SIZE)
        return page, per_page

    def window(
        self, inicio: datetime | None, fim: datetime | None
    ) -> tuple[datetime, datetime] | None:
        """After every parameter is read: the checks across parameters, then ``(inicio,
        fim)`` if the whole query is valid, else ``None`` (``problems`` say why)."""
        if inicio is not None and fim is not None and fim < inicio:
            self.problems.append(
                violation("fim", "O fim é anterior ao início.", self.params["fim"])
            )
        if "cpf" in self.params and "cnpj" in self.params:
            self.problems.append(violation("cnpj", "CPF e CNPJ não podem ser usados juntos."))
        if self.problems or inicio is None or fim is None:
            return None
        return inicio, fim


def parse_list_request(params: QueryParams, filters: Filters) -> ListRequest | list[dict[str, str]]:
    """The validated request, or the BCB ``violacoes`` explaining why it is not one."""
    reader = QueryReader(params)
    inicio, fim = reader.timestamp("inicio"), reader.timestamp("fim")
    chosen: dict[str, str] = {}
    for name, (pattern, reason) in filters.items():
        value = reader.pattern(name, pattern, reason)
        if value is not None:
            chosen[name] = value
    page, per_page = reader.paging()
    window = reader.window(inicio, fim)
    if window is None:
        return reader.problems
    return ListRequest(*window, chosen, page, per_page, reader.echo)


def invalid_list(kind: str, what: str, violacoes: list[dict[str, str]]) -> Response:
    return problem(
        400,
        kind,
        f"Consulta de {what} inválida",
        f"Os parâmetros de consulta à lista de {what} não respeitam o schema "
        "ou não fazem sentido semanticamente.",
        violacoes=violacoes,
    )


def parametros(echo: Mapping[str, Any], page: int, per_page: int, total: int) -> dict[str, Any]:
    """The ``parametros`` of a list answer: the accepted filters and the ``paginacao``."""
    answer = dict(echo)
    answer["paginacao"] = {
        "paginaAtual": page,
        "itensPorPagina": per_page,
        # The spec's minimum is 1 even for an empty result.
        "quantidadeDePaginas": max(1, math.ceil(total / per_page)),
        "quantidadeTotalDeItens": total,
    }
    return answer


def list_response(
    key: str, request: ListRequest, matching: Sequence[T], render: Callable[[T], Any]
) -> JSONResponse:
    """One page of ``matching`` (filtered and ordered), each item rendered, under ``key``."""
    start = request.page * request.per_page
    answer = parametros(request.echo, request.page, request.per_page, len(matching))
    items = [render(item) for item in matching[start : start + request.per_page]]
    return JSONResponse({"parametros": answer, key: items})
