"""The use case "fetch from the provider": a window of one or both API families, or a
whole business day. The worker's periodic jobs, ``pixrecon poll`` and ``pixrecon
reconcile`` all call these functions and none of them lists the steps again, so what a
scheduled poll fetches and what the nightly run fetches cannot drift apart.

A window of the QR code API: the Pix received, then the charges created in it. A window of
the accounts API: statement lines, infractions, payouts still in flight, invoices and the
balance. A business day: both families over the day plus margins, then every movement
and Pix Automático notification still waiting for its confirm-by-API look-up
(docs/design.md §1.5)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Protocol

from sqlalchemy import Engine, select
from sqlmodel import col

from reconcile.confirmation import (
    AutomaticoLookup,
    ConfirmReport,
    PaymentLookup,
    PixLookup,
    confirm_all,
)
from reconcile.db import session_scope
from reconcile.matching.judgement import Sources
from reconcile.models import ScheduledJob
from reconcile.polling.accounts import (
    AccountsSource,
    identify_disputed_pix,
    poll_balance,
    poll_infractions,
    poll_invoices,
    poll_pending_payouts,
    poll_statement,
    refresh_open_infractions,
)
from reconcile.polling.qrcode import (
    QrCodeSource,
    RecurrenceSource,
    ask_refunded_pix_of_statement,
    describe_recurrences,
    poll_charges,
    poll_received_pix,
    refresh_refunds_in_progress,
)
from reconcile.polling.store import OnNew, PollResult
from reconcile.schedule import leased, next_window
from reconcile.settings import Settings
from reconcile.timeutil import as_utc, business_day_bounds, utcnow

# Around a business day: Pix booked near midnight, statement lines that lag.
DAY_MARGIN = timedelta(hours=1)
# Charges created the day before can fall due or be paid on the day.
CHARGES_LOOKBACK = timedelta(days=1)


class Family(StrEnum):
    """The provider's two API families."""

    QRCODE = "qrcode"
    ACCOUNTS = "accounts"

    @property
    def poll_job(self) -> str:
        """The periodic job (and its lease and window in ``scheduled_job``)."""
        return f"poll_{self.value}"


class QrCodeClient(QrCodeSource, RecurrenceSource, PixLookup, AutomaticoLookup, Protocol):
    pass


class AccountsClient(AccountsSource, PaymentLookup, Protocol):
    pass


class Providers(Protocol):
    """What the fetch needs of the provider: either family may be unconfigured."""

    @property
    def qrcode(self) -> QrCodeClient | None: ...
    @property
    def accounts(self) -> AccountsClient | None: ...


@dataclass
class Fetched:
    """What one fetch found, per step (``received_pix``, ``cob``, ``statement``, …)."""

    start: datetime
    end: datetime
    steps: dict[str, PollResult] = field(default_factory=dict)
    confirmed: ConfirmReport | None = None

    def add(self, step: str, result: PollResult) -> None:
        self.steps[step] = result

    @property
    def seen(self) -> int:
        return sum(r.seen for r in self.steps.values())

    @property
    def new_ids(self) -> list[int]:
        return [i for r in self.steps.values() for i in r.new_ids]

    @property
    def invalid(self) -> int:
        return sum(r.invalid for r in self.steps.values())


Step = Callable[[str], object] | None


def configured(providers: Providers) -> tuple[Family, ...]:
    found = []
    if providers.qrcode is not None:
        found.append(Family.QRCODE)
    if providers.accounts is not None:
        found.append(Family.ACCOUNTS)
    return tuple(found)


def sources_of(
    providers: Providers,
    settings: Settings,
    fetched: Fetched | None = None,
    *,
    statement_polled: bool = False,
) -> Sources:
    """What the day's judgement can rely on: the configured API families, whatever failed
    while fetching, and whether the statement was read over the day — by ``fetched``, or
    (``statement_polled``) by the periodic polls up to the judging time. An item a listing
    sent that could not be read is not here: whichever read skipped it, every run of its
    day finds it stored (``reconcile/unread.py``)."""
    problems = []
    if fetched is not None and fetched.confirmed is not None and fetched.confirmed.interrupted:
        problems.append("the provider stopped answering while pending notifications were confirmed")
    return Sources(
        qrcode=providers.qrcode is not None,
        accounts=providers.accounts is not None,
        confirm_policy=settings.confirm_policy,
        problems=tuple(problems),
        statement_read=statement_polled or (fetched is not None and "statement" in fetched.steps),
    )


def _polled_until(
    engine: Engine, family: Family, now: datetime, interval: float
) -> datetime | None:
    """The end of the periodic poll's last window of ``family``, when that poll is current:
    its last window ended within two of its intervals."""
    with session_scope(engine) as session:
        end = session.execute(
            select(ScheduledJob.last_window_end).where(  # type: ignore[call-overload]
                col(ScheduledJob.name) == family.poll_job
            )
        ).scalar_one_or_none()
    if end is None or as_utc(end) < now - timedelta(seconds=2 * interval):
        return None
    return as_utc(end)


