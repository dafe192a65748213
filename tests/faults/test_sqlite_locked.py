"""A SQLite file another process holds locked (a backup, a person's ``sqlite3`` shell, a
second pixrecon on the same file): the receiver's writer waits for the lock up to SQLite's
busy timeout, 30 s, but the delivery it was writing is answered 503 within the commit
deadline and a second's grace, before the provider's own timeout. Once the lock is given
back the transaction commits, and the provider's retry is a counted duplicate."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import httpx

from tests.conftest import SECRET, wait_for
from tests.factories import e2e_id, pix
from tests.faults.support import Receiver, items_with_key, pixrecon_env


def test_a_delivery_held_by_a_locked_sqlite_file_is_answered_503_in_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "pixrecon.db"
    url = f"sqlite:///{path}"
    receiver = Receiver(pixrecon_env(url, PIXRECON_COMMIT_DEADLINE_SECONDS="1"), tmp_path)
    receiver.start()
    headers = {"X-Webhook-Secret": SECRET}
    e2e = e2e_id(81)
    body = {"pix": [pix(e2e=e2e)]}
    holder = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        warm = {"pix": [pix(e2e=e2e_id(80))]}
        assert httpx.post(receiver.url + "/webhooks/qrcode/pix", json=warm, headers=headers)
        holder.execute("BEGIN IMMEDIATE")  # the file's write lock, as another process holds it
        began = time.monotonic()
        answer = httpx.post(
            receiver.url + "/webhooks/qrcode/pix", json=body, headers=headers, timeout=30
        )
        waited = time.monotonic() - began
        assert answer.status_code == 503, answer.text
        assert answer.json()["type"].endswith("storage-unavailable")
        assert "retry-after" in answer.headers
        # The deadline, a second's grace for a transaction in flight, some slack.
        assert waited < 4, waited
        holder.execute("COMMIT")
        # The transaction that waited for the lock commits now: the retry is a duplicate.
        wait_for(lambda: items_with_key(url, f"pix:{e2e}") == 1, timeout=30)
        retried = httpx.post(
            receiver.url + "/webhooks/qrcode/pix", json=body, headers=headers, timeout=30
        )
        assert retried.status_code == 200, retried.text
        assert retried.json()["duplicates"] == 1
        assert items_with_key(url, f"pix:{e2e}") == 1
    finally:
        holder.close()
        receiver.stop()
