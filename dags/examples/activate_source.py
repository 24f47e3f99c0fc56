"""Activate a source: a person says a table's rows may be published, and on what terms.

A receiver that requires activation (``dogana require-activation RECEIVER on --by NAME``, or the
provider option ``[dogana] require_activation = True``) publishes nothing for a table until it
is activated: the plan task of its pipeline fails, saying what is missing and how to activate
it. Trigger this DAG by hand from the UI's form, one run per table, filling in:

    table           the receiver's table, e.g. orders
    owner           who is accountable for the source: a named person, not you
    authorized_by   the named person who authorized loading it (not an account: svc_*,
                    system, automation... are refused, so a source never authorizes itself)
    expires         when that authorization ends: an ISO 8601 instant or a duration from now
                    (365d); after it the table stops publishing until activated again
    licence         the rows' licence, and purposes: what they may be used for (one or more)
    provenance      how the data is obtained
    activated_by    your name as the activation records it; left empty, your Airflow login
                    (a service account's login is refused): never the worker's account

The same as ``dogana activate RECEIVER TABLE --owner ... --by NAME`` at a terminal; both write
the activation to the receiver's log with who and when, and ``dogana status RECEIVER`` shows
each table's state (pending, active until X, expired at X). A scheduled run could only be the
DAG authorizing its own source, so this DAG has no schedule and its task refuses any run a
person did not trigger.

Configuration: the Airflow connection ``dogana_default`` (the receiver), or the id in the
environment variable DOGANA_RECEIVER_CONN_ID.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from airflow.sdk import DAG, Param

from dogana_provider.operators.activate import ActivateSourceOperator

RECEIVER_CONN_ID = os.environ.get("DOGANA_RECEIVER_CONN_ID", "dogana_default")


def text(description: str, **more: object) -> Param:
    return Param(type="string", minLength=1, description=description, **more)


with DAG(
    "dogana_activate_source",
    schedule=None,
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    tags=["dogana", "example"],
    doc_md=__doc__,
    params={
        "table": text("The receiver's table to activate"),
        "owner": text("Who is accountable for the source: a named person, not you"),
        "authorized_by": text("The named person who authorized loading it"),
        "expires": Param("365d", type="string", description="An ISO 8601 instant, or 365d"),
        "licence": text("The rows' licence"),
        "purposes": Param(
            type="array",
            items={"type": "string"},
            minItems=1,
            description="What the rows may be used for",
        ),
        "provenance": text("How the data is obtained"),
        "activated_by": Param(
            "",
            type="string",
            description="Your name as the activation records it; empty: your Airflow login",
        ),
    },
) as dag:
    ActivateSourceOperator(
        task_id="activate",
        receiver_conn_id=RECEIVER_CONN_ID,
        table="{{ params.table }}",
        data_owner="{{ params.owner }}",
        authorized_by="{{ params.authorized_by }}",
        expires="{{ params.expires }}",
        licence="{{ params.licence }}",
        purposes="{{ params.purposes | tojson }}",
        provenance="{{ params.provenance }}",
        activated_by="{{ params.activated_by }}",
    )
