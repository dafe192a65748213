"""Who may see and change what: the dashboard is closed without users, asks for a sign-in,
and refuses a post without the session's CSRF token — changing nothing."""

from __future__ import annotations

import httpx
from sqlalchemy import Engine, func, select

from pixrecon.node import Node
from reconcile.db import session_scope
from reconcile.models import CaseEvent, ExceptionCase
from sandbox.server import BackgroundServer
from tests.conftest import RunningNode, make_settings
from tests.dashboard.support import PASSWORD, csrf_of, seed_case, sign_in


def _state(engine: Engine, case_id: int) -> tuple[str, int]:
    with session_scope(engine) as session:
        case = session.get(ExceptionCase, case_id)
        assert case is not None
        events = session.execute(
            select(func.count()).where(CaseEvent.case_id == case_id)  # type: ignore[arg-type]
        ).scalar_one()
        return case.state, int(events)


def test_without_users_the_dashboard_is_not_there(engine: Engine) -> None:
    settings = make_settings(engine.url.render_as_string(hide_password=False))
    with Node(settings, engine) as node, BackgroundServer(node.app) as server:
        for method, path in (("GET", "/dashboard/"), ("GET", "/dashboard/exceptions")):
            answer = httpx.request(method, server.url + path)
            assert answer.status_code == 404
            assert "not configured" in answer.text
            assert "PIXRECON_DASHBOARD_USERS" in answer.text
        # The receiver is untouched.
        assert httpx.get(server.url + "/healthz").status_code == 200


