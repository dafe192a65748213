"""BCB Pix callback (``WebhookPixBody``): Pix received and their refunds (``devolucoes``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from reconcile.inbox import NewItem, dump_json
from reconcile.models import ItemKind
from reconcile.payloads import Amount, PayloadInvalid, Tolerant, validate_each

E2E_PATTERN = r"^[a-zA-Z0-9]{32}$"
TXID_PATTERN = r"^[a-zA-Z0-9]{1,35}$"


class Pagador(Tolerant):
    """Non-standard payer block some providers add to the BCB callback."""

    cpf: str | None = None
    cnpj: str | None = None
    nome: str | None = None


class HorarioDevolucao(Tolerant):
    solicitacao: str | None = None
    liquidacao: str | None = None


class Devolucao(Tolerant):
    """A refund of a received Pix. ``id`` is the merchant's; ``rtrId`` the SPI's."""

    id: str = Field(min_length=1, max_length=35)
    rtrId: str | None = Field(default=None, pattern=E2E_PATTERN)
    valor: Amount
    natureza: str | None = None
    horario: HorarioDevolucao | None = None
    status: str = Field(min_length=1, max_length=32)
    motivo: str | None = None


class PixItem(Tolerant):
    """One Pix of a BCB ``WebhookPixBody`` (``pix[]``)."""

    endToEndId: str = Field(pattern=E2E_PATTERN, description="end-to-end id, 32 characters")
    txid: str | None = Field(default=None, pattern=TXID_PATTERN)
    valor: Amount = Field(description='amount, e.g. "110.00"; strings and numbers accepted')
    horario: str = Field(min_length=1, description="RFC 3339; kept raw when unreadable")
    chave: str | None = None
    infoPagador: str | None = None
    pagador: Pagador | None = None
    # An array in the spec, a single object in its own example and in real deliveries.
    devolucoes: list[Devolucao] | Devolucao | None = None
    # Kept as received, never judged: a shape we do not expect must not cost us the Pix.
    componentesValor: Any = Field(
        default=None,
        description="the parts of valor (original, multa, juros, abatimento, desconto...)",
    )

    def components_json(self) -> str | None:
        """``componentesValor`` as JSON text, ``None`` when absent."""
        return dump_json(self.componentesValor) if self.componentesValor is not None else None

    def refunds(self) -> list[Devolucao]:
        if self.devolucoes is None:
            return []
        if isinstance(self.devolucoes, Devolucao):
            return [self.devolucoes]
        return self.devolucoes


class PixCallback(Tolerant):
    """The standard body; non-standard shapes are accepted too (see ``split_pix_body``)."""

    pix: list[PixItem]


def pix_key(end_to_end_id: str) -> str:
    return f"pix:{end_to_end_id}"


def refund_key(end_to_end_id: str, refund: Devolucao) -> str:
    # A status change is a new fact; the same status repeated is a duplicate.
    if refund.rtrId:
        return f"refund:{refund.rtrId}:{refund.status}"
    return f"refund:{end_to_end_id}:{refund.id}:{refund.status}"


def split_pix_body(document: Any) -> list[tuple[str, Any]]:
    """Every shape real deliveries use (docs/design.md §4), as (JSON pointer, would-be Pix)."""
    if isinstance(document, list):
        return [(f"/{i}", item) for i, item in enumerate(document)]
    if isinstance(document, dict):
        if "pix" in document:
            inner = document["pix"]
            if isinstance(inner, list):
                return [(f"/pix/{i}", item) for i, item in enumerate(inner)]
            if isinstance(inner, dict):
                return [("/pix", inner)]
            raise PayloadInvalid("'pix' must be an array of Pix objects or one Pix object")
        return [("", document)]
    raise PayloadInvalid(
        'body must be {"pix": [...]}, {"pix": {...}}, a Pix object or an array of Pix objects'
    )


def pix_items(pix: PixItem, raw: dict[str, Any]) -> list[NewItem]:
    """One item for the Pix and one per refund status. Callbacks (and polls) repeat earlier
    refunds, which then count as duplicates."""
    items = [NewItem(kind=ItemKind.PIX.value, key=pix_key(pix.endToEndId), payload=dump_json(raw))]
    raw_refunds = raw.get("devolucoes")
    raw_list = raw_refunds if isinstance(raw_refunds, list) else [raw_refunds]
    for refund, raw_refund in zip(pix.refunds(), raw_list, strict=False):
        payload = {"endToEndId": pix.endToEndId, "devolucao": raw_refund}
        items.append(
            NewItem(
                kind=ItemKind.PIX_REFUND.value,
                key=refund_key(pix.endToEndId, refund),
                payload=dump_json(payload),
            )
        )
    return items


def pix_callback_items(document: Any) -> list[NewItem]:
    return [
        item
        for pix, raw in validate_each(PixItem, split_pix_body(document), "Pix")
        for item in pix_items(pix, raw)
    ]
