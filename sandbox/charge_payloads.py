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
# A due-date charge's fine, interest, abatement and discount, with the highest modality of
# each in the BCB's tables of domains (``CobVValor``).
VALUE_TERMS: Final = {"multa": 2, "juros": 8, "abatimento": 2, "desconto": 6}
_FIXED_DATE_DISCOUNTS: Final = (1, 2)  # "até a data informada"; 3-6 are per day early
_PERCENT_DISCOUNTS: Final = (2, 5, 6)
_MAX_DISCOUNT_DATES: Final = 3

Violations = list[dict[str, str]]


@dataclass(frozen=True, slots=True)
class Term:
    """A fine, interest or abatement: its ``modalidade`` and ``valorPerc`` (a value in
    reais or a percentage, as the modality says)."""

    modality: int
    value: Decimal


@dataclass(frozen=True, slots=True)
class Discount:
    """``desconto``: until fixed dates (modalities 1-2, ``dates`` holds each date and its
    ``valorPerc``) or per day paid early (3-6, ``value``)."""

    modality: int
    value: Decimal | None = None
    dates: tuple[tuple[date, Decimal], ...] = ()


@dataclass(frozen=True, slots=True)
class ValueTerms:
    """What changes a due-date charge's amount with the payment date
    (``sandbox.charges.amount_due`` works it out)."""

    fine: Term | None = None
    interest: Term | None = None
    abatement: Term | None = None
    discount: Discount | None = None

    def render(self) -> dict[str, Any]:
        """As ``valor`` shows them besides ``original`` (``modalidade`` an integer)."""
        shown: dict[str, Any] = {}
        for name, term in (
            ("multa", self.fine),
            ("juros", self.interest),
            ("abatimento", self.abatement),
        ):
            if term is not None:
                shown[name] = {"modalidade": term.modality, "valorPerc": f"{term.value:.2f}"}
        discount = self.discount
        if discount is not None:
            shown["desconto"] = {"modalidade": discount.modality}
            if discount.value is not None:
                shown["desconto"]["valorPerc"] = f"{discount.value:.2f}"
            else:
                shown["desconto"]["descontoDataFixa"] = [
                    {"data": day.isoformat(), "valorPerc": f"{value:.2f}"}
                    for day, value in discount.dates
                ]
        return shown


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
    value_terms: ValueTerms = ValueTerms()  # cobv only


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
    value_terms = parse_value_terms(valor, amount, due_date, problems)
    devedor = _devedor(body.get("devedor"), "cobv", problems, extras=True)
    chave, request, info = _common(body, "cobv", pix_keys, problems)
    if problems or amount is None or due_date is None or validity is None:
        return problems
    return ChargeTerms(
        amount,
        chave,
        devedor,
        request,
        info,
        due_date=due_date,
        validity_days=validity,
        value_terms=value_terms,
    )


# -- multa, juros, abatimento, desconto ------------------------------------------------

_SCHEMA: Final = "Não respeita o schema."
_TOO_LARGE: Final = (
    "Representa um valor maior ou igual ao valor da cobrança original ou maior ou igual a 100%."
)


def _modality(raw: Any, highest: int) -> int | None:
    # The schema says integer; the spec's own example (cobBody1) writes "2".
    if isinstance(raw, str) and raw.isdigit():
        raw = int(raw)
    value = _integer(raw)
    return value if value is not None and 1 <= value <= highest else None


def _value_perc(raw: Any) -> Decimal | None:
    return Decimal(raw) if isinstance(raw, str) and _AMOUNT_RE.fullmatch(raw) else None


def _too_large(value: Decimal, percent: bool, original: Decimal | None) -> bool:
    limit = Decimal(100) if percent else original
    return limit is not None and value >= limit


