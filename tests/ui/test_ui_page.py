"""The dogana page in the Airflow UI: one real `airflow api-server`, opened in headless Chromium.

The server runs once for the module, with the plugin as installed (entry point airflow.plugins)
and Airflow's SimpleAuthManager: user op (role op, who may read connections) and user viewer
(role viewer, who may not). Its receivers are two, holding the tables of several_tables.py: a
SQLite file and a PostgreSQL schema. Chromium opens the page with the session cookie a login
sets, and the tests assert what a person sees; the screenshot is saved for a person to look at
(its path is printed, under DOGANA_SCREENSHOTS when set). The framed tests open the page as a
person does, through Airflow's own UI (/plugin/dogana, the view's iframe and its sandbox), in a
1,280 px window. Each orders table has an Asset with one event per acceptance (run_1, run_2),
as its publish tasks would have left them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser import Browser, free_port
from several_tables import Live, filled_receiver

from dogana_provider.report.table import when

pytestmark = pytest.mark.airflow

USERS = {"op": "op-password", "viewer": "viewer-password"}
WIDTH = 1280  # the narrowest window the page is made for: a laptop's

FRAME_DOCUMENT = "document.querySelector('iframe')?.contentDocument"
MEASURE = f"""(() => {{
  const frame = document.querySelector('iframe'), inner = {FRAME_DOCUMENT};
  const width = inner.documentElement.clientWidth;
  const cut = [...inner.querySelectorAll('th, td, svg')]
    .filter(cell => {{
      const box = cell.getBoundingClientRect();
      return box.left < -0.5 || box.right > width + 0.5;
    }})
    .map(cell => cell.textContent.slice(0, 40));
  return {{
    path: inner.location.pathname, width, cut, cells: inner.querySelectorAll('td').length,
    scrolled: inner.documentElement.scrollWidth - width,
    frame_right: frame.getBoundingClientRect().right, window: window.innerWidth,
  }};
}})()"""
"""What of the framed page a person cannot see: every table cell (and the regions' strip)
measured against the frame's viewport, the page's width past it, the frame against the window."""


@dataclass
class Server:
    base: str
    receivers: dict[str, Live]  # connection id -> its receiver
    browser: Browser
    shots: Path
    assets: dict[str, int]  # connection id -> the Asset id of its orders table

    def framed(self, user: str, inner: str = "") -> dict[str, Any]:
        """Open Airflow's own page of the dogana view (Browse -> Claims), optionally deep at
        the framed page's inner path, and wait for the framed page's first table."""
        self.browser.set_cookie(f"{self.base}/", "_token", self.token(user))
        self.browser.open(f"{self.base}/plugin/dogana{inner}")
        try:
            self.browser.wait_for(f"!!({FRAME_DOCUMENT})?.querySelector('table td')")
        except TimeoutError:
            seen = self.browser.evaluate(
                "[location.href, document.querySelector('iframe')?.src,"
                f" ({FRAME_DOCUMENT})?.location?.href, document.body.innerText.slice(0, 500)]"
            )
            raise AssertionError(f"no framed page: {seen}") from None
        return dict(self.browser.evaluate(MEASURE))

    def token(self, user: str) -> str:
        request = urllib.request.Request(
            f"{self.base}/auth/token",
            data=json.dumps({"username": user, "password": USERS[user]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return str(json.load(answer)["access_token"])

    def open_as(self, user: str, path: str) -> str:
        self.browser.set_cookie(f"{self.base}/", "_token", self.token(user))
        return self.browser.open(f"{self.base}{path}")

    def get(self, path: str, cookie: str | None = None) -> tuple[int, str, str]:
        """(status, location, body) of a GET, without following a redirect."""

        class Stay(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any) -> None:
                return None

        request = urllib.request.Request(f"{self.base}{path}")
        if cookie is not None:
            request.add_header("Cookie", f"_token={cookie}")
        try:
            with urllib.request.build_opener(Stay).open(request, timeout=30) as answer:
                return answer.status, "", answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("location", ""), error.read().decode()


@pytest.fixture(scope="module")
def server(
    airflow_home: Path, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("ui")
    passwords = work / "passwords.json"
    passwords.write_text(json.dumps(USERS))
    with ExitStack() as stack:
        receivers = {
            "dogana_sqlite": stack.enter_context(filled_receiver("sqlite", work)),
            "dogana_postgres": stack.enter_context(
                filled_receiver("postgres", work, request.getfixturevalue("postgres_url"))
            ),
        }
        assets = published_orders(receivers)
        port = free_port()
        env = {
            key: value
            for key, value in os.environ.items()
            if key != "AIRFLOW__CORE__UNIT_TEST_MODE"  # the server runs as deployed
        }
        env.update(
            {
                "AIRFLOW__CORE__AUTH_MANAGER": "airflow.api_fastapi.auth.managers.simple."
                "simple_auth_manager.SimpleAuthManager",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "op:op,viewer:viewer",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
                "AIRFLOW__DOGANA__UI_RECEIVERS": ",".join(receivers),
                **{f"AIRFLOW_CONN_{c.upper()}": live.connection for c, live in receivers.items()},
            }
        )
        log = (work / "api-server.log").open("w")
        started = time.monotonic()
        process = subprocess.Popen(
            [sys.executable, "-m", "airflow", "api-server", "--port", str(port), "--workers", "1"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        stack.callback(_stop, process)
        base = f"http://127.0.0.1:{port}"
        _wait_healthy(base, process, work / "api-server.log")
        print(f"\napi-server up in {time.monotonic() - started:.1f} s")
        browser = Browser()
        stack.callback(browser.close)
        shots = Path(os.environ.get("DOGANA_SCREENSHOTS") or work)
        shots.mkdir(parents=True, exist_ok=True)
        yield Server(base, receivers, browser, shots, assets)


def published_orders(receivers: dict[str, Live]) -> dict[str, int]:
    """Each receiver's orders table as Airflow knows it after its publish tasks ran: its Asset,
    and one event per acceptance carrying its publication_id, from run_1, run_2, ... (these
    receivers are filled without Airflow: written through Airflow's own models)."""
    from airflow.models.asset import AssetActive, AssetEvent, AssetModel
    from airflow.utils.session import create_session

    from dogana_core.gate import Outcome
    from dogana_provider.operators.publish import dogana_asset

    found = {}
    with create_session() as session:
        for conn_id, live in receivers.items():
            asset = dogana_asset("orders", conn_id)
            model = AssetModel(name=asset.name, uri=asset.uri, group=asset.group)
            session.add(model)
            session.flush()
            session.add(AssetActive.for_asset(model))
            accepted = [
                r for r in live.receiver.receipts("orders") if r.outcome is Outcome.ACCEPTED
            ]
            for number, receipt in enumerate(accepted, start=1):
                session.add(
                    AssetEvent(
                        asset_id=model.id,
                        extra={"publication_id": receipt.publication_id},
                        source_dag_id="dogana_orders",
                        source_run_id=f"run_{number}",
                        source_task_id="orders.publish",
                    )
                )
            found[conn_id] = model.id
    return found


def _wait_healthy(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"airflow api-server exited {process.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{base}/api/v2/monitor/health", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"airflow api-server not healthy in 240 s:\n{log.read_text()[-3000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def rows(text: str, receiver: str) -> dict[str, list[str]]:
    """The receiver's table as a person reads it: table name -> its cells."""
    block = text.split(f"Receiver {receiver} ")[1]
    found = {}
    for line in block.splitlines()[2:]:
        cells = line.split("\t")
        if len(cells) < 9:
            break
        found[cells[0]] = cells
    return found


def test_the_page_shows_every_table_with_its_state_and_dates_and_a_screenshot(
    server: Server,
) -> None:
    text = server.open_as("op", "/dogana/")
    shot = server.browser.screenshot(server.shots / "dogana-claims.png")
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000
    for conn_id, live in server.receivers.items():
        shown = rows(text, conn_id)
        assert sorted(shown) == sorted(live.filled.tables)
        for table, cells in shown.items():
            claims = live.receiver.ledger(table)
            state, complete, deletions, exact = cells[1:5]
            assert state == ("patched" if table == "shipments" else "complete")
            regions = [r for r in claims.regions if r.complete_as_of is not None]
            assert complete == when(min(r.complete_as_of for r in regions))  # type: ignore[type-var]
            assert deletions == when(min(r.deletions_as_of for r in regions))  # type: ignore[type-var]
            assert exact == ("-" if table == "shipments" else complete)
        assert shown["invoices"][4] == shown["invoice_lines"][4], "a group: exact at one instant"


def test_a_patched_day_is_drawn_between_complete_days_with_both_its_dates(
    server: Server,
) -> None:
    server.open_as("op", "/dogana/")
    for conn_id, live in server.receivers.items():
        section = f"document.getElementById('{conn_id}.shipments')"
        fills = server.browser.evaluate(
            f"[...{section}.querySelectorAll('rect')].map(r => r.getAttribute('fill'))"
        )
        assert fills == ["#2e7d32", "#f9a825", "#2e7d32"]
        listed = server.browser.evaluate(f"{section}.querySelector('ul').innerText").splitlines()
        day = live.filled.patched_day
        (patched,) = [line for line in listed if line.startswith(f"[{day},")]
        ledger = live.receiver.ledger("shipments")
        (region,) = [r for r in ledger.regions if str(r.low) == day]
        assert f"complete as of {when(region.complete_as_of)}" in patched
        assert f"deletions as of {when(region.deletions_as_of)}" in patched
        assert region.deletions_as_of < region.complete_as_of  # type: ignore[operator]


def test_a_tables_section_shows_its_sources_and_recent_runs(server: Server) -> None:
    """What fed each table, read by which DAG run and task: its lineage edges, as `dogana
    lineage --output` answers, the refused delivery of orders having written none."""
    server.open_as("op", "/dogana/")
    for conn_id, live in server.receivers.items():
        section = f"document.getElementById('{conn_id}.orders')"
        tables = server.browser.evaluate(
            f"[...{section}.querySelectorAll('table')].map(t => t.innerText)"
        )
        sources, runs = (text.splitlines()[1:] for text in tables)
        assert [line.split("\t")[:2] for line in sources] == [["shop_db: shop.orders", "2"]]
        edges = live.receiver.lineage(output="orders")
        assert [line.split("\t")[2] for line in runs] == [
            "several / run_2 / orders.extract",
            "several / run_1 / orders.extract",
        ]
        assert [line.split("\t")[5] for line in runs] == [e.publication_id[:12] for e in edges]


def test_a_tables_receipts_page_names_each_outcome_and_the_failed_check(server: Server) -> None:
    for conn_id, live in server.receivers.items():
        text = server.open_as("op", f"/dogana/receipts/{conn_id}/orders")
        lines = [line.split("\t") for line in text.splitlines() if "\t" in line][1:]
        assert [cells[1] for cells in lines] == ["rejected", "accepted", "accepted"]
        assert f"{live.filled.rejected_check} FAILED" in lines[0][7]
        assert "FAILED" not in lines[1][7] + lines[2][7]


def test_a_user_who_may_not_read_the_connection_sees_nothing_of_it(server: Server) -> None:
    viewer = server.token("viewer")
    status, _, body = server.get("/dogana/", cookie=viewer)
    assert status == 403
    assert "needs read (GET) on the receiver&#x27;s Connection" in body
    for conn_id, live in server.receivers.items():
        assert conn_id not in body
        assert all(table not in body for table in live.filled.tables)
        status, _, body = server.get(f"/dogana/receipts/{conn_id}/orders", cookie=viewer)
        assert status == 403 and "orders" not in body.split("<body>")[1]


def test_without_a_session_the_page_sends_to_airflows_login(server: Server) -> None:
    status, location, body = server.get("/dogana/")
    assert status == 307 and location.startswith("/auth/login?next=")
    assert "dogana_sqlite" not in body


def test_the_plugin_is_registered_with_its_page_in_the_browse_menu(server: Server) -> None:
    request = urllib.request.Request(
        f"{server.base}/api/v2/plugins", headers={"Authorization": f"Bearer {server.token('op')}"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        plugins = {plugin["name"]: plugin for plugin in json.load(answer)["plugins"]}
    dogana = plugins["dogana"]
    assert [app["url_prefix"] for app in dogana["fastapi_apps"]] == ["/dogana"]
    (view,) = dogana["external_views"]
    assert (view["href"], view["url_route"], view["category"]) == ("dogana/", "dogana", "browse")


def test_in_airflows_frame_no_table_column_is_cut_off_at_1280_px(server: Server) -> None:
    """The page as a person opens it (Browse -> Claims, inside Airflow's own window), in a
    1,280 px window: every cell of every table within the frame, nothing to scroll sideways."""
    server.browser.resize(WIDTH, 900)
    seen = server.framed("op")
    assert seen["path"] == "/dogana/" and seen["cells"] > 0
    assert seen["frame_right"] <= seen["window"] == WIDTH
    assert seen["cut"] == [] and seen["scrolled"] <= 0, seen


def test_in_airflows_frame_no_receipts_column_is_cut_off_at_1280_px(server: Server) -> None:
    server.browser.resize(WIDTH, 900)
    for conn_id in server.receivers:
        seen = server.framed("op", f"/dogana/receipts/{conn_id}/orders")
        assert seen["path"] == f"/dogana/receipts/{conn_id}/orders" and seen["cells"] > 0
        assert seen["cut"] == [] and seen["scrolled"] <= 0, seen


def test_in_airflows_frame_an_asset_link_opens_airflows_asset_page(server: Server) -> None:
    """Airflow's frame allows no top navigation and no new window: the link still takes the
    person to Airflow's page of the table's Asset, in Airflow's window, not inside the frame."""
    server.browser.resize(WIDTH, 900)
    server.framed("op")
    asset = server.assets["dogana_sqlite"]
    link = f"({FRAME_DOCUMENT}).querySelector(\"a[href$='assets/{asset}']\")"
    server.browser.evaluate(f"{link}.scrollIntoView({{block: 'center'}})")
    box = server.browser.evaluate(
        f"""(() => {{
          const frame = document.querySelector('iframe').getBoundingClientRect();
          const box = {link}.getBoundingClientRect();
          return [frame.left + box.left + box.width / 2, frame.top + box.top + box.height / 2];
        }})()"""
    )
    server.browser.click(*box)
    server.browser.wait_for(f"location.pathname === '/assets/{asset}'", timeout=30)
    text = server.browser.wait_for(
        "!document.querySelector('iframe') && document.body.innerText.includes('dogana://')"
        " && document.body.innerText",
        timeout=30,
    )
    assert "dogana://dogana_sqlite/orders" in text


def test_published_by_names_the_run_of_an_acceptance_and_none_for_a_rejection(
    server: Server,
) -> None:
    """A rejection published nothing: it names no run, least of all the one that published
    the head it left as it was."""
    for conn_id in server.receivers:
        text = server.open_as("op", f"/dogana/receipts/{conn_id}/orders")
        lines = [line.split("\t") for line in text.splitlines() if "\t" in line][1:]
        assert [(cells[1], cells[8]) for cells in lines] == [
            ("rejected", "-"),
            ("accepted", "dogana_orders / run_2 / orders.publish"),
            ("accepted", "dogana_orders / run_1 / orders.publish"),
        ]


def test_the_openlineage_facets_schema_url_serves_the_schema_shipped_in_the_package(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The _schemaURL of every dogana facet resolves, without a login, to the very file the
    package ships (lineage/DoganaDatasetFacet.json), under the deployment's [api] base_url."""
    import dogana_provider
    from dogana_provider.lineage.openlineage import schema_url

    monkeypatch.setenv("AIRFLOW__API__BASE_URL", server.base)
    with urllib.request.urlopen(schema_url(), timeout=30) as answer:
        served = answer.read()
    shipped = Path(dogana_provider.__file__).parent / "lineage" / "DoganaDatasetFacet.json"
    assert served == shipped.read_bytes()
    assert schema_url().endswith(f"/dogana/schemas/openlineage/{json.loads(served)['$id']}")
