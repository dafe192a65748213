"""One business day of Pix traffic for the nightly benchmark, generated inside PostgreSQL.

Every row is produced by ``INSERT … SELECT generate_series(…)``: a million ORM objects
built in Python would measure the generator, not the engine. Variety comes from
deterministic arithmetic on the row number (``i % 1000`` and friends) rather than a random
generator, so two runs of the same size load byte-identical days and their timings can be
compared.

The shape of the day (per 1,000 Pix received, roughly):

* 10 % carry no txid and, as the BCB rules say, are never notified: found by polling only;
  another 1 % lost their webhook; 5 % were delivered twice; a third were also polled.
* confirmation by the API: 1.35 % still ``pending``, 1 % ``unconfirmed_webhook`` (forged,
  never booked), 0.5 % ``amount_mismatch``; the rest ``confirmed``.
* the statement books every Pix the provider knows, at the Pix's amount (0.1 % at another
  amount), except the last ones of the day, which the statement poll has not reached yet;
  it also books Pix nobody notified or polled (0.5 %), refunds, payouts and MED debits.
  ``balance_after_cents`` is a running balance over all lines, so the drift is zero.
* a charge (``cob``) for every tenth Pix, paid exactly, under, over, twice, refunded in
  full or in part, plus unpaid charges (``cob`` that expired, long-lived ``cob`` and
  ``cobv`` still payable) and invoices (paid, open, overdue); refunds for 1 % of Pix in
  every refund status (1 % of them not yet confirmed by the API); payouts for 2 % of Pix
  in every payout status; MED cases open,
  acknowledged, closed, debited as agreed, debited at another amount or never debited,
  and debits without a case.
* business keys carry the day (``--history-days`` loads earlier days next to it).

Temporary tables (``bench_*``) hold the plan of the day so that the inbox row, the domain
row and the statement line of one movement agree; they vanish with the connection.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Connection, text

# Statements are assembled from this module's constants and helpers (never from input):
# f-strings keep the repeated SQL fragments in one place.
# ruff: noqa: S608

BUSINESS_TZ = ZoneInfo("America/Sao_Paulo")
OPENING_BALANCE_CENTS = 1_000_000_000  # R$ 10 million: payouts never overdraw the account
# ISPBs of large Brazilian banks and payment institutions.
PAYER_BANKS = ("00000000", "00360305", "60746948", "60701190", "90400888", "18236120", "00416968")
LAST_INSTANT = "CAST(:end AS timestamptz) - interval '1 millisecond'"


def iso(column: str) -> str:
    """RFC 3339 in UTC, as the provider writes timestamps in its JSON."""
    return f"""to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""


def money(column: str) -> str:
    """Centavos as the API's decimal string ("123.45")."""
    return f"to_char(({column}) / 100.0, 'FM9999999999990.00')"


def payer_bank(column: str) -> str:
    """The payer's bank (ISPB) in a received Pix's endToEndId: several, as in real
    traffic, so that key order is not arrival order."""
    banks = ", ".join(f"'{ispb}'" for ispb in PAYER_BANKS)
    return f"(ARRAY[{banks}])[1 + ({column}) % {len(PAYER_BANKS)}]"


def minute(column: str) -> str:
    """The yyyyMMddHHmm part of an endToEndId / rtrId."""
    return f"to_char({column} AT TIME ZONE 'UTC', 'YYYYMMDDHH24MI')"


