"""The dogana page's FastAPI app, mounted by the Airflow API server at /dogana.

    GET /dogana/                          every table of every receiver the user may read
    GET /dogana/receipts/{conn}/{table}   a table's last receipts: outcome, checks, who published
    GET /dogana/schemas/openlineage/DoganaDatasetFacet.json
                                          the OpenLineage facet's JSON Schema, as shipped (public:
                                          a schema, no data), where its events' _schemaURL points

The receivers are the connection ids of ``[dogana] ui_receivers`` (comma separated; default
dogana_default). Each is read through DoganaHook.committed, the one committed state the
ClaimsSensor reads its ledgers in (dogana_provider.report.status.read_status, as `dogana status`).

Permission: Airflow authenticates no plugin app, so this one does, as the core API does: the
user is the JWT of the request (the UI's session cookie, or a bearer token), and a receiver is
shown only to a user the auth manager lets read its connection (is_authorized_connection,
method GET, on that connection id: SimpleAuthManager's op role or above; with FAB, "can read on
Connections"). A request without a user is sent to Airflow's login page; a user who may read
no receiver sees none of them, and neither their tables nor their names.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from dogana_provider.settings import ui_receivers
from dogana_provider.ui import page

RECEIPTS = 50  # receipts shown on a table's page
RUNS = 5  # each table's sources and last publications' lineage shown on the overview
PERMISSION = "read (GET) on the receiver's Connection"


async def user_or_login(request: Request) -> Any:
    """The request's Airflow user, as the core API resolves it; None when there is none."""
    from airflow.api_fastapi.core_api.security import get_user, oauth2_scheme
    from fastapi.security import HTTPBearer

    try:
        return await get_user(
            request,
            await oauth2_scheme(request),
            await HTTPBearer(auto_error=False)(request),
        )
    except HTTPException as exc:
        if exc.status_code in (401, 403):
            return None
        raise


def readable(user: Any, conn_ids: list[str]) -> list[str]:
    """The receivers whose connection this user may read."""
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import ConnectionDetails

    manager = get_auth_manager()
    return [
        conn_id
        for conn_id in conn_ids
        if manager.is_authorized_connection(
            method="GET", details=ConnectionDetails(conn_id=conn_id), user=user
        )
    ]


def login(request: Request) -> RedirectResponse:
    from airflow.api_fastapi.app import get_auth_manager

    return RedirectResponse(get_auth_manager().get_url_login(next_url=str(request.url)))


User = Annotated[Any, Depends(user_or_login)]

app = FastAPI(title="dogana claims", docs_url=None, redoc_url=None, openapi_url=None)


@app.get("/", response_class=HTMLResponse)
def overview(request: Request, user: User) -> Response:
    from dogana_provider.hooks.dogana import DoganaHook
    from dogana_provider.report.status import read_status

    if user is None:
        return login(request)
    allowed = readable(user, ui_receivers())
    if not allowed:
        return HTMLResponse(
            page.refusal(f"You may read no receiver: this page needs {PERMISSION}."),
            status_code=403,
        )
    now = datetime.now(UTC)
    statuses = [
        read_status(DoganaHook(conn_id), now, name=conn_id, lineage=RUNS) for conn_id in allowed
    ]
    links = {
        (status.receiver, table.table): page.Links(
            f"receipts/{quote(status.receiver)}/{quote(table.table)}",
            asset_page(status.receiver, table.table, "../"),
        )
        for status in statuses
        for table in status.tables
    }
    return HTMLResponse(page.overview(statuses, links))


@app.get("/receipts/{conn_id}/{table}", response_class=HTMLResponse)
def receipts(request: Request, conn_id: str, table: str, user: User) -> Response:
    from dogana_provider.hooks.dogana import DoganaHook
    from dogana_provider.receiver.receiver import UnknownTable
    from dogana_provider.report.status import read_status

    if user is None:
        return login(request)
    if conn_id not in readable(user, ui_receivers()):
        # The same answer for a receiver that is not listed: its existence is not told either.
        return HTMLResponse(
            page.refusal(f"You may not read this receiver: this page needs {PERMISSION}."),
            status_code=403,
        )
    try:
        status = read_status(
            DoganaHook(conn_id), datetime.now(UTC), tables=[table], receipts=RECEIPTS
        )
    except UnknownTable:
        return HTMLResponse(page.refusal(f"No table {table!r} is registered."), 404)
    (found,) = status.tables
    return HTMLResponse(
        page.receipts_page(conn_id, table, found.receipts, publishers(conn_id, table))
    )


@app.get("/schemas/openlineage/DoganaDatasetFacet.json")
def facet_schema() -> Response:
    schema = Path(__file__).parent.parent / "lineage" / "DoganaDatasetFacet.json"
    return Response(schema.read_bytes(), media_type="application/schema+json")


def asset_page(conn_id: str, table: str, root: str) -> str | None:
    """The Airflow UI's page of the table's Asset (dogana://conn/table), when Airflow has it."""
    from airflow.models.asset import AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from dogana_provider.operators.publish import dogana_asset

    with create_session() as session:
        found = session.scalar(
            select(AssetModel.id).where(AssetModel.uri == dogana_asset(table, conn_id).uri)
        )
    return None if found is None else f"{root}assets/{found}"


def publishers(conn_id: str, table: str) -> Any:
    """receipt -> "dag_id / run_id / task_id" of the Asset event that carried its publication;
    None for a receipt that published nothing."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    from dogana_core.gate import Outcome
    from dogana_provider.operators.publish import dogana_asset

    with create_session() as session:
        events = session.execute(
            select(
                AssetEvent.extra,
                AssetEvent.source_dag_id,
                AssetEvent.source_run_id,
                AssetEvent.source_task_id,
            )
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetModel.uri == dogana_asset(table, conn_id).uri)
            .order_by(AssetEvent.id.desc())
            .limit(RECEIPTS * 4)
        ).all()
    by_publication = {
        (extra or {}).get("publication_id"): " / ".join(str(part) for part in source)
        for extra, *source in events
        if source[0] is not None
    }
    # Only an acceptance published anything: a rejection's publication_id is the head it left
    # as it found it, which another run published.
    return lambda receipt: (
        by_publication.get(receipt.publication_id) if receipt.outcome is Outcome.ACCEPTED else None
    )
