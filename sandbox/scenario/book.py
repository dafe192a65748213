"""Apply a scenario's day to the provider, writing the ground truth down as it goes.

Each step runs with the sandbox clock pinned to its instant. Notifications are snapshots
taken at that moment (a refund in processing is notified as such, even though it settles
later); the delivery phase (``sandbox.scenario.delivery``) sends them afterwards.
"""

from __future__ import annotations

import dataclasses
import random
from datetime import date, datetime, timedelta
from typing import Any

from sandbox.automatico_webhooks import NotificationKind, notification
from sandbox.scenario import events as ev
from sandbox.scenario.accounts_side import apply_accounts_event
from sandbox.scenario.clock import ScenarioClock
from sandbox.scenario.drafts import ChargeDraft, PlannedApiFault, PlannedNotification
from sandbox.scenario.fields import to_cents
from sandbox.scenario.forge import forged_pix, forged_transfer
from sandbox.scenario.loader import ScenarioError
from sandbox.scenario.model import Cob, Cobv, Recurrence, RecurringCharge, Scenario, Step, instant
from sandbox.scenario.outcome import Channel, InfractionRecord, Movement
from sandbox.scenario.set_up import apply_set_up
from sandbox.state import SandboxProvider


class DayBook:
    def __init__(self, scenario: Scenario, provider: SandboxProvider, day: date) -> None:
        if not isinstance(provider.clock, ScenarioClock):
            raise TypeError("the provider needs a ScenarioClock: use scenario_provider()")
        self.scenario = scenario
        self.provider = provider
        self.clock = provider.clock
        self.day = day
        self.movements: dict[str, Movement] = {}
        self.refs: dict[str, str] = {}
        self.notifications: list[PlannedNotification] = []
        self.api_faults: list[PlannedApiFault] = []
        self.charges: dict[str, ChargeDraft] = {}
        self.infractions: dict[str, InfractionRecord] = {}
        self._refunds: dict[str, tuple[str, str]] = {}  # ref → (Pix e2eid, refund id)
        self._forge_rng = random.Random(f"{scenario.seed}:forge")

    # -- Helpers the event handlers share ----------------------------------------------

    def notify(
        self, channel: Channel, payload: dict[str, Any], step: Step, *, forged: bool = False
    ) -> None:
        delivery = getattr(step.item, "delivery", None)
        at = instant(self.day, step.at)
        number = len(self.notifications) + 1
        self.notifications.append(
            PlannedNotification(
                f"n{number:03d}", channel, payload, at, step.location, delivery, forged
            )
        )

    def record(self, movement: Movement) -> None:
        self.movements[movement.ref] = movement

    def update(self, ref: str, **changes: Any) -> Movement:
        self.movements[ref] = dataclasses.replace(self.movements[ref], **changes)
        return self.movements[ref]

    # -- The day -----------------------------------------------------------------------

    def run(self) -> None:
        for step in self.scenario.timeline():
            when = instant(self.day, step.at)
            self.clock.pin(when)
            try:
                self._apply(step, when)
            except (ValueError, KeyError) as exc:
                detail = exc.args[0] if exc.args else exc
                raise ScenarioError(self.scenario.name, [f"{step.location}: {detail}"]) from exc

    def _apply(self, step: Step, when: datetime) -> None:
        item = step.item
        if isinstance(item, Cob | Cobv | Recurrence | RecurringCharge):
            apply_set_up(self, step, item, when)
        elif isinstance(item, ev.ApiErrors | ev.ApiSlow | ev.TokensExpired):
            self.api_faults.append(PlannedApiFault(step.location, when, item))
        elif isinstance(item, ev.PixReceived):
            pix = self.provider.receive_pix(
                item.amount,
                txid=item.txid,
                info_pagador=item.info_pagador,
                horario=when,
                **_payer(item),
            )
            self._received(step, item.ref, pix, None, item.booked_after)
        elif isinstance(item, ev.ChargePayment):
            charge = self.charges[item.charge]
            if charge.kind == "cobv" and charge.due is None:
                charge.due = self.provider.charges.due_on(charge.txid, self.day).total
            pix = self.provider.pay_charge(charge.txid, item.amount, horario=when, **_payer(item))
            self._received(step, item.ref, pix, item.charge, item.booked_after)
        elif isinstance(item, ev.Refund | ev.RefundSettled):
            self._refund(step, item, when)
        elif isinstance(item, ev.RecurringChargeAttempt):
            self._attempt(step, item, when)
        elif isinstance(item, ev.ForgedPix):
            txid = self.charges[item.charge].txid if item.charge is not None else item.txid
            payload = forged_pix(self.provider, self._forge_rng, item.amount, txid, when)
            self.refs[item.ref] = payload["endToEndId"]
            self.notify("pix", payload, step, forged=True)
        elif isinstance(item, ev.ForgedTransfer):
            payload = forged_transfer(
                self.provider,
                self._forge_rng,
                item.ref,
                item.amount,
                item.status,
                when,
                keyless=item.keys == "none",
            )
            # Without keys the notification names the transfer only by its id.
            data = payload["data"]
            self.refs[item.ref] = str(data["idempotencyKey"] or data["id"])
            self.notify("accounts", payload, step, forged=True)
        else:
            apply_accounts_event(self, step, item, when)

    def _received(
        self,
        step: Step,
        ref: str,
        pix: dict[str, Any],
        charge: str | None,
        booked_after: int = 0,
    ) -> None:
        e2eid = str(pix["endToEndId"])
        self.refs[ref] = e2eid
        if charge is not None:
            self.charges[charge].payments.append(e2eid)
        amount = to_cents(pix["valor"])
        fees = self.scenario.fees
        at = instant(self.day, step.at)
        if booked_after:
            self.provider.accounts.book_later(e2eid, at + timedelta(seconds=booked_after))
        self.record(
            Movement(
                ref=ref,
                kind="pix_received",
                key=e2eid,
                amount_cents=amount,
                status="RECEIVED",
                booked=True,
                credit=True,
                at=at,
                end_to_end_id=e2eid,
                txid=pix.get("txid"),
                charge=charge,
                # The provider's fee, never more than the Pix.
                fee_cents=min(to_cents(fees.pix_received), amount) if fees is not None else 0,
                booked_after=booked_after,
            )
        )
        self._notify_pix(step, e2eid)

    def _notify_pix(self, step: Step, e2eid: str) -> None:
        pix = self.provider.get_pix(e2eid)
        # BCB rule: only Pix with a txid are notified (and so are their refunds).
        if pix is not None and pix.get("txid"):
            self.notify("pix", pix, step)

    def _refund(self, step: Step, item: ev.Refund | ev.RefundSettled, when: datetime) -> None:
        if isinstance(item, ev.Refund):
            e2eid = self.refs[item.pix]
            refund = self.provider.refund_pix(
                e2eid,
                item.amount,
                natureza=item.natureza,
                status=item.status,
                motivo=item.motivo,
                at=when,
            )
            self._refunds[item.ref] = (e2eid, str(refund["id"]))
            self.refs[item.ref] = str(refund["rtrId"])
            pix = self.movements[item.pix]
            self.record(
                Movement(
                    ref=item.ref,
                    kind="pix_refund",
                    key=str(refund["rtrId"]),
                    amount_cents=to_cents(item.amount),
                    status=item.status,
                    booked=item.status == "DEVOLVIDO",
                    credit=False,
                    at=when,
                    end_to_end_id=str(refund["rtrId"]),
                    txid=pix.txid,
                    original_end_to_end_id=e2eid,
                )
            )
        else:
            e2eid, refund_id = self._refunds[item.refund]
            self.provider.settle_refund(e2eid, refund_id, status=item.status, motivo=item.motivo)
            booked = item.status == "DEVOLVIDO"
            self.update(item.refund, status=item.status, booked=booked, at=when)
        self._notify_pix(step, e2eid)

    def _attempt(self, step: Step, item: ev.RecurringChargeAttempt, when: datetime) -> None:
        charge = self.charges[item.charge]
        cobr = self.provider.attempt_recurring_charge(
            charge.txid, succeed=item.succeed, rejection_code=item.rejection_code, at=when
        )
        self.notify("cobr", notification(NotificationKind.COBR, cobr), step)
        if item.succeed:
            e2eid = str(cobr["tentativas"][-1]["endToEndId"])
            pix = self.provider.get_pix(e2eid)
            assert pix is not None
            ref = item.ref or f"{item.charge}#pix"
            self._received(step, ref, pix, item.charge, item.booked_after)


def _payer(item: ev.PixReceived | ev.ChargePayment) -> dict[str, Any]:
    payer: dict[str, Any] = {"payer_cpf": item.payer_cpf, "payer_cnpj": item.payer_cnpj}
    if item.payer_name is not None:
        payer["payer_name"] = item.payer_name
    return payer
