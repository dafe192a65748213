"""A simulated Pix provider: the QR code API (the BCB standard), the accounts API, OAuth2,
and webhook delivery with faults.

It stands in for the real provider in the demo, the tests and the benchmarks, and imports
nothing from ``receiver``, ``worker``, ``reconcile`` or ``pixrecon``.
"""

from sandbox.app import create_app
from sandbox.cli import run_sandbox
from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_SCOPES
from sandbox.faults import Endpoint
from sandbox.server import BackgroundServer
from sandbox.state import SandboxProvider
from sandbox.webhooks import (
    BodyShape,
    DeliveryReport,
    FaultAction,
    PixFault,
    WebhookDeliverer,
    random_plan,
)

__all__ = [
    "DEFAULT_CLIENT_ID",
    "DEFAULT_CLIENT_SECRET",
    "DEFAULT_SCOPES",
    "BackgroundServer",
    "BodyShape",
    "DeliveryReport",
    "Endpoint",
    "FaultAction",
    "PixFault",
    "SandboxProvider",
    "WebhookDeliverer",
    "create_app",
    "random_plan",
    "run_sandbox",
]
