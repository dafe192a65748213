"""Periodic jobs of the worker: polling the provider (a primary source, DESIGN §1.6) and
confirming notified money by API look-up (§1.5). Each job takes a database lease first,
so running more worker processes never multiplies the calls to the provider."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine

from reconcile.confirmation import (
    ConfirmReport,
    confirm_pending_movements,
    confirm_pending_pix,
    waive_confirmation,
)
from reconcile.db import UNAVAILABLE_ERRORS, session_scope
from reconcile.logs import get_logger
from reconcile.nightly import reconcile_day
from reconcile.polling import poll_received_pix
from reconcile.polling_accounts import (
    poll_balance,
    poll_infractions,
    poll_invoices,
    poll_pending_payouts,
    poll_statement,
)
from reconcile.polling_charges import poll_charges
from reconcile.provider.accounts_api import AccountsApi
from reconcile.provider.errors import ProviderError
from reconcile.provider.pix_api import PixApi
from reconcile.schedule import claim, failed, succeeded, window
from reconcile.settings import Settings
from reconcile.timeutil import BUSINESS_TZ, utcnow
from worker.dispatch import Dispatcher

log = get_logger(__name__)

# What a job run may meet and survive: the provider or the database being unavailable.
JOB_ERRORS: tuple[type[Exception], ...] = (ProviderError, *UNAVAILABLE_ERRORS)


@dataclass(frozen=True)
class Job:
    name: str
    interval: float
    run: Callable[[], None]


class Poller:
    def __init__(
        self,
        settings: Settings,
        engine: Engine,
        dispatcher: Dispatcher,
        pix: PixApi | None,
        accounts: AccountsApi | None = None,
    ) -> None:
        self._settings = settings
        self._engine = engine
        self._dispatcher = dispatcher
        self._pix = pix
        self._accounts = accounts
        # Unique per process: a lease held by a dead process simply expires.
        self.owner = f"{socket.gethostname()}:{uuid.uuid4().hex[:8]}"

    @property
    def pix_api(self) -> PixApi:
        if self._pix is None:
            raise RuntimeError("the Pix API is not configured")
        return self._pix

    def jobs(self) -> list[Job]:
        s = self._settings
        jobs = [
            Job("confirm_pix", min(s.poll_pix_interval_seconds, 30.0), self.confirm_pix),
            Job("reconcile_today", s.reconcile_interval_seconds, self.reconcile_today),
        ]
        if self._pix is not None:
            jobs.append(Job("poll_pix", s.poll_pix_interval_seconds, self.poll_pix))
        if self._accounts is not None:
            jobs.append(Job("poll_accounts", s.poll_accounts_interval_seconds, self.poll_accounts))
        return jobs

    def _guarded(self, name: str, interval: float, body: Callable[[], object]) -> bool:
        """Run ``body`` if this process wins the lease; record the outcome either way."""
        now = utcnow()
        # The lease outlives one interval a little, and a crashed run is retried after it.
        lease = timedelta(seconds=max(interval * 2, 60.0))
        with session_scope(self._engine) as session:
            if not claim(session, name, self.owner, lease=lease, now=now):
                return False
        try:
            body()
        except JOB_ERRORS as exc:
            log.warning("job_failed", job=name, error=f"{type(exc).__name__}: {exc}")
            with session_scope(self._engine) as session:
                failed(session, name, error=f"{type(exc).__name__}: {exc}", now=utcnow())
            return False
        return True

    def poll_pix(self) -> None:
        api = self._pix
        if api is None:
            return
        s = self._settings

        def run() -> None:
            start, end = self._window("poll_pix")
            result = poll_received_pix(
                api, self._engine, start, end, on_new=self._dispatcher.dispatch
            )
            # The charges created in the same window: what the merchant expects to be paid.
            poll_charges(api, self._engine, start, end, self._dispatcher.dispatch)
            with session_scope(self._engine) as session:
                succeeded(session, "poll_pix", now=utcnow(), window_end=end)
            log.info("poll_pix_done", seen=result.seen, new=len(result.new_ids))

        self._guarded("poll_pix", s.poll_pix_interval_seconds, run)

    def _window(self, name: str) -> tuple[datetime, datetime]:
        s = self._settings
        with session_scope(self._engine) as session:
            return window(
                session,
                name,
                now=utcnow(),
                overlap=timedelta(seconds=s.poll_overlap_seconds),
                initial_lookback=timedelta(seconds=s.poll_initial_lookback_seconds),
            )

    def poll_accounts(self) -> None:
        api = self._accounts
        if api is None:
            return
        dispatch = self._dispatcher.dispatch

        def run() -> None:
            start, end = self._window("poll_accounts")
            statement = poll_statement(api, self._engine, start, end, dispatch)
            infractions = poll_infractions(api, self._engine, start, end, dispatch)
            payouts = poll_pending_payouts(api, self._engine, dispatch)
            poll_invoices(api, self._engine, dispatch)
            poll_balance(api, self._engine, end, dispatch)
            with session_scope(self._engine) as session:
                succeeded(session, "poll_accounts", now=utcnow(), window_end=end)
            log.info(
                "poll_accounts_done",
                statement_lines=statement.seen,
                infractions=infractions.seen,
                payouts_checked=payouts.seen,
            )

        self._guarded("poll_accounts", self._settings.poll_accounts_interval_seconds, run)

    def reconcile_today(self) -> None:
        def run() -> None:
            result = reconcile_day(self._engine, utcnow().astimezone(BUSINESS_TZ).date())
            with session_scope(self._engine) as session:
                succeeded(session, "reconcile_today", now=utcnow(), window_end=None)
            log.info(
                "reconciled_today",
                run_id=result.run_id,
                exceptions=len(result.report["exceptions"]),
            )

        self._guarded("reconcile_today", self._settings.reconcile_interval_seconds, run)

    def _drain(self, step: Callable[[], ConfirmReport]) -> None:
        while True:
            report = step()
            if report.interrupted or report.handled < self._settings.confirm_batch_size:
                return

    def confirm_pix(self) -> None:
        s = self._settings

        def run() -> None:
            if s.confirm_policy == "none":
                waive_confirmation(self._engine)
            else:
                grace = timedelta(seconds=s.confirm_grace_seconds)
                batch = s.confirm_batch_size
                pix, accounts = self._pix, self._accounts
                if pix is not None:
                    self._drain(
                        lambda: confirm_pending_pix(self._engine, pix, grace=grace, limit=batch)
                    )
                if accounts is not None:
                    self._drain(
                        lambda: confirm_pending_movements(
                            self._engine, accounts, pix, grace=grace, limit=batch
                        )
                    )
            with session_scope(self._engine) as session:
                succeeded(session, "confirm_pix", now=utcnow(), window_end=None)

        self._guarded("confirm_pix", 30.0, run)
