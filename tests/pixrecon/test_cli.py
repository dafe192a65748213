"""The console script as a user runs it: real processes, real ports."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.cli_support import clean_env, run_pixrecon
from tests.conftest import SECRET, free_port, wait_for
from tests.factories import pix

BRL = r"-?R\$ \d{1,3}(?:\.\d{3})*,\d{2}"


def test_serve_refuses_to_start_without_authentication(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pixrecon", "serve", "--port", "1"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "PIXRECON_WEBHOOK_SECRETS" in result.stderr


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    port = free_port()
    env = {
        **clean_env(),
        "PIXRECON_WEBHOOK_SECRETS": f"old-secret,{SECRET}",
        "PIXRECON_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "pixrecon", "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(url + "/healthz", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_for(up, timeout=30, interval=0.2)
        yield url, env
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_serve_accepts_processes_and_lists_events(
    served: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    url, env = served
    body = {"pix": [pix(), pix()]}
    for secret in ("old-secret", SECRET):  # both rotated secrets are accepted
        response = httpx.post(
            url + "/webhooks/qrcode/pix", json=body, headers={"X-Webhook-Secret": secret}
        )
        assert response.status_code == 200
    assert response.json() == {"items": 2, "new": 0, "duplicates": 2}

    def listed() -> list[dict[str, object]]:
        result = run_pixrecon("events", "--format", "json", cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        items: list[dict[str, object]] = json.loads(result.stdout)
        return items

    wait_for(lambda: all(i["status"] == "processed" for i in listed()), timeout=15, interval=0.3)
    items = listed()
    assert len(items) == 2
    for item in items:
        assert {"id", "source", "kind", "key", "status", "received_at"} <= item.keys()
        assert item["source"] == "webhook"
        assert item["duplicates"] == 1
        assert str(item["key"]).startswith("pix:E")
    shown = run_pixrecon("events", "show", str(items[0]["id"]), "-f", "json", cwd=tmp_path, env=env)
    assert json.loads(shown.stdout)["payload"]["endToEndId"] == str(items[0]["key"])[4:]


@pytest.mark.postgres
def test_db_upgrade_on_postgres_and_refusal_before_it(
    postgres_admin_url: str, tmp_path: Path
) -> None:
    name = f"pixrecon_cli_{uuid.uuid4().hex[:8]}"
    admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(postgres_admin_url).set(database=name).render_as_string(hide_password=False)
    env = {**clean_env(), "PIXRECON_DATABASE_URL": url}
    try:
        refused = run_pixrecon("events", cwd=tmp_path, env=env)
        assert refused.returncode == 2
        assert "pixrecon db upgrade" in refused.stderr
        upgraded = run_pixrecon("db", "upgrade", cwd=tmp_path, env=env)
        assert upgraded.returncode == 0, upgraded.stderr
        listed = run_pixrecon("events", "--format", "json", cwd=tmp_path, env=env)
        assert listed.returncode == 0, listed.stderr
        assert json.loads(listed.stdout) == []
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_poll_command_finds_pix_and_resumes_its_window(tmp_path: Path) -> None:
    from decimal import Decimal

    from sandbox.app import create_app
    from sandbox.defaults import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
    from sandbox.server import BackgroundServer
    from sandbox.state import SandboxProvider

    provider = SandboxProvider(seed=5)
    for cents in (101, 202, 303):
        provider.receive_pix(Decimal(cents) / 100)
    with BackgroundServer(create_app(provider)) as sandbox:
        env = {
            **clean_env(),
            "PIXRECON_DATABASE_URL": f"sqlite:///{tmp_path / 'poll.db'}",
            "PIXRECON_QRCODE_API_URL": sandbox.url,
            "PIXRECON_QRCODE_CLIENT_ID": DEFAULT_CLIENT_ID,
            "PIXRECON_QRCODE_CLIENT_SECRET": DEFAULT_CLIENT_SECRET,
        }
        # Only serve, demo and db upgrade create a database.
        assert run_pixrecon("db", "upgrade", cwd=tmp_path, env=env).returncode == 0
        first = run_pixrecon("poll", "--format", "json", cwd=tmp_path, env=env)
        assert first.returncode == 0, first.stderr
        polled = json.loads(first.stdout)
        # The same fetch as the worker's job: the charges were asked for too.
        assert set(polled.pop("families")["qrcode"]["steps"]) == {
            "received_pix",
            "cob",
            "cobv",
            "cobr",
            "rec",
            "recurrences",
            "refunds_in_progress",
        }
        assert polled | {"start": "", "end": ""} == {
            "start": "",
            "end": "",
            "seen": 3,
            "new": 3,
            "invalid": 0,
            # Nothing was notified before: no pending row for the listing to settle.
            "settled": 0,
            "processed": 3,
        }
        provider.receive_pix(Decimal("4.04"))
        again = json.loads(run_pixrecon("poll", "--format", "json", cwd=tmp_path, env=env).stdout)
        assert (again["new"], again["processed"]) == (1, 1)
        listed = json.loads(
            run_pixrecon("events", "--format", "json", cwd=tmp_path, env=env).stdout
        )
        assert {item["source"] for item in listed} == {"poll"}
        assert len(listed) == 4

        unconfigured = run_pixrecon("poll", cwd=tmp_path, env=clean_env())
        assert unconfigured.returncode == 2
        assert "PIXRECON_QRCODE_API_URL" in unconfigured.stderr


def test_webhooks_register_points_both_api_families_at_the_receiver(tmp_path: Path) -> None:
    from pixrecon.sandbox_wiring import sandbox_servers, sandbox_settings
    from sandbox.defaults import DEFAULT_PIX_KEY
    from sandbox.state import SandboxProvider

    provider = SandboxProvider(seed=9)
    with sandbox_servers(provider) as urls:
        env = {
            **clean_env(),
            "PIXRECON_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}",
            "PIXRECON_WEBHOOK_SECRETS": "s3cret,older",
            **sandbox_settings(urls),
        }
        result = run_pixrecon(
            "webhooks",
            "register",
            "--base-url",
            "https://pix.example.com/",
            "--chave",
            DEFAULT_PIX_KEY,
            "--format",
            "json",
            cwd=tmp_path,
            env=env,
        )
        assert result.returncode == 0, result.stderr + result.stdout
        rows = json.loads(result.stdout)
        assert {row["result"] for row in rows} == {"registered"}
        assert len(rows) == 3 + 5
        qrcode_url = "https://pix.example.com/webhooks/qrcode"
        registered = provider.webhooks.get(DEFAULT_PIX_KEY)
        assert registered is not None
        assert registered["webhookUrl"] == qrcode_url
        for slot in (provider.rec_webhook, provider.cobr_webhook):
            current = slot.get()
            assert current is not None
            assert current["webhookUrl"] == qrcode_url
        registrations = provider.accounts.directory.webhooks()
        assert {r.type for r in registrations} == {
            "TRANSFER",
            "RECEIVE",
            "REFUND",
            "CASHOUT",
            "INFRACTION",
        }
        assert {(r.url, r.secret_header_name, r.secret_header_value) for r in registrations} == {
            ("https://pix.example.com/webhooks/accounts", "X-Webhook-Secret", "s3cret")
        }
        assert "warning" not in result.stderr, result.stderr

        # Without --chave, or to a plain-HTTP address elsewhere: registered, and said.
        unsure = run_pixrecon(
            "webhooks", "register", "--base-url", "http://pix.example.com", cwd=tmp_path, env=env
        )
        assert unsure.returncode == 0, unsure.stderr
        said = " ".join(unsure.stderr.split())
        assert "no --chave: no Pix webhook is registered" in said
        assert "is plain HTTP" in said

    # The provider gone: the table says which failed, one line what to do, exit 2.
    gone = run_pixrecon(
        "webhooks",
        "register",
        "--base-url",
        "https://pix.example.com/",
        "--chave",
        DEFAULT_PIX_KEY,
        cwd=tmp_path,
        env={**env, "PIXRECON_PROVIDER_RETRY_SECONDS": "0", "PIXRECON_LOG_JSON": "0"},
    )
    assert gone.returncode == 2, gone.stderr
    assert "…" not in gone.stdout  # a URL folded, never cut short
    errors = [line for line in gone.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, gone.stderr
    assert "8 of 8 registrations failed" in errors[0]
    assert "run it again once the provider answers" in errors[0]
    assert "Traceback" not in gone.stderr


def test_events_ignore_and_replay(tmp_path: Path) -> None:
    from migrations.apply import upgrade
    from reconcile.db import create_db_engine, session_scope
    from reconcile.inbox import NewItem, dump_json, store_items
    from reconcile.models import InboxItem, Source
    from tests.factories import pix as pix_body

    url = f"sqlite:///{tmp_path / 'events.db'}"
    engine = create_db_engine(url)
    upgrade(engine)
    with session_scope(engine) as session:
        (item_id,) = store_items(
            session,
            [NewItem(kind="pix", key="pix:x", payload=dump_json({"valor": "oops"}))],
            source=Source.WEBHOOK,
        ).new_ids
    env = {**clean_env(), "PIXRECON_DATABASE_URL": url}
    failed = run_pixrecon("events", "replay", str(item_id), cwd=tmp_path, env=env)
    assert "failed" in failed.stdout, failed.stderr
    ignored = run_pixrecon(
        "events", "ignore", str(item_id), "--reason", "test payload", cwd=tmp_path, env=env
    )
    assert ignored.returncode == 0, ignored.stderr
    shown = json.loads(
        run_pixrecon("events", "show", str(item_id), "-f", "json", cwd=tmp_path, env=env).stdout
    )
    assert (shown["status"], shown["error"]) == ("ignored", "ignored: test payload")
    # The payload is mended (as an operator would after a fix) and replayed.
    with session_scope(engine) as session:
        item = session.get(InboxItem, item_id)
        assert item is not None
        item.payload = dump_json(pix_body())
    replayed = run_pixrecon("events", "replay", str(item_id), cwd=tmp_path, env=env)
    assert "processed" in replayed.stdout, replayed.stderr
    missing = run_pixrecon("events", "replay", "999", cwd=tmp_path, env=env)
    assert missing.returncode == 2
    # Processed, its effects are stored: calling it ignored would hide them.
    done = run_pixrecon("events", "ignore", str(item_id), "--reason", "x", cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert f"item {item_id} was processed" in done.stderr
    unsaid = run_pixrecon("events", "ignore", str(item_id), "--reason", " ", cwd=tmp_path, env=env)
    assert unsaid.returncode == 2
    assert "needs --reason" in unsaid.stderr
    with session_scope(engine) as session:
        item = session.get(InboxItem, item_id)
        assert item is not None
        assert item.status == "processed"


def test_a_schema_newer_than_this_release_is_named_as_such(
    tmp_path: Path, sqlite_template: Path
) -> None:
    """`pixrecon db upgrade` cannot help with a revision it has never seen: an older
    release facing a newer release's schema says which release to run instead."""
    import shutil
    import sqlite3

    path = tmp_path / "newer.db"
    shutil.copy(sqlite_template, path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE alembic_version SET version_num = '0999'")
    env = {**clean_env(), "PIXRECON_DATABASE_URL": f"sqlite:///{path}"}
    for args in (("events",), ("db", "upgrade")):
        refused = run_pixrecon(*args, cwd=tmp_path, env=env)
        assert refused.returncode == 2, refused.stdout
        assert "at revision 0999, newer than this pixrecon knows" in refused.stderr
        assert "run the pixrecon release that migrated it" in refused.stderr
    older = tmp_path / "older.db"
    shutil.copy(sqlite_template, older)
    env["PIXRECON_DATABASE_URL"] = f"sqlite:///{older}"
    kept = run_pixrecon("db", "upgrade", "--revision", "0010", cwd=tmp_path, env=env)
    assert kept.returncode == 0, kept.stderr
    assert "(already past 0010: an upgrade never goes back)" in " ".join(kept.stdout.split())
