"""The dashboard (``GET /dashboard``): server-rendered pages over the reconciliation
tables for the people who work on the day — its verdict and bridge, the open exceptions
(acknowledged and resolved here, every action audited) and recent days at a glance.

Imports ``reconcile`` only (docs/design.md §2); ``pixrecon/node.py`` mounts it.
"""