@dataclass(frozen=True)
class Plan:
    """Sizes of the generated day; everything else derives from ``events``."""

    events: int
    lines: int
    charges: int
    day: date

    @property
    def start(self) -> datetime:
        return datetime.combine(self.day, dtime.min, tzinfo=BUSINESS_TZ).astimezone(UTC)

    @property
    def end(self) -> datetime:
        return datetime.combine(
            self.day + timedelta(days=1), dtime.min, tzinfo=BUSINESS_TZ
        ).astimezone(UTC)

    @property
    def payouts(self) -> int:
        # At least 20, so that every payout status (k % 100 < 10) shows up at tiny sizes.
        return max(20, self.events // 50)

    @property
    def infractions(self) -> int:
        # At least 20, so that every case outcome (k % 20) shows up at tiny sizes.
        return max(20, self.events // 10_000)

    @property
    def invoices(self) -> int:
        return max(6, self.charges // 100)

    @property
    def unpaid_charges(self) -> int:
        return min(self.charges, max(4, self.charges // 11))

    @property
    def paid_charges(self) -> int:
        # Charge c is paid by Pix i = 10c - 9, so there are at most ceil(events / 10).
        return min(self.charges - self.unpaid_charges, (self.events + 9) // 10)

    @property
    def statement_only_refunds(self) -> int:
        return max(1, self.events // 10_000)

    @property
    def statement_only_payouts(self) -> int:
        return max(1, self.payouts // 200)

    @property
    def caseless_debits(self) -> int:
        return max(1, self.infractions // 10)


@dataclass
class IdBases:
    """Where the next day's explicit ids start (days are loaded one after another)."""

    inbox: int = 0
    pix: int = 0
    line: int = 0


@dataclass
class Generated:
    rows: dict[str, int] = field(default_factory=dict)
    steps: dict[str, float] = field(default_factory=dict)
    booked_pix: int = 0
    unbooked_pix: int = 0
    statement_only_credits: int = 0

    def add(self, table: str, count: int) -> None:
        self.rows[table] = self.rows.get(table, 0) + count


PIX_PLAN = """
CREATE TEMP TABLE bench_pix AS
SELECT c.*,
       CASE c.confirmation WHEN 'confirmed' THEN c.amount
            WHEN 'amount_mismatch' THEN c.amount + 100 END AS confirmed_amount,
       CASE WHEN c.poll_only THEN 0 WHEN c.i % 20 = 7 THEN 2 ELSE 1 END AS webhook_count,
       CASE WHEN c.poll_only OR (c.i % 3 = 0 AND c.confirmation = 'confirmed') THEN 1
            ELSE 0 END AS poll_count,
       -- What the provider booked: forged Pix never; half of those it has not confirmed yet.
       (c.confirmation <> 'unconfirmed_webhook'
        AND NOT (c.confirmation = 'pending' AND c.i % 2 = 1)) AS eligible,
       CASE WHEN c.confirmation = 'amount_mismatch' THEN c.amount + 100
            WHEN c.m = 999 THEN c.amount - 1 ELSE c.amount END AS stmt_amount
FROM (
    SELECT b.*,
           'E' || {ispb} || {minute} || lpad(b.i::text, 11, '0') AS e2e,
           CASE WHEN b.i % 10 = 0 THEN NULL
                -- Pix 1000k+502 pays the same charge as the Pix before it: paid twice.
                WHEN b.m = 502 THEN 'b' || :tag || lpad((b.i - 1)::text, 23, '0')
                ELSE 'b' || :tag || lpad(b.i::text, 23, '0') END AS txid,
           -- Polled Pix are confirmed on arrival: the API listed them.
           CASE WHEN b.poll_only THEN 'confirmed'
                WHEN b.m < 15 THEN 'pending'
                WHEN b.m < 25 THEN 'unconfirmed_webhook'
                WHEN b.m < 30 THEN 'amount_mismatch'
                ELSE 'confirmed' END AS confirmation
    FROM (
        SELECT i, i % 1000 AS m,
               CAST(:start AS timestamptz) + make_interval(secs => (i - 1) * :step) AS horario,
               500 + (i::bigint * 2654435761) % 99991 AS amount,
               (i % 10 = 0 OR i % 1000 BETWEEN 30 AND 39) AS poll_only
        FROM generate_series(1, :events) AS i
    ) AS b
) AS c
""".format(minute=minute("b.horario"), ispb=payer_bank("b.i"))

REFUND_PLAN = f"""
CREATE TEMP TABLE bench_refund AS
SELECT x.*, 'D18236120' || {minute("x.at")} || lpad(x.k::text, 11, '0') AS rtr
FROM (
    SELECT row_number() OVER (ORDER BY r.i) AS k, r.i, r.e2e, r.amount, r.status,
           r.booked, r.delta,
           least(r.horario + interval '30 seconds', {LAST_INSTANT}) AS at
    FROM (
        -- Charges 40k+5 are refunded in full, 40k+25 by half.
        SELECT p.i, p.e2e, p.horario,
               CASE WHEN (p.i + 9) / 10 % 40 = 5 THEN p.amount ELSE p.amount / 2 END AS amount,
               'DEVOLVIDO' AS status, true AS booked, 0 AS delta
        FROM bench_pix AS p
        WHERE p.i % 10 = 1 AND (p.i + 9) / 10 <= :paid_charges
          AND (p.i + 9) / 10 % 40 IN (5, 25)
        UNION ALL
        -- Every refund status, and the statement disagreeing now and then.
        SELECT p.i, p.e2e, p.horario, p.amount / (1 + p.i / 200 % 3),
               CASE p.i / 200 % 20 WHEN 0 THEN 'EM_PROCESSAMENTO' WHEN 1 THEN 'NAO_REALIZADO'
                    WHEN 2 THEN 'NAO_REALIZADO' ELSE 'DEVOLVIDO' END,
               p.i / 200 % 20 NOT IN (0, 1, 3),
               CASE WHEN p.i / 200 % 20 = 4 THEN 10 ELSE 0 END
        FROM bench_pix AS p
        WHERE p.i % 200 = 77
    ) AS r
) AS x
"""

CHARGE_PLAN = """
CREATE TEMP TABLE bench_charge AS
SELECT row_number() OVER (ORDER BY ch.ref) AS n, ch.*
FROM (
    SELECT 'cob' AS kind, p.txid AS ref, p.txid,
           p.amount + CASE (p.i + 9) / 10 % 50 WHEN 3 THEN 1000 WHEN 4 THEN -100 ELSE 0 END
               AS amount,
           CASE WHEN p.confirmation = 'confirmed' THEN 'CONCLUIDA' ELSE 'ATIVA' END AS status,
           greatest(CAST(:start AS timestamptz), p.horario - interval '5 minutes') AS created,
           greatest(CAST(:start AS timestamptz), p.horario - interval '5 minutes')
               + interval '1 hour' AS expires_at,
           CAST(NULL AS date) AS due_date, CAST(NULL AS date) AS payable_until
    FROM bench_pix AS p
    WHERE p.i % 10 = 1 AND (p.i + 9) / 10 <= :paid_charges
    UNION ALL
    -- Never paid: half a cob that expired after an hour, a quarter a cob valid for a
    -- week, a quarter a cobv due today and payable for five more days.
    SELECT CASE WHEN u % 4 = 1 THEN 'cobv' ELSE 'cob' END,
           'u' || :tag || lpad(u::text, 23, '0'), 'u' || :tag || lpad(u::text, 23, '0'),
           1000 + u % 5000, 'ATIVA',
           CAST(:start AS timestamptz) + make_interval(secs => (u - 0.5) * :unpaid_step),
           CASE WHEN u % 4 = 1 THEN NULL
                ELSE CAST(:start AS timestamptz) + make_interval(secs => (u - 0.5) * :unpaid_step)
                     + CASE WHEN u % 4 = 3 THEN interval '7 days' ELSE interval '1 hour' END
           END,
           CASE WHEN u % 4 = 1 THEN CAST(:day AS date) END,
           CASE WHEN u % 4 = 1 THEN CAST(:day AS date) + 5 END
    FROM generate_series(1, :unpaid_charges) AS u
    UNION ALL
    -- Invoices carry no txid: the provider's status is the verdict.
    SELECT 'invoice', 'INV' || :tag || lpad(v::text, 8, '0'), NULL, 2000 + v % 10000,
           CASE v % 3 WHEN 0 THEN 'PAID' WHEN 1 THEN 'OPEN' ELSE 'OVERDUE' END,
           CAST(:start AS timestamptz) - interval '10 days', NULL, CAST(:day AS date), NULL
    FROM generate_series(1, :invoices) AS v
) AS ch
"""

PAYOUT_PLAN = f"""
CREATE TEMP TABLE bench_payout AS
SELECT y.*,
       CASE WHEN y.q = 7 THEN y.amount + 50 WHEN y.confirmation = 'confirmed' THEN y.amount
       END AS confirmed_amount,
       -- Booked: settled and refunded payouts (not the forged one, not the late one), and
       -- one rejected payout the statement debited anyway.
       (y.q IN (4, 5) OR (y.q >= 7 AND y.q <> 8)) AS booked,
       y.amount + CASE WHEN y.q IN (7, 9) THEN 50 ELSE 0 END AS stmt_amount
FROM (
    SELECT x.*,
           'E18236120' || {minute("x.at")} || 'P' || lpad(x.k::text, 10, '0') AS e2e,
           CASE WHEN x.q < 2 THEN 'PROCESSING' WHEN x.q < 4 OR x.q = 5 THEN 'REJECTED'
                WHEN x.q = 4 THEN 'REFUNDED' ELSE 'LIQUIDATED' END AS status,
           CASE x.q WHEN 6 THEN 'unconfirmed_webhook' WHEN 7 THEN 'amount_mismatch'
                ELSE 'confirmed' END AS confirmation
    FROM (
        SELECT k, k % 100 AS q,
               'payout-' || :tag || '-' || lpad(k::text, 10, '0') AS key,
               'TRF' || :tag || lpad(k::text, 10, '0') AS ref,
               1000 + (k::bigint * 2246822519) % 999001 AS amount,
               CAST(:start AS timestamptz) + make_interval(secs => (k - 0.5) * :payout_step) AS at
        FROM generate_series(1, :payouts) AS k
    ) AS x
) AS y
"""

# TRANSFER notifications of every payout; a CASHOUT notification of an earlier state for
# one in ten, so the matcher's "latest fact wins" ranking has work to do.
MOVEMENT_PLAN = """
CREATE TEMP TABLE bench_movement AS
SELECT row_number() OVER (ORDER BY m.k, m.type DESC) AS n, m.*
FROM (
    SELECT y.k, 'TRANSFER' AS type, y.key, y.ref, y.e2e, y.amount, y.status, y.confirmation,
           y.confirmed_amount, y.at,
           CASE y.status WHEN 'PROCESSING' THEN 1000 WHEN 'REFUNDED' THEN 4000 ELSE 2000 END
               AS rank
    FROM bench_payout AS y
    UNION ALL
    SELECT y.k, 'CASHOUT', y.key, y.ref, y.e2e, y.amount, 'PROCESSING', 'confirmed', y.amount,
           y.at, 1000
    FROM bench_payout AS y
    WHERE y.k % 10 = 3
) AS m
"""

INFRACTION_PLAN = """
CREATE TEMP TABLE bench_infraction AS
SELECT k, 'MED-' || :tag || '-' || lpad(k::text, 8, '0') AS infraction_id,
       CASE k % 5 WHEN 0 THEN 'OPEN' WHEN 1 THEN 'ACKNOWLEDGED' WHEN 2 THEN 'AGREED'
            WHEN 3 THEN 'CLOSED' ELSE 'DISAGREED' END AS status,
       CASE k % 5 WHEN 0 THEN 1 WHEN 1 THEN 2 WHEN 3 THEN 4 ELSE 3 END AS rank,
       5000 + k * 10 AS amount,
       CAST(:start AS timestamptz) + make_interval(secs => (k - 0.5) * :infraction_step) AS at,
       -- Agreed cases were debited; one in two of them never reached the statement, and
       -- one in four booked another amount.
       CASE WHEN k % 5 = 2 THEN 5000 + k * 10 END AS debited_cents,
       k % 10 = 2 AS debited,
       CASE WHEN k % 20 = 12 THEN 100 ELSE 0 END AS delta
FROM generate_series(1, :infractions) AS k
"""

LINE_PLAN = f"""
CREATE TEMP TABLE bench_line AS
SELECT row_number() OVER w AS seq,
       CAST(:opening AS bigint)
           + sum(CASE WHEN l.type = 'CREDIT' THEN l.amount ELSE -l.amount END) OVER w AS balance,
       l.*
FROM (
    -- Pix credits, up to the statement poll's reach.
    SELECT 'PIX_IN-' || p.e2e AS entry_id, 'CREDIT' AS type, 'PIX_RECEIVED' AS category,
           p.stmt_amount AS amount, p.e2e AS e2e, CAST(NULL AS text) AS orig,
           CAST(NULL AS text) AS idem, p.txid AS txid, CAST(NULL AS text) AS infraction_id,
           least(p.horario + interval '2 seconds', {LAST_INSTANT}) AS booked_at
    FROM (
        SELECT q.*, row_number() OVER (ORDER BY q.i) AS rn FROM bench_pix AS q WHERE q.eligible
    ) AS p
    WHERE p.rn <= :booked_pix
    UNION ALL
    -- Pix booked but never notified nor polled.
    SELECT 'PIX_IN-' || s.e2e, 'CREDIT', 'PIX_RECEIVED', 1000 + s.j % 10000, s.e2e, NULL, NULL,
           NULL, NULL, s.at
    FROM (
        SELECT a.j, a.at, 'E99999999' || {minute("a.at")} || lpad(a.j::text, 11, '0') AS e2e
        FROM (
            SELECT j, CAST(:start AS timestamptz) + make_interval(secs => (j - 0.5) * :only_step)
                       AS at
            FROM generate_series(1, :only_credits) AS j
        ) AS a
    ) AS s
    UNION ALL
    SELECT 'PIX_RETURN-' || r.rtr, 'DEBIT', 'PIX_REFUND_SENT', r.amount + r.delta, r.rtr, r.e2e,
           NULL, NULL, NULL, r.at
    FROM bench_refund AS r
    WHERE r.booked
    UNION ALL
    -- Refunds booked but never notified.
    SELECT 'PIX_RETURN-' || s.rtr, 'DEBIT', 'PIX_REFUND_SENT', 700 + s.j, s.rtr, NULL, NULL,
           NULL, NULL, s.at
    FROM (
        SELECT a.j, a.at, 'D99999999' || {minute("a.at")} || lpad(a.j::text, 11, '0') AS rtr
        FROM (
            SELECT j, CAST(:start AS timestamptz) + make_interval(secs => (j - 0.5) * :sor_step)
                       AS at
            FROM generate_series(1, :only_refunds) AS j
        ) AS a
    ) AS s
    UNION ALL
    SELECT 'PAYOUT-' || y.e2e, 'DEBIT', 'PIX_PAYMENT', y.stmt_amount, y.e2e, NULL, y.key, NULL,
           NULL, least(y.at + interval '1 second', {LAST_INSTANT})
    FROM bench_payout AS y
    WHERE y.booked
    UNION ALL
    -- The money of refunded payouts coming back.
    SELECT 'PAYOUT_RETURN-' || y.e2e, 'CREDIT', 'PIX_PAYMENT_REFUND', y.amount,
           'D18236120' || {minute("y.at")} || 'R' || lpad(y.k::text, 10, '0'), y.e2e, y.key,
           NULL, NULL, least(y.at + interval '1 minute', {LAST_INSTANT})
    FROM bench_payout AS y
    WHERE y.status = 'REFUNDED'
    UNION ALL
    -- Payouts debited that nobody notified.
    SELECT 'PAYOUT-unknown-' || :tag || '-' || j, 'DEBIT', 'PIX_PAYMENT', 2500 + j, NULL, NULL,
           'unknown-payout-' || :tag || '-' || lpad(j::text, 10, '0'), NULL, NULL,
           CAST(:start AS timestamptz) + make_interval(secs => (j - 0.5) * :sop_step)
    FROM generate_series(1, :only_payouts) AS j
    UNION ALL
    SELECT 'MED-' || f.infraction_id, 'DEBIT', 'INFRACTION_DEBIT', f.amount + f.delta, NULL,
           NULL, NULL, NULL, f.infraction_id, least(f.at + interval '1 minute', {LAST_INSTANT})
    FROM bench_infraction AS f
    WHERE f.debited
    UNION ALL
    SELECT 'MED-nocase-' || :tag || '-' || j, 'DEBIT', 'INFRACTION_DEBIT', 9000 + j, NULL,
           NULL, NULL, NULL, 'MED-nocase-' || :tag || '-' || lpad(j::text, 8, '0'),
           CAST(:start AS timestamptz) + make_interval(secs => (j - 0.5) * :cd_step)
    FROM generate_series(1, :caseless_debits) AS j
) AS l
WINDOW w AS (ORDER BY l.booked_at, l.entry_id ROWS UNBOUNDED PRECEDING)
"""

INBOX_COLUMNS = """(id, source, kind, key, payload, status, received_at, webhook_at, poll_at,
    last_seen_at, webhook_count, poll_count, dispatched_at, processed_at, attempts)"""

INSERT_PIX_INBOX = f"""
INSERT INTO inbox_item {INBOX_COLUMNS}
SELECT :base + p.i, CASE WHEN p.poll_only THEN 'poll' ELSE 'webhook' END, 'pix', 'pix:' || p.e2e,
       json_build_object(
           'endToEndId', p.e2e, 'txid', p.txid, 'valor', {money("p.amount")},
           'horario', {iso("p.horario")}, 'chave', 'pagamentos@loja.example.com',
           'infoPagador', 'pedido ' || p.i,
           'pagador', json_build_object('cpf', '12345678909', 'nome', 'Cliente ' || p.i)
       )::text,
       'processed', p.horario + interval '1 second',
       CASE WHEN p.webhook_count > 0 THEN p.horario + interval '1 second' END,
       CASE WHEN p.poll_count > 0 THEN p.horario + interval '1 minute' END,
       p.horario + interval '1 minute', p.webhook_count, p.poll_count,
       p.horario + interval '1 second', p.horario + interval '2 seconds', 1
FROM bench_pix AS p
"""

INSERT_PIX = f"""
INSERT INTO pix_received (id, end_to_end_id, txid, amount_cents, horario, horario_raw, chave,
    info_pagador, payer_document, payer_name, inbox_item_id, created_at, confirmation,
    confirmed_amount_cents, confirmed_at, next_check_at, check_attempts)
SELECT :pix_base + p.i, p.e2e, p.txid, p.amount, p.horario, {iso("p.horario")},
       'pagamentos@loja.example.com', 'pedido ' || p.i, '12345678909', 'Cliente ' || p.i,
       :base + p.i,
       p.horario + interval '2 seconds', p.confirmation, p.confirmed_amount,
       CASE WHEN p.confirmed_amount IS NOT NULL THEN p.horario + interval '3 seconds' END,
       CASE WHEN p.confirmation = 'pending' THEN p.horario + interval '5 minutes' END,
       CASE WHEN p.poll_only THEN 0 ELSE 1 END
FROM bench_pix AS p
"""

INSERT_REFUND_INBOX = f"""
INSERT INTO inbox_item {INBOX_COLUMNS}
SELECT :base + r.k, 'webhook', 'pix_refund', 'refund:' || r.rtr || ':' || r.status,
       json_build_object(
           'endToEndId', r.e2e,
           'devolucoes', json_build_array(json_build_object(
               'id', 'dev' || lpad(r.k::text, 10, '0'), 'rtrId', r.rtr,
               'valor', {money("r.amount")}, 'natureza', 'ORIGINAL', 'status', r.status,
               'horario', json_build_object('solicitacao', {iso("r.at")}, 'liquidacao',
                   CASE WHEN r.status = 'DEVOLVIDO' THEN {iso("r.at")} END)))
       )::text,
       'processed', r.at, r.at, NULL, r.at, 1, 0, r.at, r.at, 1
FROM bench_refund AS r
"""

# Refunds are looked up as Pix are: the API states each as notified, but for 1 % the
# look-up has not answered (``pending``: a break once their grace period is over).
INSERT_REFUND = """
INSERT INTO pix_refund (end_to_end_id, refund_id, rtr_id, amount_cents, natureza, status,
    requested_at, settled_at, rank, inbox_item_id, updated_at, confirmation,
    confirmed_amount_cents, confirmed_status, confirmed_at)
SELECT r.e2e, 'dev' || lpad(r.k::text, 10, '0'), r.rtr, r.amount, 'ORIGINAL', r.status, r.at,
       CASE WHEN r.status = 'DEVOLVIDO' THEN r.at END,
       CASE WHEN r.status = 'EM_PROCESSAMENTO' THEN 1 ELSE 2 END, :base + r.k, r.at,
       CASE WHEN r.k % 100 = 7 THEN 'pending' ELSE 'confirmed' END,
       CASE WHEN r.k % 100 <> 7 THEN r.amount END,
       CASE WHEN r.k % 100 <> 7 THEN r.status END,
       CASE WHEN r.k % 100 <> 7 THEN r.at + interval '10 seconds' END
FROM bench_refund AS r
"""

INSERT_CHARGE_INBOX = f"""
INSERT INTO inbox_item {INBOX_COLUMNS}
SELECT :base + c.n, 'poll', 'charge',
       -- '0' apart: a colon before a digit would read as a bind parameter.
       'charge:' || c.kind || ':' || c.ref || ':' || c.status || ':' || '0',
       json_build_object(
           'kind', c.kind,
           'data', json_build_object(
               'txid', c.txid, 'revisao', 0, 'status', c.status,
               'calendario', json_build_object('criacao', {iso("c.created")},
                   'expiracao', CAST(extract(epoch FROM c.expires_at - c.created) AS bigint),
                   'dataDeVencimento', c.due_date),
               'valor', json_build_object('original', {money("c.amount")}),
               'chave', 'pagamentos@loja.example.com')
       )::text,
       'processed', c.created, NULL, c.created, c.created, 0, 1, c.created, c.created, 1
FROM bench_charge AS c
"""

INSERT_CHARGE = """
INSERT INTO expected_payment (rank, inbox_item_id, updated_at, kind, ref, amount_cents, status,
    txid, created_at_provider, expires_at, due_date, payable_until)
SELECT CASE WHEN c.status = 'ATIVA' THEN 2 ELSE 5 END, :base + c.n, c.created, c.kind, c.ref,
       c.amount, c.status, c.txid, c.created, c.expires_at, c.due_date, c.payable_until
FROM bench_charge AS c
"""

INSERT_MOVEMENT_INBOX = f"""
INSERT INTO inbox_item {INBOX_COLUMNS}
SELECT :base + m.n, 'webhook', 'accounts.' || lower(m.type),
       'accounts:' || m.type || ':' || m.ref || ':' || m.status,
       json_build_object(
           'type', m.type,
           'data', json_build_object(
               'id', m.ref, 'idempotencyKey', m.key, 'endToEndId', m.e2e, 'status', m.status,
               'amount', {money("m.amount")}, 'createdAt', {iso("m.at")},
               'pixKey', 'fornecedor@example.com')
       )::text,
       'processed', m.at, m.at, NULL, m.at, 1, 0, m.at, m.at, 1
FROM bench_movement AS m
"""

# The returns of the refunded payouts, one each, as the worker keeps them (the statement
# credits them a minute after the payout, with the same endToEndId).
INSERT_PAYOUT_RETURN = f"""
INSERT INTO payout_return (rank, inbox_item_id, updated_at, payout_key, ref, end_to_end_id,
    status, amount_cents, returned_at)
SELECT 2, :base + m.n, m.at, m.key,
       'D18236120' || {minute("m.at")} || 'R' || lpad(m.k::text, 10, '0'),
       'D18236120' || {minute("m.at")} || 'R' || lpad(m.k::text, 10, '0'),
       'LIQUIDATED', m.amount, least(m.at + interval '30 seconds', {LAST_INSTANT})
FROM bench_movement AS m
WHERE m.type = 'TRANSFER' AND m.status = 'REFUNDED'
"""

INSERT_MOVEMENT = """
INSERT INTO account_movement (type, reference, movement_id, idempotency_key, end_to_end_id,
    status, error_code, amount_cents, refunded_cents, credit_debit_type, provider_created_at,
    rank, inbox_item_id, updated_at, confirmation, confirmed_amount_cents, confirmed_at,
    check_attempts)
SELECT m.type, m.ref, m.ref, m.key, m.e2e, m.status,
       CASE WHEN m.status = 'REJECTED' THEN 'AC03' END, m.amount,
       CASE WHEN m.status = 'REFUNDED' THEN m.amount ELSE 0 END, 'DEBIT', m.at, m.rank,
       :base + m.n, m.at + interval '10 seconds', m.confirmation, m.confirmed_amount,
       m.at + interval '20 seconds', 1
FROM bench_movement AS m
"""

INSERT_INFRACTION_INBOX = f"""
INSERT INTO inbox_item {INBOX_COLUMNS}
SELECT :base + f.k, 'webhook', 'accounts.infraction',
       'accounts:INFRACTION:' || f.infraction_id || ':' || f.status,
       json_build_object('type', 'INFRACTION', 'data', json_build_object(
           'id', f.infraction_id, 'status', f.status, 'amount', {money("f.amount")},
           'createdAt', {iso("f.at")}))::text,
       'processed', f.at, f.at, NULL, f.at, 1, 0, f.at, f.at, 1
FROM bench_infraction AS f
"""

INSERT_INFRACTION = """
INSERT INTO infraction (infraction_id, status, amount_cents, debited_cents, provider_updated_at,
    rank, inbox_item_id, updated_at, confirmation, confirmed_debited_cents)
SELECT f.infraction_id, f.status, f.amount, f.debited_cents, f.at, f.rank, :base + f.k,
       f.at + interval '1 minute',
       -- A closed case as the confirm job leaves it: the API stated its closing as notified.
       CASE WHEN f.rank >= 3 THEN 'confirmed' END,
       CASE WHEN f.rank >= 3 THEN f.debited_cents END
FROM bench_infraction AS f
"""

INSERT_LINE_INBOX = f"""
INSERT INTO inbox_item {INBOX_COLUMNS}
SELECT :base + l.seq, 'poll', 'accounts.statement', 'statement:' || l.entry_id,
       json_build_object(
           'id', l.entry_id, 'type', l.type, 'category', l.category,
           'amount', {money("l.amount")}, 'balanceAfter', {money("l.balance")},
           'endToEndId', l.e2e, 'originalEndToEndId', l.orig, 'idempotencyKey', l.idem,
           'txId', l.txid, 'infractionId', l.infraction_id, 'createdAt', {iso("l.booked_at")}
       )::text,
       'processed', l.booked_at + interval '5 minutes', NULL, l.booked_at + interval '5 minutes',
       l.booked_at + interval '5 minutes', 0, 1, l.booked_at + interval '5 minutes',
       l.booked_at + interval '5 minutes', 1
FROM bench_line AS l
"""

# Ids in statement order, so that "ORDER BY booked_at, id" walks the running balance.
INSERT_LINE = """
INSERT INTO statement_entry (id, entry_id, type, category, amount_cents, balance_after_cents,
    end_to_end_id, original_end_to_end_id, idempotency_key, txid, infraction_id, booked_at,
    inbox_item_id)
SELECT :line_base + l.seq, l.entry_id, l.type, l.category, l.amount, l.balance, l.e2e, l.orig,
       l.idem, l.txid, l.infraction_id, l.booked_at, :base + l.seq
FROM bench_line AS l
ORDER BY l.seq
"""

BALANCES = f"""
CREATE TEMP TABLE bench_balance AS
SELECT row_number() OVER (ORDER BY b.taken_at) AS n, b.*
FROM (
    SELECT CAST(:start AS timestamptz) AS taken_at, CAST(:opening AS bigint) AS available
    UNION ALL
    SELECT CAST(:end AS timestamptz),
           coalesce((SELECT l.balance FROM bench_line AS l ORDER BY l.seq DESC LIMIT 1),
                    CAST(:opening AS bigint))
    WHERE :closing
) AS b;
INSERT INTO inbox_item {INBOX_COLUMNS}
SELECT :base + b.n, 'poll', 'accounts.balance', 'balance:' || {iso("b.taken_at")},
       json_build_object('available', {money("b.available")},
                         'takenAt', {iso("b.taken_at")})::text,
       'processed', b.taken_at, NULL, b.taken_at, b.taken_at, 0, 1, b.taken_at, b.taken_at, 1
FROM bench_balance AS b;
INSERT INTO balance_snapshot (taken_at, available_cents, inbox_item_id)
SELECT b.taken_at, b.available, :base + b.n FROM bench_balance AS b
"""

SEQUENCES = ("inbox_item", "pix_received", "statement_entry")
TEMP_TABLES = (
    "bench_pix",
    "bench_refund",
    "bench_charge",
    "bench_payout",
    "bench_movement",
    "bench_infraction",
    "bench_line",
    "bench_balance",
)


def _scalar(conn: Connection, sql: str) -> int:
    value = conn.execute(text(sql)).scalar_one()
    return int(value or 0)


def loader_session(conn: Connection) -> None:
    """Settings of the loading session only, never of the measured run: no waiting for
    each commit's flush, and room for the plan tables in memory (temp_buffers can only be
    set before the session's first temporary table)."""
    conn.execute(text("SET synchronous_commit = off"))
    conn.execute(text("SET temp_buffers = '512MB'"))
    conn.execute(text("SET work_mem = '256MB'"))
    conn.commit()


def generate(
    conn: Connection,
    plan: Plan,
    log: Callable[[str], object] = print,
    *,
    bases: IdBases | None = None,
    measured: bool = True,
) -> Generated:
    """Load one day into the migrated database behind ``conn`` (commits per step). Earlier
    days are loaded with ``measured=False`` and the ``bases`` the previous day left."""
    bases = bases or IdBases()
    out = Generated()
    day_seconds = (plan.end - plan.start).total_seconds()
    params: dict[str, Any] = {
        "start": plan.start,
        "end": plan.end,
        "day": plan.day,
        "events": plan.events,
        "step": day_seconds / plan.events,
        "paid_charges": plan.paid_charges,
        "unpaid_charges": plan.unpaid_charges,
        "unpaid_step": day_seconds / plan.unpaid_charges,
        "invoices": plan.invoices,
        "payouts": plan.payouts,
        "payout_step": day_seconds / plan.payouts,
        "infractions": plan.infractions,
        "infraction_step": day_seconds / plan.infractions,
        "only_refunds": plan.statement_only_refunds,
        "sor_step": day_seconds / plan.statement_only_refunds,
        "only_payouts": plan.statement_only_payouts,
        "sop_step": day_seconds / plan.statement_only_payouts,
        "caseless_debits": plan.caseless_debits,
        "cd_step": day_seconds / plan.caseless_debits,
        "opening": OPENING_BALANCE_CENTS,
        # Business keys carry the day, so that days of history never share one.
        "tag": plan.day.strftime("%y%m%d"),
        # The closing reading of a day is the next day's opening: only the last day has one.
        "closing": measured,
    }

    def step(name: str, sql: str, table: str | None = None, **extra: Any) -> int:
        began = time.perf_counter()
        count = 0
        for statement in sql.split(";\n"):
            result = conn.execute(text(statement), {**params, **extra})
            count = max(result.rowcount, count)
        conn.commit()
        out.steps[name] = out.steps.get(name, 0.0) + time.perf_counter() - began
        if table is not None:
            out.add(table, count)
        if measured:
            log(f"  {name:<34} {time.perf_counter() - began:7.1f} s")
        return count

    step("plan: Pix received", PIX_PLAN)
    step("plan: refunds", REFUND_PLAN)
    step("plan: charges", CHARGE_PLAN)
    step("plan: payouts", PAYOUT_PLAN)
    step("plan: payout notifications", MOVEMENT_PLAN)
    step("plan: infractions", INFRACTION_PLAN)

    # The statement holds exactly ``lines`` lines: whatever the other lines leave over is
    # Pix credits, booked in time order, so the last Pix of the day are "not in the
    # statement yet". At least 0.2 % of them stay unbooked so that status always shows;
    # if lines outnumber what the provider could book, the rest are Pix nobody notified.
    others = (
        _scalar(conn, "SELECT count(*) FROM bench_refund WHERE booked")
        + _scalar(conn, "SELECT count(*) FROM bench_payout WHERE booked")
        + _scalar(conn, "SELECT count(*) FROM bench_payout WHERE status = 'REFUNDED'")
        + _scalar(conn, "SELECT count(*) FROM bench_infraction WHERE debited")
        + plan.statement_only_refunds
        + plan.statement_only_payouts
        + plan.caseless_debits
    )
    eligible = _scalar(conn, "SELECT count(*) FROM bench_pix WHERE eligible")
    only_credits = max(1, plan.events // 200)
    booked = min(max(plan.lines - others - only_credits, 0), eligible - max(1, eligible // 500))
    only_credits = max(only_credits, plan.lines - others - booked)
    out.booked_pix, out.unbooked_pix = booked, eligible - booked
    out.statement_only_credits = only_credits
    step(
        "plan: statement lines",
        LINE_PLAN,
        booked_pix=booked,
        only_credits=only_credits,
        only_step=day_seconds / only_credits,
    )

    base = bases.inbox
    step("inbox_item: Pix", INSERT_PIX_INBOX, "inbox_item", base=base)
    base += step("pix_received", INSERT_PIX, "pix_received", base=base, pix_base=bases.pix)
    step("inbox_item: refunds", INSERT_REFUND_INBOX, "inbox_item", base=base)
    base += step("pix_refund", INSERT_REFUND, "pix_refund", base=base)
    step("inbox_item: charges", INSERT_CHARGE_INBOX, "inbox_item", base=base)
    base += step("expected_payment", INSERT_CHARGE, "expected_payment", base=base)
    step("inbox_item: payouts", INSERT_MOVEMENT_INBOX, "inbox_item", base=base)
    step("payout_return", INSERT_PAYOUT_RETURN, "payout_return", base=base)
    base += step("account_movement", INSERT_MOVEMENT, "account_movement", base=base)
    step("inbox_item: infractions", INSERT_INFRACTION_INBOX, "inbox_item", base=base)
    base += step("infraction", INSERT_INFRACTION, "infraction", base=base)
    step("inbox_item: statement lines", INSERT_LINE_INBOX, "inbox_item", base=base)
    lines = step("statement_entry", INSERT_LINE, "statement_entry", base=base, line_base=bases.line)
    base += lines
    count = step("balance readings", BALANCES, base=base)
    out.add("balance_snapshot", count)
    out.add("inbox_item", count)
    bases.inbox, bases.pix, bases.line = base + count, bases.pix + plan.events, bases.line + lines
    conn.execute(text(f"DROP TABLE {', '.join(TEMP_TABLES)}"))
    # Explicit ids above bypass the sequences; later inserts must not collide with them.
    for table in SEQUENCES:
        conn.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT coalesce(max(id), 1) FROM {table}))"
            )
        )
    conn.commit()
    return out