def _term(raw: Any, name: str, problems: Violations) -> Term | None:
    """``multa``, ``juros`` or ``abatimento``: exactly ``modalidade`` and ``valorPerc``."""
    if not isinstance(raw, dict) or set(raw) != {"modalidade", "valorPerc"}:
        problems.append(violation(f"cobv.valor.{name}", _SCHEMA))
        return None
    modality = _modality(raw["modalidade"], VALUE_TERMS[name])
    value = _value_perc(raw["valorPerc"])
    if modality is None or value is None:
        problems.append(violation(f"cobv.valor.{name}", _SCHEMA))
        return None
    return Term(modality, value)


def _discount(
    raw: Any, original: Decimal | None, due_date: date | None, problems: Violations
) -> Discount | None:
    def fail(reason: str) -> None:
        problems.append(violation("cobv.valor.desconto", reason))

    if not isinstance(raw, dict) or not set(raw) <= {"modalidade", "valorPerc", "descontoDataFixa"}:
        fail(_SCHEMA)
        return None
    modality = _modality(raw.get("modalidade"), VALUE_TERMS["desconto"])
    if modality is None:
        fail(_SCHEMA)
        return None
    percent = modality in _PERCENT_DISCOUNTS
    if modality not in _FIXED_DATE_DISCOUNTS:
        value = _value_perc(raw.get("valorPerc"))
        if value is None:
            fail("Modalidade de 3 a 6 exige valorPerc.")
        elif raw.get("descontoDataFixa") is not None:
            fail("Modalidade de 3 a 6 não admite descontoDataFixa.")
        elif _too_large(value, percent, original):
            fail(_TOO_LARGE)
        else:
            return Discount(modality, value=value)
        return None
    if "valorPerc" in raw:
        fail("Modalidade 1 ou 2 não admite valorPerc.")
        return None
    entries = raw.get("descontoDataFixa")
    if not isinstance(entries, list) or not entries:
        fail("Modalidade 1 ou 2 exige descontoDataFixa.")
        return None
    dates: list[tuple[date, Decimal]] = []
    for entry in entries:
        until: date | None = None
        value = None
        if isinstance(entry, dict) and set(entry) == {"data", "valorPerc"}:
            value = _value_perc(entry["valorPerc"])
            try:
                until = (
                    date.fromisoformat(entry["data"]) if isinstance(entry["data"], str) else None
                )
            except ValueError:
                until = None
        if until is None or value is None:
            fail(_SCHEMA)
            return None
        dates.append((until, value))
    if len(dates) > _MAX_DISCOUNT_DATES or len(set(dates)) != len(dates):
        fail(_SCHEMA)
    elif due_date is not None and any(until > due_date for until, _ in dates):
        fail("Há data de desconto posterior à data de vencimento.")
    elif any(_too_large(value, percent, original) for _, value in dates):
        fail(_TOO_LARGE)
    else:
        return Discount(modality, dates=tuple(dates))
    return None


def parse_value_terms(
    valor: Any, original: Decimal | None, due_date: date | None, problems: Violations
) -> ValueTerms:
    """``valor.multa|juros|abatimento|desconto`` of a ``PUT /cobv`` body, validated as the
    spec's ``CobVOperacaoInvalida`` lists: each respects the schema; the abatement and
    every discount are below the original (or 100%); discount dates are not after the due
    date; fixed-date modalities (1, 2) take ``descontoDataFixa`` (1 to 3 dates) and no
    ``valorPerc``, per-day ones (3 to 6) the opposite."""
    if not isinstance(valor, dict):
        return ValueTerms()
    fine = interest = abatement = None
    if valor.get("multa") is not None:
        fine = _term(valor["multa"], "multa", problems)
    if valor.get("juros") is not None:
        interest = _term(valor["juros"], "juros", problems)
    if valor.get("abatimento") is not None:
        abatement = _term(valor["abatimento"], "abatimento", problems)
        if abatement is not None and _too_large(abatement.value, abatement.modality == 2, original):
            problems.append(violation("cobv.valor.abatimento", _TOO_LARGE))
            abatement = None
    discount = None
    if valor.get("desconto") is not None:
        discount = _discount(valor["desconto"], original, due_date, problems)
    return ValueTerms(fine, interest, abatement, discount)