def statement_polled_until(engine: Engine, now: datetime, settings: Settings) -> bool:
    """Whether the periodic accounts poll has read the statement up to about ``now``. Its
    first window reaches back ``PIXRECON_POLL_INITIAL_LOOKBACK_SECONDS`` (a day by
    default) and each later one overlaps the one before, so a poll that is current has
    read the day so far."""
    interval = settings.poll_accounts_interval_seconds
    return _polled_until(engine, Family.ACCOUNTS, now, interval) is not None


def pix_listed_until(engine: Engine, now: datetime, settings: Settings) -> datetime | None:
    """Until when the periodic poll of ``GET /pix`` has listed, and so settled, what
    webhooks brought (``confirm_listed``), if that poll is current; else ``None``."""
    interval = settings.poll_qrcode_interval_seconds
    return _polled_until(engine, Family.QRCODE, now, interval)


def fetch_window(
    engine: Engine,
    providers: Providers,
    start: datetime,
    end: datetime,
    *,
    families: Collection[Family] = tuple(Family),
    charges_since: datetime | None = None,
    on_new: OnNew = None,
    on_step: Step = None,
) -> Fetched:
    """Poll [start, end] of each family asked for that is configured. ``on_new`` gets the
    ids of new inbox items after each page's commit; ``on_step`` names each step."""
    fetched = Fetched(start, end)

    def step(name: str) -> None:
        if on_step is not None:
            on_step(name)

    qrcode, accounts = providers.qrcode, providers.accounts
    if Family.QRCODE in families and qrcode is not None:
        step("Pix received")
        fetched.add("received_pix", poll_received_pix(qrcode, engine, start, end, on_new=on_new))
        step("charges")
        for kind, result in poll_charges(
            qrcode, engine, charges_since or start, end, on_new
        ).items():
            fetched.add(kind, result)
        fetched.add("recurrences", describe_recurrences(qrcode, engine))
        fetched.add("refunds_in_progress", refresh_refunds_in_progress(qrcode, engine, on_new))
    if Family.ACCOUNTS in families and accounts is not None:
        step("statement")
        fetched.add("statement", poll_statement(accounts, engine, start, end, on_new))
        step("infractions")
        fetched.add("infractions", poll_infractions(accounts, engine, start, end, on_new))
        fetched.add("open_infractions", refresh_open_infractions(accounts, engine, on_new))
        fetched.add("disputed_pix", identify_disputed_pix(accounts, engine))
        step("payouts in flight")
        fetched.add("payouts", poll_pending_payouts(accounts, engine, on_new))
        step("invoices")
        fetched.add("invoices", poll_invoices(accounts, engine, on_new))
        step("balance")
        # Stamped with the moment it was read: a balance asked for now is not the balance
        # at the end of a past window.
        fetched.add("balance", poll_balance(accounts, engine, utcnow(), on_new))
        if Family.QRCODE in families and qrcode is not None:
            fetched.add(
                "refunded_pix",
                ask_refunded_pix_of_statement(qrcode, engine, start, end, on_new),
            )
    return fetched


def fetch_day(
    engine: Engine,
    providers: Providers,
    day: date,
    settings: Settings,
    *,
    on_new: OnNew = None,
    on_step: Step = None,
) -> Fetched:
    """Everything the reconciliation of ``day`` needs from the provider, then the
    confirmation of every movement still pending."""
    start, end = business_day_bounds(day)
    # Lines the statement books within the date lag after the day belong to it: a lag
    # set longer than the margin must still be read, or their movements would be breaks.
    margin = max(DAY_MARGIN, timedelta(seconds=settings.reconcile_date_lag_seconds))
    fetched = fetch_window(
        engine,
        providers,
        start - margin,
        end + margin,
        charges_since=start - DAY_MARGIN - CHARGES_LOOKBACK,
        on_new=on_new,
        on_step=on_step,
    )
    if on_step is not None:
        on_step("confirming by API")
    fetched.confirmed = confirm_all(
        engine,
        providers.qrcode,
        providers.accounts,
        settings,
        on_new=on_new,
        automatico=providers.qrcode,
    )
    return fetched


def poll_resuming(
    engine: Engine,
    providers: Providers,
    family: Family,
    settings: Settings,
    *,
    owner: str,
    lease: timedelta,
    on_new: OnNew = None,
    on_step: Step = None,
) -> Fetched | None:
    """Poll one family from just before where its last successful poll ended, under the
    job's lease, and move the window on. ``None`` when another process holds the lease."""
    with leased(engine, family.poll_job, owner, lease=lease) as run:
        if run is None:
            return None
        start, end = next_window(engine, family.poll_job, settings)
        fetched = fetch_window(
            engine, providers, start, end, families=(family,), on_new=on_new, on_step=on_step
        )
        run.window_end = end
        return fetched
