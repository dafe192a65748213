"""Deliveries shaped as the provider sends them, where their business keys are, and
hypothesis strategies that change everything else about them (docs/design.md §4).

A sample knows the paths of its keys (grouped per item: one of a group is enough) and of
what holds its items together (wrappers, the envelope's ``type``): a mutation that keeps
those must be accepted; one that takes every key of its item away must be refused, and
one that takes every key of a refund away keeps that refund whole as unsupported.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.factories import e2e_id, pix

FIXTURES = Path(__file__).parents[1] / "fixtures"
Path_ = tuple[str | int, ...]

# Names whose appearance would change how a body is taken apart.
STRUCTURE = frozenset({"pix", "recs", "cobsr", "data", "payload", "type", "devolucoes"})


@dataclass
class Sample:
    route: str
    body: Any
    key_groups: list[list[Path_]]
    protected: set[Path_] = field(default_factory=set)

    def keeps(self, path: Path_) -> bool:
        """Whether ``path`` is a key, holds one, or holds the body together."""
        if path in self.protected:
            return True
        return any(key[: len(path)] == path for group in self.key_groups for key in group)


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"), parse_float=Decimal)


def _refund(n: int, status: str = "DEVOLVIDO") -> dict[str, Any]:
    return {
        "id": f"dev{n}",
        "rtrId": f"D18236120202611221530r{n:010d}",
        "valor": "1.00",
        "natureza": "ORIGINAL",
        "horario": {"solicitacao": "2026-11-22T15:30:00Z", "liquidacao": "2026-11-22T15:31:00Z"},
        "status": status,
    }


def pix_sample(n: int, shape: str, refunds: int) -> Sample:
    one = pix(e2e=e2e_id(n))
    if refunds == 1:
        one["devolucoes"] = _refund(n)
    elif refunds > 1:
        one["devolucoes"] = [_refund(n * 10 + i) for i in range(refunds)]
    body: Any
    at: Path_
    if shape == "wrapped_list":
        body, at = {"pix": [one]}, ("pix", 0)
    elif shape == "wrapped_object":
        body, at = {"pix": one}, ("pix",)
    elif shape == "bare_array":
        body, at = [one], (0,)
    else:
        body, at = one, ()
    groups: list[list[Path_]] = [[(*at, "endToEndId")]]
    if refunds == 1:
        groups.append([(*at, "devolucoes", "rtrId"), (*at, "devolucoes", "id")])
    for i in range(refunds if refunds > 1 else 0):
        groups.append([(*at, "devolucoes", i, "rtrId"), (*at, "devolucoes", i, "id")])
    return Sample("/webhooks/qrcode/pix", body, groups)


def rec_sample() -> Sample:
    return Sample(
        "/webhooks/qrcode/rec", _load("qrcode/rec_bcb_example.json"), [[("recs", 0, "idRec")]]
    )


def cobr_sample() -> Sample:
    return Sample(
        "/webhooks/qrcode/cobr", _load("qrcode/cobr_bcb_example.json"), [[("cobsr", 0, "txid")]]
    )


ACCOUNTS = {
    "transfer.json": ["id", "idempotencyKey", "endToEndId"],
    "receive.json": ["id", "idempotencyKey", "endToEndId"],
    "refund.json": ["id", "idempotencyKey", "endToEndId"],
    "cashout_minimal.json": ["id", "idempotencyKey", "endToEndId"],
    "infraction.json": ["id"],
}


def accounts_sample(fixture: str, envelope: str) -> Sample:
    """``envelope``: as documented, under ``payload``, or ``data`` as an array."""
    body = _load(f"accounts/{fixture}")
    if envelope == "payload":
        body["payload"] = body.pop("data")
        at: Path_ = ("payload",)
    elif envelope == "list":
        body["data"] = [body["data"]]
        at = ("data", 0)
    else:
        at = ("data",)
    group: list[Path_] = [(*at, name) for name in ACCOUNTS[fixture]]
    return Sample("/webhooks/accounts", body, [group], protected={("type",)})


def samples() -> st.SearchStrategy[Sample]:
    return st.one_of(
        st.builds(
            pix_sample,
            st.integers(1, 10**6),
            st.sampled_from(["wrapped_list", "wrapped_object", "bare_array", "flat"]),
            st.integers(0, 2),
        ),
        st.just(None).map(lambda _: rec_sample()),
        st.just(None).map(lambda _: cobr_sample()),
        st.builds(
            accounts_sample,
            st.sampled_from(sorted(ACCOUNTS)),
            st.sampled_from(["data", "payload", "list"]),
        ),
    )


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**15), 10**15),
    st.decimals(
        allow_nan=False, allow_infinity=False, places=3, min_value=-(10**6), max_value=10**6
    ),
    st.text(max_size=40),
    # Long text breaks columns that are not meant for it.
    st.text(min_size=60, max_size=300),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=12), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(node: Any, at: Path_ = ()) -> list[Path_]:
    found = [at]
    if isinstance(node, dict):
        for name, value in node.items():
            found.extend(_paths(value, (*at, name)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_paths(value, (*at, index)))
    return found


def _parent(body: Any, path: Path_) -> Any:
    for part in path[:-1]:
        body = body[part]
    return body


@st.composite
def mutated(draw: st.DrawFn, sample: Sample) -> tuple[Sample, list[str]]:
    """The sample with 1-4 of its other fields replaced, removed or added; returns what was
    done (for the failure report)."""
    body = copy.deepcopy(sample.body)
    done: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        free = [p for p in _paths(body) if p and not sample.keeps(p)]
        objects = [p for p in _paths(body) if isinstance(_at(body, p), dict)]
        choice = draw(st.sampled_from(["replace", "delete", "add"] if free else ["add"]))
        if choice == "add":
            where = draw(st.sampled_from(objects))
            name = draw(st.text(max_size=12).filter(lambda n: n not in STRUCTURE))
            if name in _at(body, where) and sample.keeps((*where, name)):
                continue
            _at(body, where)[name] = draw(json_values)
            done.append(f"add {where}/{name!r}")
            continue
        path = draw(st.sampled_from(free))
        parent = _parent(body, path)
        if choice == "replace":
            parent[path[-1]] = draw(json_values)
            done.append(f"replace {path}")
        elif isinstance(parent, dict):
            del parent[path[-1]]
            done.append(f"delete {path}")
        else:
            parent[path[-1]] = draw(json_values)
            done.append(f"replace {path}")
    return Sample(sample.route, body, sample.key_groups, sample.protected), done


def _at(body: Any, path: Path_) -> Any:
    for part in path:
        body = body[part]
    return body


@st.composite
def keyless(draw: st.DrawFn, sample: Sample) -> Sample:
    """The sample with every key of its item (the Pix, recurrence, recurring charge or
    accounts object; each sample has one) taken away or made unreadable: nothing of it
    can be read. A refund's ``rtrId`` goes too: it is a key of its own, which alone
    keeps a Pix without its ``endToEndId`` from being refused."""
    rtr_ids = [path for group in sample.key_groups[1:] for path in group if path[-1] == "rtrId"]
    return _without(draw, sample, [*sample.key_groups[0], *rtr_ids])


@st.composite
def refund_keyless(draw: st.DrawFn, sample: Sample) -> Sample:
    """The sample with every key of one of its Pix's refunds taken away or made
    unreadable; the sample's own when it has no refund."""
    return _without(draw, sample, draw(st.sampled_from(sample.key_groups[1:] or [[]])))


def _without(draw: st.DrawFn, sample: Sample, group: list[Path_]) -> Sample:
    body = copy.deepcopy(sample.body)
    for path in group:
        parent = _parent(body, path)
        if path[-1] not in parent:
            continue
        unreadable: st.SearchStrategy[Any] = st.sampled_from(
            [None, "", "x" * 120, 3.5, [], {}, True]
        )
        if draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(unreadable)
    return Sample(sample.route, body, sample.key_groups, sample.protected)


def dumps(body: Any) -> bytes:
    def default(obj: object) -> object:
        if isinstance(obj, Decimal):
            return float(obj) if obj != obj.to_integral_value() else int(obj)
        raise TypeError(type(obj).__name__)

    return json.dumps(body, default=default).encode()
