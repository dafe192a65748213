"""``pixrecon demo``: a merchant's whole business day, end to end, on the embedded defaults.

The sandbox plays a scenario day (``docs/scenarios.md``; by default ``business-day.json``,
shipped in this package) against a receiver with in-process workers on SQLite (``day.py``);
the day is then fetched and reconciled as ``pixrecon reconcile`` does it, its report
printed, and every figure checked against the sandbox's ground truth (``checks.py``).
With ``--serve`` the receiver and the dashboard stay up for a browser (``serve.py``).
"""

from pixrecon.demo.day import DemoError
from pixrecon.demo.run import DemoOptions, run_demo

__all__ = ["DemoError", "DemoOptions", "run_demo"]
