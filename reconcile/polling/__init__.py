"""Fetching from the provider — the one way to do it (docs/design.md §1.6).

``day.fetch_window`` polls a window of both API families and ``day.fetch_day`` a whole
business day (then confirms what is pending); the worker's periodic jobs, ``pixrecon poll``
and ``pixrecon reconcile`` all go through them. What is found enters the same inbox as
the webhooks, as ``source=poll`` (``store``); one per API family: ``qrcode`` and
``accounts``.
"""
