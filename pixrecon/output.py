"""Standard output whose reader may go away: ``pixrecon reconcile | head -1`` reads one
line and closes the pipe. What the command did is done whether or not anyone reads the
rest, so the rest goes nowhere and the command ends with its own exit code (the day's
verdict), never a broken-pipe error in place of it."""

from __future__ import annotations

import os
from typing import Any


class ReaderMayLeave:
    """A text or binary stream that, once its reader is gone, writes to ``/dev/null``."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, data: Any) -> int:
        try:
            written: int = self._stream.write(data)
        except BrokenPipeError:
            self._silence()
            return len(data)
        return written

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._silence()

    @property
    def buffer(self) -> ReaderMayLeave:
        return ReaderMayLeave(self._stream.buffer)

    def _silence(self) -> None:
        # The descriptor itself now points at /dev/null: what is still buffered, and the
        # interpreter's last flush at exit, succeed instead of failing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
