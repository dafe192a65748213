"""Serve any ASGI app with uvicorn in a background thread, on a real loopback socket.

Tests and the demo need real HTTP (the code under test uses plain httpx clients), so the
app runs in a thread of the same process and the caller keeps driving it directly.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

import uvicorn
from starlette.types import ASGIApp


class BackgroundServer:
    """``with BackgroundServer(app) as server: httpx.get(server.url + "/path")``.

    ``port=0`` binds an OS-chosen free port; the socket is bound here, before uvicorn
    starts, so ``port`` and ``url`` are known without racing another process for it.
    Extra keyword arguments go to ``uvicorn.Config`` (e.g. ``ssl_certfile``,
    ``ssl_keyfile``, ``ssl_ca_certs``, ``ssl_cert_reqs`` for mutual TLS).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_level: str = "warning",
        startup_timeout: float = 10.0,
        **config_options: Any,
    ) -> None:
        config_options.setdefault("timeout_graceful_shutdown", 1)
        config_options.setdefault("lifespan", "auto")
        if logging.getLogger().handlers:
            # The host program formats its logs (pixrecon's JSON lines, say): uvicorn's
            # loggers go through its handlers instead of printing lines of their own.
            config_options.setdefault("log_config", None)
        self._config = uvicorn.Config(
            app, host=host, port=port, log_level=log_level, **config_options
        )
        self._server = uvicorn.Server(self._config)
        self._host = host
        self._requested_port = port
        self._startup_timeout = startup_timeout
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self.port = port

    @property
    def url(self) -> str:
        if self._socket is None:
            raise RuntimeError("the server is not running")
        scheme = "https" if self._config.is_ssl else "http"
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{scheme}://{host}:{self.port}"

    def start(self) -> Self:
        if self._thread is not None:
            raise RuntimeError("the server was already started")
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        # IPPROTO_TCP, not the default 0: asyncio only sets TCP_NODELAY on connections
        # accepted from a socket that says it is TCP, and without it every keep-alive
        # response waits out the peer's delayed ACK (about 40 ms on Linux).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self._host, self._requested_port))
            sock.set_inheritable(True)
        except OSError:
            sock.close()
            raise
        self._socket = sock
        self.port = sock.getsockname()[1]
        self._thread = threading.Thread(
            target=self._run,
            args=(sock,),
            name=f"uvicorn-{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout
        while not self._server.started:
            # uvicorn reports start-up failures by exiting its thread, not by raising.
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server on {self._host}:{self.port} failed to start")
            time.sleep(0.01)
        return self

    def _run(self, sock: socket.socket) -> None:
        # uvicorn signals a failed start-up with sys.exit(); start() reports it instead.
        with contextlib.suppress(SystemExit):
            self._server.run(sockets=[sock])

    def stop(self, timeout: float = 5.0) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._server.should_exit = True
            thread.join(timeout)
            if thread.is_alive():
                self._server.force_exit = True
                thread.join(timeout)
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
