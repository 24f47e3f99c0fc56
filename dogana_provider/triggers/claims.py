"""ClaimsTrigger: waits in the triggerer until a table or group claims what a reader awaits.

The receiver's read is synchronous (a DB-API connection), so each poll runs in a worker thread
(asyncio.to_thread) and the event loop is never blocked. The trigger ends with one event:
{"status": "met", "claims": <Claims wire dict>, "line": ...} or, once its deadline has passed,
{"status": "timeout", ...}; the sensor's execute_complete turns the latter into a timeout.

Awaited, the condition itself, is shared with ClaimsSensor's poke so both modes judge alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from dogana_core.claims import NO_LIMIT, Claims, State
from dogana_core.group import Group
from dogana_provider.hooks.dogana import DoganaHook, claims_line
from dogana_provider.operators.arguments import duration, instant, native, window_of
from dogana_provider.receiver.receiver import UnknownTable


@dataclass(frozen=True)
class Awaited:
    """What a reader waits for, over one table or a group read together; exactly one of:

    - exact_at: every region exact at one instant p (both dates p) no earlier than exact_at;
      a later common instant also shows the source at one moment, which is what a report needs
    - complete_as_of: the table's (the group's) complete_as_of no earlier than this instant
    - max_age: fresher than a limit: no region unknown, none complete as of longer than max_age
      before now (Ledger.claims with limit=max_age states none expired)

    windows cut each table to a closed window of its window column ({table: [low, high]}).
    """

    tables: tuple[str, ...]
    exact_at: datetime | None = None
    complete_as_of: datetime | None = None
    max_age: timedelta | None = None
    windows: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        given = [
            name
            for name in ["exact_at", "complete_as_of", "max_age"]
            if getattr(self, name) is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "await exactly one of exact_at, complete_as_of, max_age; got "
                + (", ".join(given) or "none")
            )
        if not self.tables:
            raise ValueError("tables: name at least one table")

    @classmethod
    def of(
        cls,
        tables: str | Iterable[str],
        *,
        exact_at: Any = None,
        complete_as_of: Any = None,
        max_age: Any = None,
        window: Any = None,
    ) -> Awaited:
        """From what a DAG author writes: strings or datetimes, seconds or timedeltas, and a
        window [low, high] for one table or {table: [low, high]} for several."""
        names = (tables,) if isinstance(tables, str) else tuple(tables)
        window = native(window, "window")
        windows: dict[str, Any] | None
        if window is None:
            windows = None
        elif isinstance(window, Mapping):
            windows = dict(window)
        elif len(names) == 1:
            windows = {names[0]: window}
        else:
            raise ValueError("window: for several tables, a mapping from table to [low, high]")
        return cls(
            names,
            exact_at=instant(exact_at, "exact_at"),
            complete_as_of=instant(complete_as_of, "complete_as_of"),
            max_age=duration(max_age, "max_age"),
            windows=windows,
        )

    def to_kwargs(self) -> dict[str, Any]:
        """JSON-safe, for a trigger's serialize(); Awaited.of reads it back."""
        return {
            "tables": list(self.tables),
            "exact_at": None if self.exact_at is None else self.exact_at.isoformat(),
            "complete_as_of": (
                None if self.complete_as_of is None else self.complete_as_of.isoformat()
            ),
            "max_age": None if self.max_age is None else self.max_age.total_seconds(),
            "window": None
            if self.windows is None
            else {table: [_plain(v) for v in w] for table, w in self.windows.items()},
        }

    @property
    def limit(self) -> timedelta:
        return NO_LIMIT if self.max_age is None else self.max_age

    def read(self, hook: DoganaHook, now: datetime) -> Claims:
        """The claims, every table's ledger read in one committed state."""
        ledgers = hook.ledgers(self.tables)
        group = Group(tuple(ledger.contract for ledger in ledgers.values()))
        windows = None
        if self.windows is not None:
            windows = {
                table: window_of(group.contract(table), value, f"window[{table!r}]")
                for table, value in self.windows.items()
            }
        return group.claims(ledgers, now, limit=self.limit, windows=windows)

    def met(self, claims: Claims) -> bool:
        if self.exact_at is not None:
            exact = claims.exact_as_of
            return exact is not None and exact >= self.exact_at
        if self.complete_as_of is not None:
            complete = claims.complete_as_of
            return complete is not None and complete >= self.complete_as_of
        return claims.state not in (State.UNKNOWN, State.EXPIRED)

    def describe(self) -> str:
        if self.exact_at is not None:
            return f"exact at an instant no earlier than {self.exact_at.isoformat()}"
        if self.complete_as_of is not None:
            return f"complete as of {self.complete_as_of.isoformat()} or later"
        return f"no region unknown or older than {self.max_age}"

    def line(self, claims: Claims) -> str:
        """One readable line: which tables, their claims, and what is awaited."""
        verdict = "met" if self.met(claims) else "awaiting"
        return f"{', '.join(self.tables)}: {claims_line(claims)}; {verdict} {self.describe()}"


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, date | datetime) else value


class ClaimsTrigger(BaseTrigger):
    """Poll a receiver until Awaited is met, or until deadline (ISO 8601) has passed.

    :param receiver_conn_id: the receiver's connection.
    :param awaited: Awaited.to_kwargs().
    :param poll_interval: seconds between two reads.
    :param deadline: when to give up, or None to wait for as long as the task's timeout allows.
    """

    def __init__(
        self,
        *,
        receiver_conn_id: str,
        awaited: dict[str, Any],
        poll_interval: float = 60.0,
        deadline: str | None = None,
    ) -> None:
        super().__init__()
        self.receiver_conn_id = receiver_conn_id
        self.awaited = awaited
        self.poll_interval = poll_interval
        self.deadline = deadline

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "receiver_conn_id": self.receiver_conn_id,
                "awaited": self.awaited,
                "poll_interval": self.poll_interval,
                "deadline": self.deadline,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        awaited = Awaited.of(**self.awaited)
        deadline = instant(self.deadline, "deadline")
        hook = DoganaHook(self.receiver_conn_id)
        while True:
            now = datetime.now(UTC)
            claims: Claims | None = None
            try:
                found = await asyncio.to_thread(awaited.read, hook, now)
            except UnknownTable as exc:  # not registered yet: nothing to claim so far
                line = f"{exc}; awaiting {awaited.describe()}"
            else:
                claims, line = found, awaited.line(found)
            self.log.info("%s", line)
            # The wire dict lists every region: made for the event only, never for a poll.
            if claims is not None and awaited.met(claims):
                yield TriggerEvent({"status": "met", "claims": claims.to_dict(), "line": line})
                return
            if deadline is not None and now >= deadline:
                wire = None if claims is None else claims.to_dict()
                yield TriggerEvent({"status": "timeout", "claims": wire, "line": line})
                return
            wait = self.poll_interval
            if deadline is not None:  # wake at the deadline rather than a poll later
                wait = max(0.0, min(wait, (deadline - now).total_seconds()))
            await asyncio.sleep(wait)
