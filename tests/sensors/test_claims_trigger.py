"""ClaimsTrigger on its own: it serializes to JSON a triggerer can rebuild it from, and its run
ends with one event, met or timed out, read from a real receiver."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from test_claims_sensor import deliver_full

from dogana_core import Claims, Contract, Shape
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.triggers.claims import Awaited, ClaimsTrigger

pytestmark = pytest.mark.airflow


def days_contract(table: str) -> Contract:
    return Contract(
        table,
        ("id",),
        {"day": Shape.complete(window=True)},
        window_column="day",
        types={"id": "int", "day": "date"},
    )


def first_event(trigger: ClaimsTrigger) -> dict:
    async def run() -> dict:
        event = await anext(trigger.run())
        return event.payload

    return asyncio.run(run())


def test_the_trigger_serializes_to_json_and_is_rebuilt_from_it() -> None:
    from airflow.sdk._shared.module_loading import import_string

    awaited = Awaited.of(
        "shipments", exact_at="2026-10-19T00:00:00+00:00", window=["2026-09-20", "2026-10-19"]
    )
    trigger = ClaimsTrigger(
        receiver_conn_id="dogana_default",
        awaited=awaited.to_kwargs(),
        poll_interval=5,
        deadline="2026-10-20T00:00:00+00:00",
    )
    classpath, kwargs = trigger.serialize()
    rebuilt = import_string(classpath)(**json.loads(json.dumps(kwargs)))
    assert rebuilt.serialize() == (classpath, kwargs)
    again = Awaited.of(**rebuilt.awaited)
    assert again.exact_at == datetime(2026, 10, 19, tzinfo=UTC)
    assert again.windows == {"shipments": ["2026-09-20", "2026-10-19"]}


def test_awaited_is_exactly_one_condition() -> None:
    with pytest.raises(ValueError, match="exactly one of exact_at, complete_as_of, max_age"):
        Awaited.of("orders", exact_at="2026-10-19T00:00:00+00:00", max_age=60)
    with pytest.raises(ValueError, match="carries no UTC offset"):
        Awaited.of("orders", complete_as_of="2026-10-19T00:00:00")


def test_the_trigger_fires_when_met_and_times_out_when_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conn_id = f"receiver_{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}",
        json.dumps({"conn_type": "sqlite", "host": str(tmp_path / "r.db")}),
    )
    hook = DoganaHook(conn_id)
    p = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    deliver_full(hook.receiver, "orders", tmp_path, p)
    hook.receiver.register(days_contract("shipments"))

    met = first_event(
        ClaimsTrigger(
            receiver_conn_id=conn_id,
            awaited=Awaited.of("orders", exact_at=p).to_kwargs(),
            poll_interval=0.1,
        )
    )
    assert met["status"] == "met"
    assert Claims.from_dict(met["claims"]).exact_as_of == p

    window = [date(2026, 9, 20), date(2026, 10, 19)]
    timed_out = first_event(
        ClaimsTrigger(
            receiver_conn_id=conn_id,
            awaited=Awaited.of("shipments", complete_as_of=p, window=window).to_kwargs(),
            poll_interval=0.1,
            deadline=(datetime.now(UTC) + timedelta(seconds=0.5)).isoformat(),
        )
    )
    assert timed_out["status"] == "timeout"
    assert "awaiting complete as of" in timed_out["line"]
    [region] = Claims.from_dict(timed_out["claims"]).regions
    assert (region.low, region.complete_as_of) == (date(2026, 9, 20), None)
