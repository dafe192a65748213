"""A database that stops answering in the middle of a transaction (a network that drops
packets, a server frozen): the receiver answers the delivery 503 within its commit
deadline instead of holding it until TCP gives up, minutes past the provider's timeout. If
the transaction commits once the database is back, the provider's retry is a counted
duplicate: one item, never two.

A real ``pixrecon serve`` reaches PostgreSQL through a proxy of the test's own, which can
hold every byte it is given (``pause``) and then deliver them (``resume``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.conftest import SECRET, free_port
from tests.factories import e2e_id, pix
from tests.faults.support import Receiver, items_with_key, pixrecon_env

pytestmark = [pytest.mark.postgres]


class HoldingProxy:
    """TCP from a port of its own to PostgreSQL; while paused, what either side sends is
    held, as by a network that stopped delivering, and sent on resume."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._open = threading.Event()
        self._open.set()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._sockets: list[socket.socket] = [self._listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def pause(self) -> None:
        self._open.clear()

    def resume(self) -> None:
        self._open.set()

    def close(self) -> None:
        self._open.set()
        for sock in self._sockets:
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self._sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self._open.wait()
                sink.sendall(data)
        except OSError:
            pass


@pytest.fixture
def proxy(postgres_database_url: str) -> Iterator[HoldingProxy]:
    url = make_url(postgres_database_url)
    holding = HoldingProxy((url.host or "127.0.0.1", url.port or 5432))
    yield holding
    holding.close()


def test_a_transaction_the_database_stops_answering_is_answered_503_in_time(
    postgres_database_url: str, proxy: HoldingProxy, tmp_path: Path
) -> None:
    through = make_url(postgres_database_url).set(host="127.0.0.1", port=proxy.port)
    env = pixrecon_env(
        through.render_as_string(hide_password=False), PIXRECON_COMMIT_DEADLINE_SECONDS="1"
    )
    receiver = Receiver(env, tmp_path)
    receiver.start()
    e2e = e2e_id(71)
    body = {"pix": [pix(e2e=e2e)]}
    headers = {"X-Webhook-Secret": SECRET}
    try:
        # The receiver's connection is open and in use: no liveness ping before the next
        # transaction, which goes straight into the stalled network.
        warm = {"pix": [pix(e2e=e2e_id(70))]}
        first = httpx.post(receiver.url + "/webhooks/qrcode/pix", json=warm, headers=headers)
        assert first.status_code == 200, first.text
        proxy.pause()
        began = time.monotonic()
        answer = httpx.post(
            receiver.url + "/webhooks/qrcode/pix", json=body, headers=headers, timeout=30
        )
        waited = time.monotonic() - began
        assert answer.status_code == 503, answer.text
        assert answer.json()["type"].endswith("storage-unavailable")
        assert answer.headers["retry-after"] == "30"
        # The deadline, a second's grace for a transaction in flight, the timer's tick.
        assert waited < 4, waited

        proxy.resume()
        retried = httpx.post(
            receiver.url + "/webhooks/qrcode/pix", json=body, headers=headers, timeout=30
        )
        assert retried.status_code == 200, retried.text
        assert items_with_key(postgres_database_url, f"pix:{e2e}") == 1
    finally:
        proxy.resume()
        receiver.stop()
