"""The day's statement as an OFX bank statement (OFX 1.0.2, the SGML form Brazilian banks
and the accounting tools that import their files use), built with ``ofxtools``.

One ``STMTRS``: the account (``BANKACCTFROM``), the business day (``DTSTART``/``DTEND``,
São Paulo midnight to midnight, written with their ``[-3:BRT]`` offset so that an
importer reading only the date still gets the business day), one ``STMTTRN`` per line of
``reconcile.exports.statement`` (``CREDIT``, ``DEBIT`` or ``FEE``; ``FITID`` as that module
says) and ``LEDGERBAL``, the balance the day ends at. The lines are written as they are
read, between the head and the tail of the statement, so a long day never sits in memory.

The account: ``PIXRECON_ACCOUNTS_ACCOUNT_ID`` (the accounts API's ``x-account-id``; its
last 22 characters when longer, OFX's limit) as ``ACCTID``, else ``PIXRECON``; ``BANKID``
is ``0000``, since pixrecon does not know the provider's bank code — map the account once
in the importing tool."""

from __future__ import annotations

import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING

from reconcile.exports.statement import DayBalance, StatementLine
from reconcile.money import from_cents
from reconcile.timeutil import BUSINESS_TZ, as_utc, business_day_bounds, utcnow

if TYPE_CHECKING:
    from ofxtools.models import STMTTRN
    from ofxtools.models.ofx import OFX

PLACEHOLDER_BANK_ID = "0000"
PLACEHOLDER_ACCOUNT_ID = "PIXRECON"
ACCOUNT_ID_MAX = 22
MEMO_MAX = 255
NAME_MAX = 32
INDENT = "  "
_TRANLIST_END = "</BANKTRANLIST>"


@dataclass(frozen=True)
class OfxAccount:
    bank_id: str = PLACEHOLDER_BANK_ID
    account_id: str = PLACEHOLDER_ACCOUNT_ID

    @classmethod
    def from_settings(cls, account_id: str | None) -> OfxAccount:
        """The account as the accounts API names it, else the placeholder."""
        text = (account_id or "").strip()
        return cls(account_id=text[-ACCOUNT_ID_MAX:]) if text else cls()


def _brt(instant: datetime) -> datetime:
    """The instant in São Paulo time, its offset named the way OFX files from Brazilian
    banks name it (``[-3:BRT]``)."""
    local = as_utc(instant).astimezone(BUSINESS_TZ)
    offset = local.utcoffset() or timedelta(hours=-3)
    name = "BRT" if offset == timedelta(hours=-3) else "BRST"
    return local.replace(tzinfo=timezone(offset, name))


def _ascii(text: str, limit: int) -> str:
    """OFX 1.0.2 in US-ASCII: accents dropped, anything else replaced."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return plain[:limit]


def _memo(line: StatementLine) -> str:
    netted = line.key != f"stmt:{line.entry_id}"
    what = "fee netted from" if netted else line.category or ""
    parts = [what, line.entry_id]
    if line.txid:
        parts.append(f"txid {line.txid}")
    return _ascii(" ".join(part for part in parts if part), MEMO_MAX)


# ofxtools is imported where a file is written, not with this module: it would add 8 MiB
# to every receiver and worker process (the dashboard and the CLI import this module).


def transaction(line: StatementLine) -> STMTTRN:
    from ofxtools.models import STMTTRN

    return STMTTRN(
        trntype=line.trntype,
        dtposted=_brt(line.booked_at),
        trnamt=from_cents(line.amount_cents),
        fitid=line.fitid,
        name=_ascii(line.description, NAME_MAX),
        memo=_memo(line),
    )


def _statement(
    day: date, balance: DayBalance, account: OfxAccount, now: datetime
) -> tuple[OFX, int]:
    from ofxtools.models import (
        BANKACCTFROM,
        BANKMSGSRSV1,
        BANKTRANLIST,
        LEDGERBAL,
        SIGNONMSGSRSV1,
        SONRS,
        STATUS,
        STMTRS,
        STMTTRNRS,
    )
    from ofxtools.models.ofx import OFX

    start, end = business_day_bounds(day)
    ok = STATUS(code=0, severity="INFO")
    stmtrs = STMTRS(
        curdef="BRL",
        bankacctfrom=BANKACCTFROM(
            bankid=account.bank_id, acctid=account.account_id, accttype="CHECKING"
        ),
        banktranlist=BANKTRANLIST(dtstart=_brt(start), dtend=_brt(end)),
        ledgerbal=LEDGERBAL(balamt=from_cents(balance.closing_cents), dtasof=_brt(balance.as_of)),
    )
    signon = SIGNONMSGSRSV1(sonrs=SONRS(status=ok, dtserver=_brt(now), language="POR"))
    bank = BANKMSGSRSV1(STMTTRNRS(trnuid="1", status=ok, stmtrs=stmtrs))
    # The depth of a STMTTRN: OFX > BANKMSGSRSV1 > STMTTRNRS > STMTRS > BANKTRANLIST > here.
    return OFX(signonmsgsrsv1=signon, bankmsgsrsv1=bank), 5


def ofx_chunks(
    day: date,
    lines: Iterable[StatementLine],
    balance: DayBalance,
    account: OfxAccount | None = None,
    now: datetime | None = None,
) -> Iterator[str]:
    from ofxtools.header import OFXHeaderV1

    ofx, depth = _statement(day, balance, account or OfxAccount(), now or utcnow())
    tree = ofx.to_etree()
    ET.indent(tree, space=INDENT)
    body = ET.tostring(tree, encoding="unicode")
    cut = body.index(_TRANLIST_END)
    # The head ends with the indentation of the closing tag; each line re-adds its own.
    head = body[:cut].rstrip(" ")
    yield str(OFXHeaderV1(102, encoding="USASCII", charset="1252")) + head
    for line in lines:
        element = transaction(line).to_etree()
        ET.indent(element, space=INDENT, level=depth)
        yield INDENT * depth + ET.tostring(element, encoding="unicode") + "\n"
    yield INDENT * (depth - 1) + body[cut:] + "\n"
