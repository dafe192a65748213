"""Fixtures the receiver's tests share."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
import structlog

from reconcile.logs import configure_logging


@pytest.fixture
def json_logs() -> Iterator[io.StringIO]:
    """Every log line as JSON, at DEBUG, into a stream the test reads."""
    saved = structlog.get_config()
    stream = io.StringIO()
    configure_logging("DEBUG", json=True, stream=stream)
    yield stream
    structlog.configure(**saved)
