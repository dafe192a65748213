"""BCB Pix callback (``WebhookPixBody``): Pix received and their refunds (``devolucoes``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, SkipValidation, ValidationError

from reconcile.inbox import NewItem, dump_json
from reconcile.models import ItemKind
from reconcile.money import InvalidAmount, parse_amount
from reconcile.payloads import (
    AMOUNT,
    UNKNOWN_STATUS,
    Amount,
    Expect,
    Tolerant,
    one_of,
    pointer,
    timestamp,
)
from reconcile.payloads.items import (
    Candidate,
    Refusal,
    Unsplittable,
    keyed,
    new_item,
    split_body,
    unsupported_item,
)
from reconcile.payloads.refs import ref_text

E2E_PATTERN = r"^[a-zA-Z0-9]{32}$"
TXID_PATTERN = r"^[a-zA-Z0-9]{1,35}$"
# ``E`` + the payer PSP's ISPB + when the Pix was initiated (``yyyyMMddHHmm``, UTC) + 11
# alphanumerics (BCB, Manual de Padrões para Iniciação do Pix).
_E2E_TIME = re.compile(r"^E[0-9]{8}([0-9]{12})[a-zA-Z0-9]{11}$")
# Pix can be scheduled up to a year ahead; a later time is no initiation anybody meant.
_LONGEST_SCHEDULE = timedelta(days=366)


def initiated_at(end_to_end_id: str | None) -> datetime | None:
    """When a Pix was initiated, as its endToEndId says (to the minute); ``None`` when the
    id does not carry a valid time."""
    found = _E2E_TIME.match(end_to_end_id or "")
    if found is None:
        return None
    try:
        return datetime.strptime(found.group(1), "%Y%m%d%H%M").replace(tzinfo=UTC)
    except ValueError:
        return None


def moved_later(created: datetime | None, end_to_end_id: str | None) -> datetime | None:
    """A payout's money moves when its Pix is initiated: for a scheduled Pix, days after
    the payout was created. That time when it is later than ``created`` (or ``created``
    is unknown), else ``None`` (the payout moved when it was created)."""
    initiated = initiated_at(end_to_end_id)
    if initiated is None:
        return None
    if created is None:
        return initiated
    if created.replace(second=0, microsecond=0) < initiated <= created + _LONGEST_SCHEDULE:
        return initiated
    return None


REFUND_STATUSES = ("EM_PROCESSAMENTO", "DEVOLVIDO", "NAO_REALIZADO")
NATUREZAS = ("ORIGINAL", "RETIRADA", "MED_OPERACIONAL", "MED_FRAUDE", "MED_PIX_AUTOMATICO")


_DOCUMENT_PUNCTUATION = re.compile(r"[.\-/\s]")


def _document_digits(value: Any) -> Any:
    """A CPF or CNPJ written as people write it (``123.456.789-09``,
    ``12.345.678/0001-95``) is its digits: read so, the raw body keeping the notation."""
    if isinstance(value, str):
        digits = _DOCUMENT_PUNCTUATION.sub("", value)
        if digits.isdigit() and len(digits) in (11, 14):
            return digits
    return value


Document = Annotated[str | None, BeforeValidator(_document_digits)]


class Pagador(Tolerant):
    """Non-standard payer block some providers add to the BCB callback."""

    cpf: Document = Field(default=None, max_length=14)
    cnpj: Document = Field(default=None, max_length=14)
    nome: str | None = Field(default=None, max_length=200)


class HorarioDevolucao(Tolerant):
    EXPECT = {"solicitacao": timestamp(), "liquidacao": timestamp()}

    solicitacao: str | None = Field(default=None, max_length=64)
    liquidacao: str | None = Field(default=None, max_length=64)


class Devolucao(Tolerant):
    """A refund of a received Pix. ``id`` is the merchant's; ``rtrId`` the SPI's."""

    KEYS = ("rtrId", "id")
    ANY_KEY = True
    EXPECT = {
        "valor": AMOUNT,
        "natureza": one_of(*NATUREZAS),
        "status": one_of(*REFUND_STATUSES, required=True),
    }

    id: str | None = Field(default=None, min_length=1, max_length=35)
    rtrId: str | None = Field(default=None, pattern=E2E_PATTERN)
    valor: Amount | None = None
    natureza: str | None = Field(default=None, max_length=32)
    horario: HorarioDevolucao | None = None
    status: str | None = Field(default=None, min_length=1, max_length=32)
    motivo: str | None = None


def _refund_slots(schema: dict[str, Any]) -> None:
    # Anything else in their place is kept and flagged; null means no refunds. A refund
    # without its key does not cost its Pix: it is kept whole as unsupported.
    schema["anyOf"] = [b for b in schema.get("anyOf", []) if b != {"type": "null"}]
    schema["anyOf"].extend(
        [{"type": "array"}, {"type": "object"}, {"not": {"type": ["array", "object"]}}]
    )


# The parts of ``valor`` as the BCB names them; a due-date charge is judged on them.
COMPONENTS = ("original", "multa", "juros", "abatimento", "desconto")


def _components_are_readable(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("original"), dict):
        return False
    try:
        for name in COMPONENTS:
            part = value.get(name)
            if part is not None and not isinstance(part, dict):
                return False
            if part is not None and part.get("valor") is not None:
                parse_amount(part["valor"])
    except InvalidAmount:
        return False
    return True


class PixItem(Tolerant):
    """One Pix of a BCB ``WebhookPixBody`` (``pix[]``)."""

    KEYS = ("endToEndId",)
    EXACT = ("devolucoes",)
    EXPECT = {
        "valor": AMOUNT,
        "horario": timestamp(required=True),
        "devolucoes": Expect(
            "an array of refunds or one refund object",
            lambda value: isinstance(value, list | dict),
        ),
        # Kept as it came either way; flagged, since a due-date charge read from a breakdown
        # that cannot be read is judged on its terms alone (reconcile.matching.amount_due).
        "componentesValor": Expect(
            'an object with original and the other parts of valor, each {"valor": "10.00"}',
            _components_are_readable,
        ),
    }

    endToEndId: str | None = Field(
        default=None, pattern=E2E_PATTERN, description="end-to-end id, 32 characters"
    )
    txid: str | None = Field(default=None, pattern=TXID_PATTERN)
    valor: Amount | None = Field(
        default=None, description='amount, e.g. "110.00"; strings and numbers accepted'
    )
    horario: str | None = Field(
        default=None, min_length=1, max_length=64, description="RFC 3339; kept raw when unreadable"
    )
    chave: str | None = Field(default=None, max_length=77)
    infoPagador: str | None = None
    pagador: Pagador | None = None
    # An array in the spec, a single object in its own example and in real deliveries. Each
    # refund is an item of its own, read on its own (``refund_candidates``): here the field
    # only describes the shape.
    devolucoes: Annotated[list[Devolucao] | Devolucao | None, SkipValidation] = Field(
        default=None, json_schema_extra=_refund_slots
    )
    # Kept as received, never judged: a shape we do not expect must not cost us the Pix.
    componentesValor: Any = Field(
        default=None,
        description="the parts of valor (original, multa, juros, abatimento, desconto...)",
    )

    def components_json(self) -> str | None:
        """``componentesValor`` as JSON text, ``None`` when absent."""
        return dump_json(self.componentesValor) if self.componentesValor is not None else None

    def refund_candidates(self) -> list[Candidate]:
        """Where the refunds are, relative to the Pix; none when ``devolucoes`` is neither
        an array nor an object (flagged by ``warnings()``)."""
        found: object = self.devolucoes
        if isinstance(found, list):
            return [(pointer(["devolucoes", i]), entry) for i, entry in enumerate(found)]
        if isinstance(found, dict):
            return [(pointer(["devolucoes"]), found)]
        return []


def pix_key(end_to_end_id: str) -> str:
    return f"pix:{end_to_end_id}"


def refund_key(end_to_end_id: str, refund: Devolucao) -> str:
    # A status change is a new fact; the same status repeated is a duplicate.
    status = refund.status or UNKNOWN_STATUS
    if refund.rtrId:
        return f"refund:{refund.rtrId}:{status}"
    return f"refund:{end_to_end_id}:{refund.id}:{status}"


def _refund_payload(end_to_end_id: str, raw_refund: Any) -> dict[str, Any]:
    return {"endToEndId": end_to_end_id, "devolucao": raw_refund}


def _pix_items(pix: PixItem, raw: dict[str, Any], at: str, refusal: Refusal) -> list[NewItem]:
    assert pix.endToEndId is not None
    end_to_end_id = pix.endToEndId
    items = [new_item(ItemKind.PIX, pix_key(end_to_end_id), raw, pix.warnings())]
    for refund, raw_refund, _ in keyed(
        Devolucao,
        [(at + p, r) for p, r in pix.refund_candidates()],
        "a refund",
        refusal,
        # A refund without its key is kept with its Pix's: the same refund of two Pix is
        # two facts, not a duplicate, and the Pix's endToEndId finds it.
        lambda raw_refund: _refund_payload(end_to_end_id, raw_refund),
    ):
        payload = _refund_payload(end_to_end_id, raw_refund)
        items.append(
            new_item(
                ItemKind.PIX_REFUND,
                refund_key(pix.endToEndId, refund),
                payload,
                refund.warnings("/devolucao"),
            )
        )
    return items


def pix_items(pix: PixItem, raw: dict[str, Any], at: str = "") -> list[NewItem]:
    """One item for the Pix and one per refund status. Callbacks (and polls) repeat earlier
    refunds, which then count as duplicates."""
    refusal = Refusal()
    if not pix.key_found():
        refusal.without_key(pix, at)
        refusal.raise_if_any("a Pix")
    items = _pix_items(pix, raw, at, refusal)
    refusal.raise_if_any("a refund")
    return items


def api_pix_items(raw: dict[str, Any]) -> list[NewItem]:
    """The items of one Pix as the provider's API states it (a page of ``GET /pix``, or
    ``GET /pix/{e2eid}``)."""
    return pix_items(PixItem.model_validate(raw), raw)


PIX_FIELDS = frozenset(PixItem.model_fields)
"""A flat object with none of these is no Pix (docs/design.md §4)."""


# The fields of a Pix as the BCB callback documents them. A Pix holding only these, each
# written as documented, is read without the tolerant models (``_as_documented``; the
# workers' ``pix_fields`` likewise).
_DOCUMENTED = frozenset(("endToEndId", "txid", "valor", "horario", "chave", "infoPagador"))
# ``fullmatch``: ``$`` in Python's patterns also matches before a final newline.
_E2E = re.compile(E2E_PATTERN.strip("^$"))
_TXID = re.compile(TXID_PATTERN.strip("^$"))
_AMOUNT = re.compile(r"[0-9]{1,10}\.[0-9]{2}")
_HORARIO = PixItem.EXPECT["horario"]
_LONGEST_CHAVE = 77
_LONGEST_HORARIO = 64


def _documented_text(raw: dict[str, Any], name: str, longest: int = 1 << 62) -> bool:
    value = raw.get(name, "")
    return isinstance(value, str) and len(value) <= longest and "\x00" not in value


def is_documented(raw: Any) -> bool:
    """A Pix exactly as the BCB documents it: in the callback, it holds its five fields (and
    ``infoPagador``), each in its documented form. The tolerant reading finds nothing to
    flag in it and keys it by its ``endToEndId``; anything else goes that way."""
    if not isinstance(raw, dict) or not _DOCUMENTED.issuperset(raw):
        return False
    e2e, txid, valor, horario = (raw.get(n) for n in ("endToEndId", "txid", "valor", "horario"))
    return (
        isinstance(e2e, str)
        and _E2E.fullmatch(e2e) is not None
        and ("txid" not in raw or (isinstance(txid, str) and _TXID.fullmatch(txid) is not None))
        and isinstance(valor, str)
        and _AMOUNT.fullmatch(valor) is not None
        and isinstance(horario, str)
        and 0 < len(horario) <= _LONGEST_HORARIO
        and _HORARIO.problem(horario) is None
        and _documented_text(raw, "chave", _LONGEST_CHAVE)
        and _documented_text(raw, "infoPagador")
    )


def _as_documented(document: Any) -> list[NewItem] | None:
    """The items of a callback in the BCB's own shape (``{"pix": [...]}``, every Pix as
    documented), ``None`` for any other. Nearly every delivery is one: read this way it
    costs the receiver's event loop a fraction of the tolerant reading, with the same items
    (tests/reconcile/test_documented_pix.py compares the two)."""
    if not isinstance(document, dict) or len(document) != 1:
        return None
    found = document.get("pix")
    if not isinstance(found, list) or not found or not all(map(is_documented, found)):
        return None
    return [_documented_item(raw) for raw in found]


def _documented_item(raw: dict[str, Any]) -> NewItem:
    text = dump_json(raw)
    if "\ufffd" in text:
        # Text mended on the way in is flagged, as the tolerant reading flags it.
        return new_item(ItemKind.PIX, pix_key(raw["endToEndId"]), raw)
    # Its references, as ``item_refs`` reads them: both are ids without spaces.
    refs = {raw["endToEndId"], raw.get("txid", raw["endToEndId"])}
    # As ``NewItem.digest`` reads it from the payload: the amount in its one notation.
    stated = str(parse_amount(raw["valor"]))
    return NewItem(
        ItemKind.PIX.value,
        pix_key(raw["endToEndId"]),
        text,
        refs=tuple(sorted(refs)),
        stated=stated,
    )


def pix_callback_items(document: Any) -> list[NewItem]:
    """The inbox items of a BCB Pix callback (``WebhookPixBody``) in any shape real
    deliveries use."""
    documented = _as_documented(document)
    return documented if documented is not None else read_tolerantly(document)


def read_tolerantly(document: Any) -> list[NewItem]:
    """``pix_callback_items`` through the tolerant models, whatever the body holds."""
    try:
        split = split_body(document, "pix", "Pix", PIX_FIELDS)
    except Unsplittable as exc:
        return [unsupported_item("PIX", document, exc.warning)]
    refusal = Refusal()
    items = [
        item
        for pix, raw, at in keyed(PixItem, split.candidates, "a Pix", refusal)
        for item in _pix_items(pix, raw, at, refusal)
    ]
    keyed_inside = any(_holds_a_keyed_refund(raw) for _, raw in refusal.rejected)
    return split.flag(
        refusal.keep_the_rest(items, "PIX", "a Pix or a refund", keyed_inside=keyed_inside)
    )


def _holds_a_keyed_refund(raw: Any) -> bool:
    """Whether a Pix refused for want of its own key lists a refund with the SPI's
    ``rtrId``: a business key of its own, so the delivery is kept (the Pix, refunds and
    all, as ``unsupported``; the refund is in the statement and in the poll of its Pix)
    rather than refused. An ``rtrId`` there but not as documented keeps it too: it finds
    the Pix all the same."""
    found = raw.get("devolucoes") if isinstance(raw, dict) else None
    for entry in found if isinstance(found, list) else [found]:
        if not isinstance(entry, dict):
            continue
        try:
            refund = Devolucao.model_validate(entry)
        except ValidationError:
            continue
        if refund.rtrId is not None or ref_text(entry.get("rtrId")) is not None:
            return True
    return False
