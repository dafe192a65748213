"""The sandbox's Starlette app: the QR code API routes over one ``SandboxProvider``."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Route

from sandbox import automatico_routes, charge_routes, pix_routes, webhook_routes
from sandbox.oauth import token_endpoint
from sandbox.state import SandboxProvider


def create_app(provider: SandboxProvider | None = None) -> Starlette:
    """An app serving ``provider`` (a fresh one with the demo client when omitted).

    Tests keep a reference to the provider to drive it (receive Pix, script faults) while
    the code under test talks HTTP to the app.
    """
    routes = [
        Route("/oauth/token", token_endpoint, methods=["POST"]),
        Route("/pix", pix_routes.list_pix, methods=["GET"]),
        Route("/pix/{e2eid}", pix_routes.get_pix, methods=["GET"]),
        Route(
            "/webhook/{chave}",
            webhook_routes.put_webhook,
            methods=["PUT"],
        ),
        Route("/webhook/{chave}", webhook_routes.get_webhook, methods=["GET"]),
        Route("/webhook/{chave}", webhook_routes.delete_webhook, methods=["DELETE"]),
        # Charges (cob, cobv), Pix Automático (rec, cobr) and their webhooks.
        Route("/cob", charge_routes.list_cobs, methods=["GET"]),
        Route("/cob/{txid}", charge_routes.put_cob, methods=["PUT"]),
        Route("/cob/{txid}", charge_routes.get_cob, methods=["GET"]),
        Route("/cobv", charge_routes.list_cobvs, methods=["GET"]),
        Route("/cobv/{txid}", charge_routes.put_cobv, methods=["PUT"]),
        Route("/cobv/{txid}", charge_routes.get_cobv, methods=["GET"]),
        Route("/rec", automatico_routes.list_recs, methods=["GET"]),
        Route("/rec/{idRec}", automatico_routes.get_rec, methods=["GET"]),
        Route("/cobr", automatico_routes.list_cobrs, methods=["GET"]),
        Route("/cobr/{txid}", automatico_routes.get_cobr, methods=["GET"]),
        Route("/webhookrec", webhook_routes.put_webhook_rec, methods=["PUT"]),
        Route("/webhookrec", webhook_routes.get_webhook_rec, methods=["GET"]),
        Route("/webhookrec", webhook_routes.delete_webhook_rec, methods=["DELETE"]),
        Route("/webhookcobr", webhook_routes.put_webhook_cobr, methods=["PUT"]),
        Route("/webhookcobr", webhook_routes.get_webhook_cobr, methods=["GET"]),
        Route("/webhookcobr", webhook_routes.delete_webhook_cobr, methods=["DELETE"]),
    ]
    app = Starlette(routes=routes)
    app.state.provider = provider if provider is not None else SandboxProvider()
    return app
