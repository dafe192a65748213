"""Validate the bodies of ``PUT /cob/{txid}`` (``CobSolicitada``) and ``PUT /cobv/{txid}``
(``CobVSolicitada``) into the terms the sandbox keeps, or into BCB ``violacoes``."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from sandbox.ledger import format_amount
from sandbox.listing import CNPJ_RE, CPF_RE
from sandbox.problems import violation

CHARGE_TXID_RE: Final = re.compile(r"[A-Za-z0-9]{26,35}")  # what the spec asks of PUT txids
_AMOUNT_RE: Final = re.compile(r"\d{1,10}\.\d{2}")
DEFAULT_EXPIRATION_SECONDS: Final = 86400
DEFAULT_VALIDITY_DAYS: Final = 30
# Address and contact fields a due-date charge's debtor may carry, with their maximum lengths.
_DEBTOR_EXTRAS: Final = {"logradouro": 200, "cidade": 200, "uf": 2, "cep": 8, "email": 200}
# Fines, interest, rebates and discounts change what a due-date charge costs day by day;
# the sandbox does not compute them, so it refuses them rather than answer a wrong amount.
_UNSUPPORTED_VALUE_FIELDS: Final = ("multa", "juros", "abatimento", "desconto")

Violations = list[dict[str, str]]


@dataclass(frozen=True, slots=True)
class ChargeTerms:
    """What a merchant asked for; ``expiracao`` for ``cob``, due date and validity for
    ``cobv``."""

    amount: Decimal
    chave: str
    devedor: dict[str, str] | None
    solicitacao_pagador: str | None
    info_adicionais: list[dict[str, str]] | None
    expiracao: int = DEFAULT_EXPIRATION_SECONDS
    due_date: date | None = None
    validity_days: int = DEFAULT_VALIDITY_DAYS


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _amount(valor: Any, prefix: str, problems: Violations) -> Decimal | None:
    original = valor.get("original") if isinstance(valor, dict) else None
    if not isinstance(original, str) or not _AMOUNT_RE.fullmatch(original):
        problems.append(violation(f"{prefix}.valor.original", "Não respeita o schema."))
        return None
    try:
        amount = Decimal(original)
        format_amount(amount)
    except (InvalidOperation, ValueError):
        problems.append(violation(f"{prefix}.valor.original", "O valor é zero.", original))
        return None
    return amount


def _devedor(raw: Any, prefix: str, problems: Violations, *, extras: bool) -> dict[str, str] | None:
    if not isinstance(raw, dict):
        problems.append(violation(f"{prefix}.devedor", "Não respeita o schema."))
        return None
    cpf, cnpj, nome = raw.get("cpf"), raw.get("cnpj"), raw.get("nome")
    has_cpf = isinstance(cpf, str) and CPF_RE.fullmatch(cpf) is not None
    has_cnpj = isinstance(cnpj, str) and CNPJ_RE.fullmatch(cnpj) is not None
    valid = (
        has_cpf != has_cnpj
        and ("cpf" in raw) == has_cpf
        and ("cnpj" in raw) == has_cnpj
        and isinstance(nome, str)
        and 0 < len(nome) <= 200
    )
    devedor: dict[str, str] = {"cpf": str(cpf)} if has_cpf else {"cnpj": str(cnpj)}
    devedor["nome"] = str(nome)
    for name, limit in _DEBTOR_EXTRAS.items() if extras else ():
        value = raw.get(name)
        if value is None:
            continue
        if not isinstance(value, str) or len(value) > limit:
            valid = False
        else:
            devedor[name] = value
    if not valid:
        problems.append(violation(f"{prefix}.devedor", "Não respeita o schema."))
        return None
    return devedor


def _common(
    body: dict[str, Any], prefix: str, pix_keys: Collection[str], problems: Violations
) -> tuple[str, str | None, list[dict[str, str]] | None]:
    chave = body.get("chave")
    if not isinstance(chave, str) or not 0 < len(chave) <= 77:
        problems.append(violation(f"{prefix}.chave", "Não respeita o schema."))
    elif chave not in pix_keys:
        problems.append(
            violation(f"{prefix}.chave", "A chave não pertence a este usuário recebedor.", chave)
        )
    request = body.get("solicitacaoPagador")
    if request is not None and (not isinstance(request, str) or len(request) > 140):
        problems.append(violation("solicitacaoPagador", "Não respeita o schema."))
        request = None
    info = body.get("infoAdicionais")
    if info is not None and not (
        isinstance(info, list)
        and len(info) <= 50
        and all(
            isinstance(item, dict)
            and set(item) == {"nome", "valor"}
            and isinstance(item["nome"], str)
            and len(item["nome"]) <= 50
            and isinstance(item["valor"], str)
            and len(item["valor"]) <= 200
            for item in info
        )
    ):
        problems.append(violation("infoAdicionais", "Não respeita o schema."))
        info = None
    return str(chave), request, info


def parse_cob(body: Any, pix_keys: Collection[str]) -> ChargeTerms | Violations:
    if not isinstance(body, dict):
        return [violation("cob", "O corpo deve ser um objeto JSON.")]
    problems: Violations = []
    calendario = body.get("calendario", {})
    raw_expiracao = calendario.get("expiracao") if isinstance(calendario, dict) else "?"
    expiracao = _integer(DEFAULT_EXPIRATION_SECONDS if raw_expiracao is None else raw_expiracao)
    if expiracao is None or expiracao <= 0:
        problems.append(violation("cob.calendario.expiracao", "Deve ser maior que zero."))
    amount = _amount(body.get("valor"), "cob", problems)
    raw_devedor = body.get("devedor")
    devedor = None
    if raw_devedor is not None:
        devedor = _devedor(raw_devedor, "cob", problems, extras=False)
    chave, request, info = _common(body, "cob", pix_keys, problems)
    if problems or amount is None or expiracao is None:
        return problems
    return ChargeTerms(amount, chave, devedor, request, info, expiracao=expiracao)


def parse_cobv(body: Any, pix_keys: Collection[str], today: date) -> ChargeTerms | Violations:
    if not isinstance(body, dict):
        return [violation("cobv", "O corpo deve ser um objeto JSON.")]
    problems: Violations = []
    calendario = body.get("calendario")
    calendario = calendario if isinstance(calendario, dict) else {}
    due_date: date | None = None
    raw_due = calendario.get("dataDeVencimento")
    try:
        due_date = date.fromisoformat(raw_due) if isinstance(raw_due, str) else None
    except ValueError:
        due_date = None
    if due_date is None:
        problems.append(violation("cobv.calendario.dataDeVencimento", "Não respeita o schema."))
    elif due_date < today:
        problems.append(
            violation(
                "cobv.calendario.dataDeVencimento",
                "É anterior à data de criação da cobrança.",
                str(raw_due),
            )
        )
    validity = _integer(calendario.get("validadeAposVencimento", DEFAULT_VALIDITY_DAYS))
    if validity is None or validity < 0:
        problems.append(
            violation("cobv.calendario.validadeAposVencimento", "Não pode ser menor que zero.")
        )
    valor = body.get("valor")
    amount = _amount(valor, "cobv", problems)
    for name in _UNSUPPORTED_VALUE_FIELDS:
        if isinstance(valor, dict) and name in valor:
            problems.append(violation(f"cobv.valor.{name}", "Não suportado pelo sandbox."))
    devedor = _devedor(body.get("devedor"), "cobv", problems, extras=True)
    chave, request, info = _common(body, "cobv", pix_keys, problems)
    if problems or amount is None or due_date is None or validity is None:
        return problems
    return ChargeTerms(
        amount, chave, devedor, request, info, due_date=due_date, validity_days=validity
    )
