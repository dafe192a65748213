"""A person's path through the dashboard in a real browser (Debian's Chromium, headless,
driven by Playwright): sign in, read the day against the JSON report of `pixrecon
reconcile`, open an exception, resolve it with a note, see it stay resolved after
`pixrecon reconcile` runs the day again, and
download the day's exceptions through the day page's link. Screenshots go to
``test-artifacts/dashboard/``.

Chromium is required under CI (``CI=true``); elsewhere the test is skipped without it."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from sqlalchemy import Engine

from reconcile.formats import brl
from tests.cli_support import run_pixrecon
from tests.dashboard.support import PASSWORD, figure, judged, played_with_dashboard
from tests.integration.scenario_day import PlayedDay

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"


def _shot(page: Any, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def _fits(page: Any) -> None:
    """Nothing spills out of the page's card, and the page never scrolls sideways: a
    person reading on a laptop (the fixture's 1280 px) sees every column at once."""
    widths = page.evaluate(
        """() => { const m = document.querySelector('main');
          return [m.scrollWidth, m.clientWidth,
                  document.documentElement.scrollWidth, window.innerWidth]; }"""
    )
    assert widths[0] <= widths[1], (page.url, widths)
    assert widths[2] <= widths[3], (page.url, widths)


def _reconcile_command(day: PlayedDay, tmp_path: Path) -> dict[str, Any]:
    """``pixrecon reconcile --format json`` of the played day, run as finance runs it,
    with the node's own settings (the day is already fetched: ``--no-poll``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIXRECON_")}
    for name, value in day.settings.model_dump(exclude_defaults=True).items():
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)  # as README's settings table writes lists
        env[f"PIXRECON_{name.upper()}"] = value if isinstance(value, str) else json.dumps(value)
    ran = run_pixrecon(
        "reconcile",
        "--date",
        day.day.isoformat(),
        "--no-poll",
        "--format",
        "json",
        cwd=tmp_path,
        env=env,
    )
    assert ran.returncode in (0, 1), ran.stderr
    report: dict[str, Any] = json.loads(ran.stdout)
    assert report["exit_code"] == ran.returncode
    return report


def test_a_person_works_the_day_in_a_browser(
    engine: Engine, browser_page: Any, tmp_path: Path
) -> None:
    page = browser_page
    shots = ARTIFACTS / engine.dialect.name
    with played_with_dashboard(engine, "business-day.json") as day:
        judged(day)  # the worker's polls and confirmations
        report = _reconcile_command(day, tmp_path)
        url = day.node.url

        # Signing in lands on the latest reconciled day: the played one.
        page.goto(url + "/dashboard")
        assert "/dashboard/login" in page.url
        page.fill("input[name=name]", "alice")
        page.fill("input[name=password]", PASSWORD)
        page.click("button:has-text('Sign in')")
        page.wait_for_url(url + "/dashboard/")
        _shot(page, shots, "1-day")
        _fits(page)
        assert figure(page, "date") == day.day.strftime("%d/%m/%Y")
        assert report["verdict"].replace("_", " ") in page.inner_text(".summary").lower()
        bridge = report["bridge"]
        assert figure(page, "bridge.opening") == brl(bridge["opening_cents"])
        assert figure(page, "bridge.closing") == brl(bridge["closing_cents"])
        assert figure(page, "totals.credits.api") == brl(report["totals"]["credits"]["api"])
        assert figure(page, "totals.debits.statement") == brl(
            report["totals"]["debits"]["statement"]
        )
        assert figure(page, "balance.drift") == brl(report["balance_drift_cents"])
        assert figure(page, "med.debited") == brl(report["med"]["debited_cents"])
        for status, n in report["charges"].items():
            assert figure(page, f"charges.{status}") == str(n)
        opened = len(report["exceptions"])
        assert figure(page, "open_exceptions") == str(opened)

        # The day's exceptions; the most urgent first. Open one and resolve it.
        page.click("a:has-text('exceptions remaining')")
        page.wait_for_selector("table.cases")
        _shot(page, shots, "2-exceptions")
        _fits(page)
        assert page.locator("tr[data-case]").count() == opened
        case_id = int(page.locator("tr[data-case]").first.get_attribute("data-case"))
        page.click(f"tr[data-case='{case_id}'] a")
        page.wait_for_selector("[data-figure='case.state']")
        assert figure(page, "case.state") == "open"
        _fits(page)
        entry = next(e for e in report["exceptions"] if e["case_id"] == case_id)
        assert entry["ref"] in page.inner_text("table.facts")
        # With the Pix copia-e-cola of the refund pasted in: no spaces for 270 characters.
        pasted = "00020126580014br.gov.bcb.pix0136" * 8
        page.fill(
            "form[action$='/resolve'] textarea",
            f"refunded to the payer, ticket 4711, code {pasted}",
        )
        page.click("button:has-text('Resolve')")
        page.wait_for_selector("[data-figure='case.state']:has-text('resolved')")
        _fits(page)
        history = page.inner_text("table[data-table=events]")
        assert "dashboard:alice" in history
        assert "refunded to the payer, ticket 4711" in history
        _shot(page, shots, "3-resolved")

        # Finance reconciles the day again: the case stays resolved.
        again = _reconcile_command(day, tmp_path)
        assert again["run_id"] != report["run_id"]
        assert case_id not in {e["case_id"] for e in again["exceptions"]}
        page.reload()
        assert figure(page, "case.state") == "resolved"
        page.goto(url + f"/dashboard/?date={day.day.isoformat()}")
        assert figure(page, "open_exceptions") == str(opened - 1)

        # The CSV of the day's exceptions, from the day page's download links: the run
        # after the resolution no longer counts the resolved one.
        with page.expect_download() as download_info:
            page.click("a[data-download='exceptions-csv']")
        download = download_info.value
        assert download.suggested_filename == f"exceptions-{day.day.isoformat()}.csv"
        target = shots / download.suggested_filename
        download.save_as(str(target))
        rows = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
        assert len(rows) == opened - 1
        assert str(case_id) not in {row["case_id"] for row in rows}
        assert all(row["key"].startswith(f"exc:{day.day.isoformat()}:") for row in rows)

        # Recent days at a glance: the charts are drawn on the server.
        page.click("nav a:has-text('Recent days')")
        page.wait_for_selector("svg.chart")
        assert page.locator("svg.chart").count() == 4
        _shot(page, shots, "4-recent")
        _fits(page)

        # On a phone's 375 px the header wraps and wide tables scroll inside their card:
        # the page itself never scrolls sideways, and "Sign out" stays on screen.
        page.set_viewport_size({"width": 375, "height": 800})
        for path in (
            f"/dashboard/?date={day.day.isoformat()}",
            "/dashboard/exceptions",
            f"/dashboard/exceptions/{case_id}",
            "/dashboard/recent",
        ):
            page.goto(url + path)
            _fits(page)
            box = page.locator("header button").last.bounding_box()
            assert box is not None
            assert box["x"] + box["width"] <= 375, (path, box)
        # A chart keeps labels a person can read, scrolling inside its figure instead.
        label = page.locator("svg.chart .tick").first.bounding_box()
        assert label is not None
        assert label["height"] >= 9, label
        _shot(page, shots, "5-phone-case")
