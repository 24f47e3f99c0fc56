"""Source activation: what must be on record before a receiver publishes a table's rows.

A receiver may require activation (its stored setting, off by default; activating.py). Then every
table is ``pending`` until it is activated, and the receiver publishes nothing for a table that
is not ``active``: the decision is a rejection whose receiver check SOURCE_ACTIVE (named in
checks/rows.py, apart from every row check and the spec's checks) says what is missing, or when the
authorization expired. The peer design's lesson (P060): an unclassified
source went live the moment it was registered, so the default is pending, in the code and in
the schema, and activation is the only way to active.

Activation refuses unless all of these are recorded (missing names each one that is not):

    owner           who is accountable for the source: a named person, and not the one who
                    recorded the activation (registered_by), so one person cannot both file a
                    source and answer for it
    authorization   granted by a named person, at granted_at, unexpired: a service account
                    cannot grant it, so a source never authorizes itself
    rights          a licence, and at least one purpose the rows may be used for
    provenance      how the data is obtained

A name is a person's unless one of its words (split at anything not a letter or digit, in any
letter case, trailing digits dropped) is an account's (ACCOUNT_WORDS) or it begins with svc:
``svc_loader``, ``SVC-x``, ``System ``, ``automation`` and ``airflow`` are refused. Two names
are one person when they are equal but for letter case and blanks.

The state is computed at the reader's instant, never stored: a table is ``expired`` once its
authorization's expires_at is reached, and ``pending`` when its record is missing, pending, or does
not hold all of the above (a row written by hand with status 'active' and nothing else is pending,
naming what it lacks). This module holds the rules only; activation_store.py stores records.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from dogana_core.gate import Check
from dogana_provider.checks.rows import SOURCE_ACTIVE as SOURCE_ACTIVE  # the check this decides
from dogana_provider.report.table import when

ACCOUNT_WORDS = frozenset(
    {"svc", "service", "system", "automation", "bot", "airflow", "root", "admin", "daemon"}
)
"""Words that name an account, not a person: a name holding one is refused as a grantor, an
owner, or who recorded an activation."""

NO_NAME = "no name"
UNRECORDED = (
    "an owner",
    "an authorization granted by a named person, and its expiry",
    "a licence",
    "an allowed purpose",
    "provenance (how the data is obtained)",
)
"""What a table with no record lacks, as a person asked to activate it reads it."""
NAME_LENGTH = 200  # the store's columns for names and the licence
TEXT_LENGTH = 2000  # provenance and a purpose


class Status(StrEnum):
    """A table's activation state at an instant. Only PENDING and ACTIVE are ever stored."""

    PENDING = "pending"
    ACTIVE = "active"
    EXPIRED = "expired"


class ActivationRefused(ValueError):
    """Activation refused: what is missing, each named."""

    def __init__(self, table: str, missing: Sequence[str]) -> None:
        self.table = table
        self.missing = tuple(missing)
        super().__init__(f"table {table!r} cannot be activated: missing {'; '.join(missing)}")


def account_words(name: str) -> list[str]:
    """The account words (ACCOUNT_WORDS, or a word starting with svc) a name holds."""
    text = unicodedata.normalize("NFKC", name).casefold()
    words = [re.sub(r"\d+$", "", word) for word in re.split(r"[\W_]+", text) if word]
    return [word for word in words if word in ACCOUNT_WORDS or word.startswith("svc")]


def not_a_person(name: str | None) -> str | None:
    """Why a name is not a named person's, or None when it is."""
    text = "" if name is None else unicodedata.normalize("NFKC", name).strip()
    if not text:
        return NO_NAME
    if not any(character.isalpha() for character in text):
        return f"{name!r} names no one"
    found = account_words(text)
    if found:
        return f"{name!r} is an account ({found[0]!r}), not a person"
    return None


def same_person(one: str | None, other: str | None) -> bool:
    """Whether two names are one person's: equal but for letter case and blanks."""

    def key(name: str | None) -> str:
        text = unicodedata.normalize("NFKC", name or "").casefold()
        return " ".join(text.split())

    return bool(key(one)) and key(one) == key(other)