def test_an_unauthenticated_visitor_is_sent_to_sign_in(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    case_id = seed_case(engine)
    url = dashboard_node.url
    first = httpx.get(url + "/dashboard")
    assert first.status_code in (301, 307)
    for path in ("/dashboard/", "/dashboard/exceptions", f"/dashboard/exceptions/{case_id}"):
        answer = httpx.get(url + path)
        assert answer.status_code == 303
        assert answer.headers["location"].startswith("/dashboard/login?next=")
    assert httpx.get(url + "/dashboard/exceptions.csv").status_code == 303
    # A post without a session is refused outright, whatever it carries.
    refused = httpx.post(
        url + f"/dashboard/exceptions/{case_id}/resolve", data={"note": "x", "csrf": "x"}
    )
    assert refused.status_code == 401
    assert _state(engine, case_id) == ("open", 0)


def test_signing_in_needs_the_right_password(dashboard_node: RunningNode) -> None:
    client = httpx.Client(base_url=dashboard_node.url, follow_redirects=False)
    page = client.get("/dashboard/login")
    assert page.status_code == 200
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    token = csrf_of(page.text)
    for name, password in (("alice", "wrong"), ("nobody", PASSWORD)):
        answer = client.post(
            "/dashboard/login", data={"csrf": token, "name": name, "password": password}
        )
        assert answer.status_code == 401
        assert "Wrong name or password" in answer.text
    # The login form is a form like any other: no token, no sign-in.
    forged = client.post("/dashboard/login", data={"name": "alice", "password": PASSWORD})
    assert forged.status_code == 403
    good = client.post(
        "/dashboard/login", data={"csrf": token, "name": "alice", "password": PASSWORD}
    )
    assert good.status_code == 303
    cookie = good.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "path=/dashboard" in cookie
    assert "samesite=lax" in cookie
    assert client.get("/dashboard/").status_code == 200


def test_a_forged_post_is_refused_and_changes_nothing(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    case_id = seed_case(engine)
    client = sign_in(dashboard_node.url)
    page = client.get(f"/dashboard/exceptions/{case_id}")
    assert page.status_code == 200
    token = csrf_of(page.text)
    for action in ("acknowledge", "resolve"):
        path = f"/dashboard/exceptions/{case_id}/{action}"
        for data in ({"note": "forged"}, {"note": "forged", "csrf": "not-the-token"}):
            answer = client.post(path, data=data)
            assert answer.status_code == 403, (action, data)
    assert _state(engine, case_id) == ("open", 0)
    # Another user's token is no good either: it belongs to another session.
    other = sign_in(dashboard_node.url, "bob", "another one")
    other_token = csrf_of(other.get("/dashboard/").text)
    answer = client.post(
        f"/dashboard/exceptions/{case_id}/resolve", data={"note": "x", "csrf": other_token}
    )
    assert answer.status_code == 403
    assert _state(engine, case_id) == ("open", 0)
    # With its own token the same post goes through, and is audited.
    answer = client.post(
        f"/dashboard/exceptions/{case_id}/resolve", data={"note": "refunded", "csrf": token}
    )
    assert answer.status_code == 303
    assert _state(engine, case_id) == ("resolved", 1)


def test_resolving_needs_a_note_and_every_action_is_audited(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    case_id = seed_case(engine)
    client = sign_in(dashboard_node.url)
    token = csrf_of(client.get(f"/dashboard/exceptions/{case_id}").text)
    path = f"/dashboard/exceptions/{case_id}"
    answer = client.post(f"{path}/resolve", data={"note": "   ", "csrf": token})
    assert answer.status_code == 303
    assert answer.headers["location"] == f"{path}?error=note"
    assert _state(engine, case_id) == ("open", 0)
    client.post(f"{path}/acknowledge", data={"note": "", "csrf": token})
    client.post(f"{path}/resolve", data={"note": "refunded R$ 5,00", "csrf": token})
    assert _state(engine, case_id) == ("resolved", 2)
    with session_scope(engine) as session:
        events = session.execute(select(CaseEvent).order_by(CaseEvent.id)).scalars().all()  # type: ignore[arg-type]
        assert [(e.action, e.actor, e.note, e.previous_state) for e in events] == [
            ("acknowledge", "dashboard:alice", None, "open"),
            ("resolve", "dashboard:alice", "refunded R$ 5,00", "acknowledged"),
        ]
    history = client.get(path).text
    assert "dashboard:alice" in history
    assert "refunded R$ 5,00" in history
    # Resolved, it offers a reopening only, said and audited as one.
    assert f"{path}/reopen" in history
    assert f"{path}/acknowledge" not in history
    client.post(f"{path}/reopen", data={"note": "the payer disputes it", "csrf": token})
    assert _state(engine, case_id) == ("open", 3)
    with session_scope(engine) as session:
        events = session.execute(select(CaseEvent)).scalars().all()
        last = max(events, key=lambda event: event.id or 0)
        assert (last.action, last.previous_state) == ("reopen", "resolved")
    assert (
        client.post(
            "/dashboard/exceptions/999999/resolve", data={"note": "x", "csrf": token}
        ).status_code
        == 404
    )


def test_signing_out_ends_the_session(dashboard_node: RunningNode) -> None:
    client = sign_in(dashboard_node.url)
    other = sign_in(dashboard_node.url)
    token = csrf_of(client.get("/dashboard/").text)
    # A copy of the cookie, as a shared computer's browser or a thief would keep it.
    copied = httpx.Client(
        base_url=dashboard_node.url, follow_redirects=False, timeout=10, cookies=client.cookies
    )
    assert copied.get("/dashboard/").status_code == 200
    assert client.post("/dashboard/logout", data={}).status_code == 403
    assert client.post("/dashboard/logout", data={"csrf": token}).status_code == 303
    assert client.get("/dashboard/").status_code == 303
    assert copied.get("/dashboard/").status_code == 303
    assert copied.post("/dashboard/exceptions/1/resolve", data={"csrf": token}).status_code == 401
    # Only that session ended: the same person signed in elsewhere still is.
    assert other.get("/dashboard/").status_code == 200


def test_an_action_from_a_stale_page_changes_nothing(
    engine: Engine, dashboard_node: RunningNode
) -> None:
    case_id = seed_case(engine)
    path = f"/dashboard/exceptions/{case_id}"
    first, second = (
        sign_in(dashboard_node.url),
        sign_in(dashboard_node.url, name="bob", password="another one"),
    )
    stale = second.get(path).text  # open: offers acknowledge and resolve
    token = csrf_of(first.get(path).text)
    first.post(f"{path}/resolve", data={"note": "refunded by Pix", "csrf": token})
    assert _state(engine, case_id) == ("resolved", 1)
    for action in ("acknowledge", "resolve"):
        answer = second.post(
            f"{path}/{action}",
            data={"note": "calling the payer", "csrf": csrf_of(stale), "seen": "open"},
        )
        assert answer.headers["location"] == f"{path}?error=changed"
    # Without the page's state, an action that does not apply to the case is refused too.
    second.post(f"{path}/resolve", data={"note": "again", "csrf": csrf_of(stale)})
    assert _state(engine, case_id) == ("resolved", 1)
    shown = second.get(f"{path}?error=changed").text
    assert "Nothing was changed" in shown
    assert "It is resolved now" in shown
    # Reopening an open case is no reopening either.
    second.post(f"{path}/reopen", data={"csrf": csrf_of(stale), "seen": "resolved"})
    assert _state(engine, case_id) == ("open", 2)
    answer = second.post(f"{path}/reopen", data={"csrf": csrf_of(stale), "seen": "resolved"})
    assert answer.headers["location"] == f"{path}?error=changed"
    assert _state(engine, case_id) == ("open", 2)
    with session_scope(engine) as session:
        case = session.get(ExceptionCase, case_id)
        assert case is not None
        # Reopened without a note, it no longer says how it was resolved.
        assert case.note is None


def test_guessing_passwords_is_throttled(dashboard_node: RunningNode) -> None:
    client = httpx.Client(base_url=dashboard_node.url, follow_redirects=False, timeout=10)
    token = csrf_of(client.get("/dashboard/login").text)
    codes = [
        client.post(
            "/dashboard/login", data={"csrf": token, "name": "alice", "password": f"guess{i}"}
        ).status_code
        for i in range(11)
    ]
    assert codes == [401] * 10 + [429]
    # Even the right password waits out the window.
    right = client.post(
        "/dashboard/login", data={"csrf": token, "name": "alice", "password": PASSWORD}
    )
    assert right.status_code == 429
