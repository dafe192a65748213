"""Name a notification by what it says, so a receiver's recordings map back to the plan.

The runner names each notification it plans with ``notification_identity``; a test's
recording receiver calls ``identities_of(path, body)`` on each POST and gets the same
names, one per item in the body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sandbox.scenario.outcome import Channel

_SUFFIXES: Final[dict[str, Channel]] = {"pix": "pix", "rec": "rec", "cobr": "cobr"}


def item_keys(channel: Channel, item: Mapping[str, Any]) -> tuple[str, ...]:
    """The business objects one notification item is about, with their states."""
    if channel == "pix":
        refunds = item.get("devolucoes") or []
        if isinstance(refunds, Mapping):  # some providers send a single object
            refunds = [refunds]
        return (
            f"pix:{item.get('endToEndId')}",
            *(f"refund:{r.get('rtrId')}:{r.get('status')}" for r in refunds),
        )
    if channel == "rec":
        return (f"rec:{item.get('idRec')}:{item.get('status')}",)
    if channel == "cobr":
        attempts = len(item.get("tentativas") or [])
        return (f"cobr:{item.get('txid')}:{item.get('status')}:{attempts}",)
    data = item.get("data") or {}
    kind = item.get("type")
    ref = data.get("idempotencyKey") or data.get("id") or data.get("endToEndId")
    key = f"accounts:{kind}:{ref}:{data.get('status')}"
    returns = len(data.get("refunds") or [])
    return (f"{key}:r{returns}" if returns else key,)


def notification_identity(channel: Channel, item: Mapping[str, Any]) -> str:
    return " ".join(item_keys(channel, item))


def channel_of(path: str) -> Channel:
    """The channel a POST went to, from its URL path (BCB appends /pix, /rec, /cobr)."""
    return _SUFFIXES.get(path.rstrip("/").rsplit("/", 1)[-1], "accounts")


def identities_of(path: str, body: Any) -> list[str]:
    """The identities of every notification item in one POST body."""
    channel = channel_of(path)
    items: Any
    if channel == "accounts":
        items = [body]
    elif channel == "rec":
        items = body.get("recs", []) if isinstance(body, Mapping) else []
    elif channel == "cobr":
        items = body.get("cobsr", []) if isinstance(body, Mapping) else []
    elif isinstance(body, list):
        items = body
    elif isinstance(body, Mapping) and "pix" in body:
        items = body["pix"] if isinstance(body["pix"], list) else [body["pix"]]
    else:
        items = [body]  # a flat Pix object
    return [notification_identity(channel, item) for item in items if isinstance(item, Mapping)]