@dataclass(frozen=True)
class SourceRecord:
    """A table's activation record as stored: any field may be missing (a row written by hand)."""

    table: str
    status: str = Status.PENDING
    owner: str | None = None
    registered_by: str | None = None
    granted_by: str | None = None
    granted_at: datetime | None = None
    expires_at: datetime | None = None
    licence: str | None = None
    purposes: tuple[str, ...] = ()
    provenance: str | None = None
    changed_at: datetime | None = None

    def missing(self, now: datetime, *, unexpired: bool = False) -> list[str]:
        """Everything activation requires that this record does not hold at now, each named;
        empty when it may be active. unexpired=True (activating) counts an authorization
        expired at now as missing; a table's state calls it expired instead."""
        found: list[str] = []

        def person(missing: str, named: str, name: str | None) -> bool:
            reason = not_a_person(name)
            if reason is not None:
                found.append(missing if reason == NO_NAME else f"{named}: {reason}")
            return reason is None

        owner = person("an owner", "an owner who is a named person", self.owner)
        person(
            "who recorded the activation (registered_by)",
            "who recorded the activation, a named person",
            self.registered_by,
        )
        if owner and same_person(self.owner, self.registered_by):
            found.append(
                f"an owner other than who recorded the activation ({self.owner!r} did both)"
            )
        person(
            "an authorization granted by a named person (granted_by)",
            "an authorization granted by a named person",
            self.granted_by,
        )
        if self.granted_at is None:
            found.append("the authorization's grant time (granted_at)")
        elif self.granted_at > now:
            found.append(f"an authorization already granted (granted_at {iso(self.granted_at)})")
        if self.expires_at is None:
            found.append("the authorization's expiry (expires_at)")
        elif self.granted_at is not None and self.expires_at <= self.granted_at:
            found.append(
                f"an expiry after the grant (expires_at {iso(self.expires_at)} is not after "
                f"granted_at {iso(self.granted_at)})"
            )
        elif unexpired and self.expires_at <= now:
            found.append(f"an unexpired authorization (it expired at {iso(self.expires_at)})")
        if not (self.licence or "").strip():
            found.append("a licence")
        if not any(purpose.strip() for purpose in self.purposes):
            found.append("an allowed purpose")
        if not (self.provenance or "").strip():
            found.append("provenance (how the data is obtained)")
        for name, value, limit in (
            ("owner", self.owner, NAME_LENGTH),
            ("registered_by", self.registered_by, NAME_LENGTH),
            ("granted_by", self.granted_by, NAME_LENGTH),
            ("licence", self.licence, NAME_LENGTH),
            ("provenance", self.provenance, TEXT_LENGTH),
            *(("a purpose", purpose, TEXT_LENGTH) for purpose in self.purposes),
        ):
            if value is not None and len(value) > limit:
                found.append(f"{name} of at most {limit} characters ({len(value)} given)")
        return found


@dataclass(frozen=True)
class SourceState:
    """A table's activation at an instant: whether the receiver requires it, and its status."""

    table: str
    required: bool
    status: Status
    at: datetime
    record: SourceRecord | None = None
    missing: tuple[str, ...] = field(default=())

    @property
    def publishes(self) -> bool:
        """Whether the receiver may publish the table's rows now."""
        return not self.required or self.status is Status.ACTIVE

    @property
    def expires_at(self) -> datetime | None:
        return None if self.record is None else self.record.expires_at

    def line(self) -> str:
        """The state as a person scans it: pending, active until X, expired at X."""
        if self.status is Status.ACTIVE:
            stated = f"active until {when(self.expires_at)}"
        elif self.status is Status.EXPIRED:
            stated = f"expired at {when(self.expires_at)}"
        else:
            stated = "pending"
        if self.required:
            return stated
        return "not required" if self.record is None else f"not required ({stated})"

    def detail(self) -> str:
        """Why the table may or may not be published, naming what is missing or the expiry."""
        table = self.table
        record = self.record
        if self.status is Status.ACTIVE:
            assert record is not None
            return (
                f"table {table} is active until {iso(record.expires_at)}: owner {record.owner}, "
                f"authorized by {record.granted_by}, licence {record.licence}"
            )
        if self.status is Status.EXPIRED:
            assert record is not None
            return (
                f"table {table} expired at {iso(record.expires_at)}: the authorization granted "
                f"by {record.granted_by} has lapsed, so nothing is published until the table is "
                "activated again"
            )
        if record is None:
            return (
                f"table {table} is pending: no activation is recorded (missing "
                f"{'; '.join(self.missing)})"
            )
        if not self.missing:
            return (
                f"table {table} is pending: its record holds all activation requires, but it "
                "is not activated (it was deactivated, or its row written by hand)"
            )
        return f"table {table} is pending: missing {'; '.join(self.missing)}"

    def check(self) -> Check | None:
        """The SOURCE_ACTIVE check a decision carries, or None when activation is not required."""
        if not self.required:
            return None
        return Check(SOURCE_ACTIVE, self.status is Status.ACTIVE, self.detail())


@dataclass(frozen=True)
class Activation:
    """What a receiver holds for a table: whether it requires activation, and the table's
    record (None when it has none). Read once, judged at the instant a decision is made."""

    table: str
    required: bool
    record: SourceRecord | None = None

    def at(self, now: datetime) -> SourceState:
        """The table's state at now: active only when the record is active and holds all that
        activation requires, and its authorization has not expired."""
        record = self.record
        missing = UNRECORDED if record is None else tuple(record.missing(now))
        if record is None or record.status != Status.ACTIVE or missing:
            return SourceState(
                self.table, self.required, Status.PENDING, now, record, tuple(missing)
            )
        assert record.expires_at is not None
        if record.expires_at <= now:
            return SourceState(self.table, self.required, Status.EXPIRED, now, record)
        return SourceState(self.table, self.required, Status.ACTIVE, now, record)


def iso(value: datetime | None) -> str:
    return "none" if value is None else value.astimezone(UTC).isoformat()
