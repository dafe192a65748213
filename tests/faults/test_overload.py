"""Overload: many more deliveries at once than the receiver lets in. It keeps answering —
2xx (committed) or 503 with Retry-After (nothing stored) — stays alive with bounded
memory, and takes deliveries at once when the load drops. Every 2xx is in the inbox and
no 503 is. (The figures at three times the capacity for 30 s: ``benchmarks/overload.py``.)"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import httpx
import pytest

from benchmarks.loadgen import closed, http_request, run_load
from tests.conftest import SECRET
from tests.factories import pix
from tests.faults.support import PIX_PATH, Receiver, accounts, pixrecon_env

CONNECTIONS = 400
RECEIVER_LIMIT_MIB = 150


def _peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


@pytest.mark.postgres
def test_an_overloaded_receiver_answers_2xx_or_503_stays_small_and_recovers(
    postgres_database_url: str, tmp_path: Path
) -> None:
    database = postgres_database_url
    env = pixrecon_env(database, PIXRECON_MAX_WAITING_DELIVERIES="16")
    receiver = Receiver(env, tmp_path)
    receiver.start()
    assert receiver.process is not None
    sent: list[str] = []

    def make(n: int) -> bytes:
        body = pix()
        sent.append(body["endToEndId"])
        return http_request(
            PIX_PATH, json.dumps({"pix": [body]}).encode(), {"X-Webhook-Secret": SECRET}
        )

    try:
        load = run_load(
            closed(
                "127.0.0.1",
                receiver.port,
                make,
                connections=CONNECTIONS,
                seconds=5.0,
                counter=itertools.count(),
            )
        )
        assert receiver.process.poll() is None  # never crashed
        rss = _peak_rss_mib(receiver.process.pid)
        # The load gone, the next delivery is taken at once.
        after = pix()
        answer = httpx.post(
            receiver.url + PIX_PATH, json={"pix": [after]}, headers={"X-Webhook-Secret": SECRET}
        )
    finally:
        receiver.stop()
    assert set(load.statuses) <= {200, 503}
    assert load.statuses[503] > 0
    assert load.statuses[200] > 0
    assert rss < RECEIVER_LIMIT_MIB
    assert answer.status_code == 200
    assert answer.elapsed.total_seconds() < 1.0
    found = accounts(database, [])
    # Every 2xx stored, no 503 stored: what the inbox holds is what was acknowledged, plus
    # at most the deliveries whose answer never came back (a connection error).
    assert load.statuses[200] + 1 <= found.items <= load.statuses[200] + 1 + load.errors
    assert found.items < len(sent)
