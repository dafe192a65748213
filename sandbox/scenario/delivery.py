"""Send the day's notifications with their faults, and arm API faults on cue.

The order: every first copy in time order (or shuffled, with ``reorder``), then the
repeats of duplicated notifications, then the delayed ones. A delay in seconds is wall
time after the notification's turn; API faults are armed at the point of the sequence
that matches their time of day, so they hit the API calls the receiver makes then.
"""

from __future__ import annotations

import heapq
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import httpx

from sandbox.accounts.delivery import AccountsWebhookDeliverer
from sandbox.automatico_webhooks import AutomaticoDeliverer, NotificationKind
from sandbox.scenario.drafts import PlannedApiFault, PlannedNotification
from sandbox.scenario.fields import Delay, Drop, Duplicate
from sandbox.state import SandboxProvider
from sandbox.webhooks import WebhookDeliverer

# Accounts notification types the provider posts to the merchant's one accounts URL.
ACCOUNTS_TYPES = ("TRANSFER", "RECEIVE", "REFUND", "CASHOUT", "INFRACTION")


@dataclass(frozen=True)
class _Send:
    note: PlannedNotification


@dataclass(frozen=True)
class _Defer:
    note: PlannedNotification
    seconds: float


@dataclass(frozen=True)
class _Arm:
    index: int  # into the planned API faults


Action = _Send | _Defer | _Arm


@dataclass
class DeliveryResult:
    acknowledged: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))
    positions: defaultdict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    fault_positions: dict[int, int] = field(default_factory=dict)
    posts: int = 0


def plan(
    notes: Sequence[PlannedNotification],
    faults: Sequence[PlannedApiFault],
    *,
    reorder: bool,
    seed: int,
) -> tuple[list[Action], list[PlannedNotification]]:
    """The sequence to play, and the notifications delayed until after everything."""
    main: list[_Send | _Defer] = []
    last: list[PlannedNotification] = []
    for note in notes:
        fault = note.delivery
        if isinstance(fault, Drop):
            continue
        if isinstance(fault, Delay) and fault.seconds is None:
            last.append(note)
        elif isinstance(fault, Delay) and fault.seconds is not None:
            main.append(_Defer(note, fault.seconds))
        else:
            main.append(_Send(note))
    positions = [sum(1 for action in main if action.note.at < f.at) for f in faults]
    copies = {n.id: n.delivery.copies for n in notes if isinstance(n.delivery, Duplicate)}
    repeats: list[_Send | _Defer] = [
        _Send(note)
        for round_number in range(2, max(copies.values(), default=1) + 1)
        for note in notes
        if copies.get(note.id, 0) >= round_number
    ]
    sequence: list[Action] = [*main, *repeats]
    if reorder:
        # Seeded by a string: stable across runs and processes (no hash randomisation).
        random.Random(f"{seed}:reorder").shuffle(sequence)
    for index in sorted(range(len(faults)), key=lambda i: (positions[i], i), reverse=True):
        sequence.insert(positions[index], _Arm(index))
    return sequence, last


class Sender:
    """POSTs one notification at a time through the sandbox's own deliverers, so bodies,
    headers and retries are exactly those of the rest of the sandbox."""

    def __init__(
        self,
        provider: SandboxProvider,
        *,
        qrcode_url: str,
        accounts_url: str,
        secret_header: str | None,
        secret: str | None,
        client: httpx.Client,
        max_attempts: int = 3,
    ) -> None:
        # Register the URLs as the merchant would, so GET /webhook... shows them too.
        provider.webhooks.register(provider.pix_key, qrcode_url)
        provider.rec_webhook.register(qrcode_url)
        provider.cobr_webhook.register(qrcode_url)
        directory = provider.accounts.directory
        for kind in ACCOUNTS_TYPES:
            directory.register_webhook(kind, accounts_url, secret_header, secret)
        self._pix = WebhookDeliverer(
            qrcode_url,
            secret_header=secret_header,
            secret=secret,
            client=client,
            notify_without_txid=True,
            max_attempts=max_attempts,
        )
        self._automatico = AutomaticoDeliverer(
            qrcode_url,
            secret_header=secret_header,
            secret=secret,
            client=client,
            max_attempts=max_attempts,
        )
        self._accounts = AccountsWebhookDeliverer(
            directory, client=client, max_attempts=max_attempts
        )
        self._accounts_url = accounts_url

    def url(self, note: PlannedNotification) -> str:
        if note.channel == "pix":
            return self._pix.target_url
        if note.channel == "accounts":
            return self._accounts_url
        return self._automatico.target_url(NotificationKind(note.channel))

    def post(self, note: PlannedNotification) -> bool:
        """Send one copy; ``True`` when the receiver acknowledged it (2xx)."""
        if note.channel == "pix":
            return self._pix.deliver([note.payload]).pix_delivered == 1
        if note.channel == "accounts":
            return self._accounts.deliver([note.payload]).delivered == 1
        kind = NotificationKind(note.channel)
        return self._automatico.deliver(kind, [note.payload]).delivered == 1


def play(
    sequence: Sequence[Action],
    last: Sequence[PlannedNotification],
    post: Callable[[PlannedNotification], bool],
    arm: Callable[[int], None],
    *,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> DeliveryResult:
    result = DeliveryResult()
    waiting: list[tuple[float, int, PlannedNotification]] = []  # (due, tie-break, note)

    def send(note: PlannedNotification) -> None:
        result.positions[note.id].append(result.posts)
        result.posts += 1
        if post(note):
            result.acknowledged[note.id] += 1

    def send_due(until: float) -> None:
        while waiting and waiting[0][0] <= until:
            send(heapq.heappop(waiting)[2])

    for tie_break, action in enumerate(sequence):
        send_due(monotonic())
        if isinstance(action, _Arm):
            result.fault_positions[action.index] = result.posts
            arm(action.index)
        elif isinstance(action, _Defer):
            heapq.heappush(waiting, (monotonic() + action.seconds, tie_break, action.note))
        else:
            send(action.note)
    while waiting:
        pause = waiting[0][0] - monotonic()
        if pause > 0:
            sleep(pause)
        send_due(waiting[0][0])
    for note in last:
        send(note)
    return result
