"""The heap of a long-running process (the receiver, a worker process), settled once it
has started."""

from __future__ import annotations

import gc


def freeze_startup_objects() -> None:
    """Move every object alive now out of the garbage collector's reach.

    A started process holds about 160,000 objects that live as long as it does (modules,
    classes, SQLAlchemy's and Pydantic's schemas, compiled statements). CPython's full
    collection walks all of them, and on a busy receiver it ran every second or two and
    held the GIL for 80 to 130 ms each time: a delivery's p99 was those pauses, and they were
    about 6 % of the process's time (``docs/benchmarks.md``). Frozen, they are no longer
    walked; what the process allocates afterwards is collected as before."""
    gc.collect()
    gc.freeze()
