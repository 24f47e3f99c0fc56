"""Manifest: the sender's declaration of one read, and its rules 1 to 6.

Manifest(table, shape, produced_at, *, window, since, generation, rows, schema_hash, tombstones,
content_hash) describes one read. It checks its own fields when built and fits its contract
under Manifest.check, which the gate reports as its "manifest" check.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest

from dogana_core import Contract, InvalidContract, Manifest, Shape

T = datetime(2026, 10, 18, 12, 0, tzinfo=UTC)
EARLIER = T - timedelta(days=1)
CONTENT = hashlib.sha256(b"id,name\n1,one\n").hexdigest()

ORDERS = Contract(
    "orders",
    ("id",),
    {
        "full": Shape.complete(),
        "day": Shape.complete(window=True),
        "recent": Shape.changes(window=True),
        "changes": Shape.changes(tombstones=True),
        "plain": Shape.changes(),
        "feed": Shape.changes(checkpoint="generation", tombstones=True),
    },
    window_column="order_date",
    cursor_column="updated_at",
    deleted_column="is_deleted",
    types={"id": "int", "order_date": "date", "updated_at": "datetime", "is_deleted": "bool"},
)

LOG = Contract(
    "log",
    ("id",),
    {"full": Shape.complete(), "tail": Shape.changes(checkpoint="sequence", tombstones=True)},
    deleted_column="gone",
    types={"id": "int", "gone": "bool"},
)

NO_CURSOR = Contract("items", ("id",), {"changes": Shape.changes()}, types={"id": "str"})

EVENTS = Contract("events", (), {"append": Shape.changes(), "full": Shape.complete()})


def manifest(shape: str, **fields: Any) -> Manifest:
    table = fields.pop("table", "orders")
    return Manifest(table, shape, fields.pop("produced_at", T), **fields)


def fits(contract: Contract, shape: str, **fields: Any) -> None:
    manifest(shape, table=contract.table, **fields).check(contract)


def refused(contract: Contract, shape: str, message: str, **fields: Any) -> None:
    """The manifest does not fit its contract, refused with the whole message: field and rule."""
    with pytest.raises(InvalidContract) as refusal:
        fits(contract, shape, **fields)
    assert str(refusal.value) == message


def refused_when_built(message: str, shape: str, **fields: Any) -> None:
    """The manifest cannot be built, refused with the whole message: field and rule."""
    with pytest.raises(InvalidContract) as refusal:
        manifest(shape, **fields)
    assert str(refusal.value) == message


def test_manifest_takes_keywords_after_produced_at() -> None:
    with pytest.raises(TypeError):
        Manifest("orders", "full", T, None)  # type: ignore[misc]


# The manifest and its contract -------------------------------------------------------------------


def test_a_manifest_names_its_contracts_table() -> None:
    with pytest.raises(InvalidContract) as refusal:
        manifest("full", table="order").check(ORDERS)
    assert str(refusal.value) == "Manifest.table: 'order' is not the contract's table 'orders'"


def test_a_manifest_names_a_shape_of_its_contract() -> None:
    refused(ORDERS, "weekly", "Contract orders: no shape named 'weekly'")
    refused_when_built("Manifest.shape: names a shape of the contract", "")


def test_a_manifest_carries_the_contracts_column_hash_when_it_has_one() -> None:
    hashed = ORDERS.replace(schema_hash="c" * 64)
    fits(hashed, "full", schema_hash="c" * 64)
    refused(
        hashed,
        "full",
        f"Manifest.schema_hash: {'d' * 64!r} is not the contract's column hash {'c' * 64!r}",
        schema_hash="d" * 64,
    )
    refused(
        hashed, "full", f"Manifest.schema_hash: None is not the contract's column hash {'c' * 64!r}"
    )


def test_without_a_contract_column_hash_no_column_check_is_required() -> None:
    fits(ORDERS, "full")
    fits(ORDERS, "full", schema_hash="d" * 64)


def test_produced_at_is_an_aware_datetime_normalized_to_utc() -> None:
    local = datetime(2026, 10, 18, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    made = manifest("full", produced_at=local).produced_at
    assert (made, made.tzinfo) == (T, UTC)
    refused_when_built(
        "Manifest.produced_at: naive datetime 2026-10-18T00:00:00 carries no UTC offset",
        "full",
        produced_at=datetime(2026, 10, 18),
    )
    refused_when_built(
        "Manifest.produced_at: expected a datetime, got date",
        "full",
        produced_at=date(2026, 10, 18),
    )


# 1. window exactly for window coverage, since exactly for changed-only shapes ---------------------


def test_window_is_required_for_window_coverage() -> None:
    refused(ORDERS, "day", "Manifest.window: shape 'day' covers a window; name it")
    refused(
        ORDERS, "recent", "Manifest.window: shape 'recent' covers a window; name it", since=EARLIER
    )
    fits(ORDERS, "day", window=(date(2026, 10, 18), date(2026, 10, 18)))


def test_window_is_refused_for_whole_table_coverage() -> None:
    refused(
        ORDERS,
        "full",
        "Manifest.window: shape 'full' covers the whole table",
        window=(date(2026, 10, 1), date(2026, 10, 18)),
    )


def test_since_is_required_for_changed_only_shapes() -> None:
    refused(ORDERS, "changes", "Manifest.since: shape 'changes' reads changes since a checkpoint")
    refused(
        LOG, "tail", "Manifest.since: shape 'tail' reads changes since a checkpoint", generation=5
    )


def test_since_is_refused_for_complete_shapes() -> None:
    refused(
        ORDERS, "full", "Manifest.since: shape 'full' is complete; it has no since", since=EARLIER
    )
    refused(
        ORDERS,
        "day",
        "Manifest.since: shape 'day' is complete; it has no since",
        since=EARLIER,
        window=(date(2026, 10, 1), date(2026, 10, 1)),
    )


def test_window_bounds_have_the_window_columns_type() -> None:
    refused(
        ORDERS, "day", "Manifest.window[0] (order_date): expected date, got int 1", window=(1, 2)
    )
    refused(
        ORDERS,
        "day",
        f"Manifest.window[0] (order_date): expected date, got datetime {T!r}",
        window=(T, T),
    )
    refused(
        ORDERS,
        "day",
        "Manifest.window[1] (order_date): expected date, got str '2026-10-02'",
        window=(date(2026, 10, 1), "2026-10-02"),
    )


def test_window_bounds_are_ordered_scalars() -> None:
    for window, kind in (((1.5, 2.5), "float"), ((False, True), "bool")):
        with pytest.raises(InvalidContract) as refused_with:
            manifest("day", window=window)
        assert str(refused_with.value) == f"Manifest.window[0]: {kind} is not an ordered scalar"
    refused_when_built(
        "Manifest.window[1]: float is not an ordered scalar",
        "day",
        window=(date(2026, 10, 1), 2.5),
    )
    refused_when_built(
        "Manifest.window: a window is a pair [low, high]", "day", window=(date(2026, 10, 1),)
    )
    refused_when_built("Manifest.since: float is not an ordered scalar", "changes", since=1.5)
    refused_when_built("Manifest.since: bool is not an ordered scalar", "changes", since=True)


def test_a_bound_of_no_logical_type_is_refused_naming_its_field() -> None:
    refused_when_built(
        "Manifest.window[1]: bytes is not one of the six logical types",
        "day",
        window=(date(2026, 10, 1), b"2026-10-02"),
    )
    refused_when_built(
        "Manifest.since: bytes is not one of the six logical types", "changes", since=b"1"
    )


def test_a_window_runs_from_low_to_high() -> None:
    refused(
        ORDERS,
        "day",
        "Manifest.window: low datetime.date(2026, 10, 2) is after high datetime.date(2026, 10, 1)",
        window=(date(2026, 10, 2), date(2026, 10, 1)),
    )


def test_a_window_whose_two_ends_are_equal_is_one_partition() -> None:
    fits(ORDERS, "day", window=(date(2026, 10, 1), date(2026, 10, 1)))


def test_timestamp_checkpoints_are_aware_datetimes() -> None:
    fits(
        ORDERS, "changes", since=datetime(2026, 10, 17, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    )
    rule = "Manifest.since: a timestamp checkpoint is an aware datetime, got "
    refused(ORDERS, "changes", rule + "datetime.date(2026, 10, 17)", since=date(2026, 10, 17))
    refused(ORDERS, "changes", rule + "5", since=5)
    refused(ORDERS, "changes", rule + "'2026-10-17T00:00:00Z'", since="2026-10-17T00:00:00Z")
    refused_when_built(
        "Manifest.since: naive datetime 2026-10-17T00:00:00 carries no UTC offset",
        "changes",
        since=datetime(2026, 10, 17),
    )


def test_generations_are_nonempty_strings() -> None:
    fits(ORDERS, "feed", since="g41", generation="g42")
    refused(
        ORDERS,
        "feed",
        "Manifest.since: a generation is a nonempty string, got 41",
        since=41,
        generation="g42",
    )
    refused_when_built(
        "Manifest.generation: a generation is a nonempty string",
        "feed",
        since="g41",
        generation="",
    )


def test_a_generation_feed_issues_its_next_generation() -> None:
    rule = "Manifest.generation: a generation feed issues its next generation"
    refused(ORDERS, "feed", rule, since="g41")
    refused(ORDERS, "feed", rule, since="g41", generation=42)


# 2. Sequence reads carry integers and cover (since, generation] -----------------------------------


def test_sequence_reads_carry_integers() -> None:
    fits(LOG, "tail", since=40, generation=42, rows=2)
    refused(
        LOG,
        "tail",
        "Manifest.since: a sequence position is an integer, got '40'",
        since="40",
        generation=42,
    )
    rule = "Manifest.generation: a sequence read covers (since, generation]; name generation"
    refused(LOG, "tail", rule, since=40, generation="42")
    refused(LOG, "tail", rule, since=40)


def test_a_sequence_read_has_generation_at_or_after_since() -> None:
    refused(LOG, "tail", "Manifest.generation: 41 is before since 42", since=42, generation=41)
    fits(LOG, "tail", since=42, generation=42)


def test_an_empty_sequence_interval_has_no_rows() -> None:
    rule = "Manifest.rows: a zero-length interval holds no rows and no tombstones, "
    refused(LOG, "tail", rule + "got 1 rows and 0 tombstones", since=42, generation=42, rows=1)
    refused(
        LOG, "tail", rule + "got 0 rows and 1 tombstones", since=42, generation=42, tombstones=1
    )


def test_large_sequence_positions_stay_exact() -> None:
    big = 2**63 - 1024  # exact in binary64, and past 2**53
    made = manifest("tail", table="log", since=big - 1024, generation=big, rows=1)
    made.check(LOG)
    assert Manifest.from_json(made.to_json()).generation == big
    assert str(big) in made.to_json()


def test_integers_are_exact_binary64() -> None:
    # Versioned JSON 5: an integer past 2**53 that binary64 cannot hold has no identity.
    inexact = 2**53 + 1
    rule = "is not exact in binary64, so it could have no identity; send it as a string"
    for fields, field in (
        ({"since": 0, "generation": inexact}, "generation"),
        ({"since": inexact, "generation": 2**60}, "since"),
        ({"since": 0, "generation": 1, "rows": inexact}, "rows"),
        ({"since": 0, "generation": 1, "tombstones": -inexact}, "tombstones"),
    ):
        with pytest.raises(InvalidContract) as refused_with:
            manifest("tail", table="log", **fields)
        assert str(refused_with.value) == f"Manifest.{field}: a 54-bit integer {rule}"
    with pytest.raises(InvalidContract) as refused_with:
        manifest("day", window=(0, 10**400))
    assert str(refused_with.value) == f"Manifest.window[1]: a 1329-bit integer {rule}"


def test_integer_window_bounds_are_portable_keys() -> None:
    # Versioned JSON 5: portable keys stay within [-(2**53-1), 2**53-1], larger ones as strings.
    ids = Contract(
        "ids",
        ("id",),
        {"part": Shape.complete(window=True)},
        window_column="id",
        types={"id": "int"},
    )
    edge = 2**53 - 1
    fits(ids, "part", window=(-edge, edge))
    rule = "integer key values stay within [-(2**53-1), 2**53-1]; send larger ones as strings"
    for index, window in ((1, (0, 2**53)), (0, (-(2**53), 0)), (1, (0, 2**60))):
        refused_when_built(f"Manifest.window[{index}]: {rule}", "part", table="ids", window=window)
    made = manifest("tail", table="log", since=2**53, generation=2**60, rows=2**53)
    made.check(LOG)
    assert made.identity


# 3. A delivery that issues a position issues the table's kind -------------------------------------


def test_a_sequence_table_issues_integer_positions() -> None:
    fits(LOG, "full", generation=42)
    refused(
        LOG,
        "full",
        "Manifest.generation: this table's positions are integers, got 'g42'",
        generation="g42",
    )


def test_other_tables_issue_string_positions() -> None:
    fits(ORDERS, "full", generation="g42")
    refused(
        ORDERS,
        "full",
        "Manifest.generation: this table's positions are strings, got 42",
        generation=42,
    )


def test_a_complete_window_never_issues_a_position() -> None:
    refused(
        ORDERS,
        "day",
        "Manifest.generation: a complete window never issues a position",
        window=(date(2026, 10, 1), date(2026, 10, 1)),
        generation="g42",
    )


def test_a_timestamp_read_issues_no_position() -> None:
    refused(
        ORDERS,
        "changes",
        "Manifest.generation: a timestamp read issues no position",
        since=EARLIER,
        generation="g42",
    )


# 4. Counts ---------------------------------------------------------------------------------------


def test_rows_and_tombstones_are_nonnegative_integers() -> None:
    for name in ("rows", "tombstones"):
        for bad in (-1, 1.5, True, "3", None):
            refused_when_built(
                f"Manifest.{name}: {bad!r} must be a nonnegative integer",
                "changes",
                since=EARLIER,
                **{name: bad},
            )


def test_rows_and_tombstones_default_to_zero() -> None:
    made = manifest("full")
    assert (made.rows, made.tombstones) == (0, 0)


def test_tombstones_need_a_tombstone_shape() -> None:
    refused(
        ORDERS,
        "full",
        "Manifest.tombstones: shape 'full' delivers no tombstones, got 1",
        tombstones=1,
    )
    refused(
        ORDERS,
        "plain",
        "Manifest.tombstones: shape 'plain' delivers no tombstones, got 2",
        since=EARLIER,
        tombstones=2,
    )
    fits(ORDERS, "changes", since=EARLIER, rows=2, tombstones=1)


def test_a_zero_length_timestamp_interval_holds_no_rows_and_no_tombstones() -> None:
    rule = "Manifest.rows: a zero-length interval holds no rows and no tombstones, "
    refused(ORDERS, "changes", rule + "got 1 rows and 0 tombstones", since=T, rows=1)
    refused(ORDERS, "changes", rule + "got 0 rows and 1 tombstones", since=T, tombstones=1)
    fits(ORDERS, "changes", since=T)


# 5. Timestamp reads: (since, produced_at] with a cursor column ------------------------------------


def test_without_a_cursor_column_a_keyed_read_may_include_since() -> None:
    # [t, t] is not empty: the rows stamped exactly t may be read again.
    fits(NO_CURSOR, "changes", since=T, rows=3)


def test_keyless_appends_always_cover_since_to_produced_at_open_at_since() -> None:
    # No cursor column, but an append never overlaps: (t, t] holds nothing.
    refused(
        EVENTS,
        "append",
        "Manifest.rows: a zero-length interval holds no rows and no tombstones, "
        "got 1 rows and 0 tombstones",
        since=T,
        rows=1,
    )
    fits(EVENTS, "append", since=EARLIER, rows=1)


# 6. content_hash ---------------------------------------------------------------------------------


def test_content_hash_is_lowercase_hex_sha256() -> None:
    assert manifest("full", content_hash=CONTENT).content_hash == CONTENT
    for bad in (CONTENT.upper(), CONTENT[:-1], CONTENT + "0", "g" * 64, "", "sha256:" + CONTENT, 5):
        refused_when_built(
            f"Manifest.content_hash: {bad!r} is not a lowercase hex SHA-256",
            "full",
            content_hash=bad,
        )


def test_content_hash_is_part_of_the_identity() -> None:
    plain = manifest("full", rows=1)
    hashed = manifest("full", rows=1, content_hash=CONTENT)
    corrected = manifest("full", rows=1, content_hash=hashlib.sha256(b"other").hexdigest())
    assert len({plain.identity, hashed.identity, corrected.identity}) == 3


def test_schema_hash_is_nonempty_when_present() -> None:
    refused_when_built("Manifest.schema_hash: nonempty when present", "full", schema_hash="")


# Values of a manifest ----------------------------------------------------------------------------


def test_manifest_strings_refuse_lone_surrogates() -> None:
    for field, make in (
        ("table", lambda: manifest("full", table="orders\ud800")),
        ("shape", lambda: manifest("full\udfff")),
        ("since", lambda: manifest("feed", since="\ud800", generation="g")),
        ("generation", lambda: manifest("feed", since="g", generation="g\ud800")),
    ):
        with pytest.raises(InvalidContract) as refused_with:
            make()
        assert str(refused_with.value) == f"Manifest.{field}: string holds a lone surrogate"
    rule = "string holds a lone surrogate"
    refused_when_built(f"Manifest.window[0]: {rule}", "day", window=("a\ud800", "b"))
    refused_when_built(f"Manifest.window[1]: {rule}", "day", window=("a", "b\udfff"))
    refused_when_built(f"Manifest.schema_hash: {rule}", "full", schema_hash="\ud800")


def test_manifest_datetimes_are_normalized_before_equality() -> None:
    plus_two = timezone(timedelta(hours=2))
    local = manifest(
        "changes",
        produced_at=datetime(2026, 10, 18, 14, 0, tzinfo=plus_two),
        since=datetime(2026, 10, 17, 14, 0, tzinfo=plus_two),
    )
    assert local == manifest("changes", since=datetime(2026, 10, 17, 12, 0, tzinfo=UTC))
    # Python's == already calls two offsets of one instant equal; the fields hold UTC itself.
    assert isinstance(local.since, datetime)
    assert (local.produced_at.tzinfo, local.since.tzinfo) == (UTC, UTC)


def test_a_window_is_held_as_a_pair_of_normalized_bounds_however_given() -> None:
    plus_two = timezone(timedelta(hours=2))
    low, high = datetime(2026, 10, 17, 14, 0, tzinfo=plus_two), datetime(2026, 10, 18, tzinfo=UTC)
    made = manifest("day", window=[low, high])
    assert made.window == (low, high) and type(made.window) is tuple
    held = made.window[0]
    assert isinstance(held, datetime) and held.tzinfo is UTC
    assert made == manifest("day", window=(datetime(2026, 10, 17, 12, 0, tzinfo=UTC), high))


def test_a_position_of_the_other_kind_is_refused_naming_the_tables_kind() -> None:
    with pytest.raises(InvalidContract) as refused:
        fits(LOG, "full", generation="g5")
    assert str(refused.value) == (
        "Manifest.generation: this table's positions are integers, got 'g5'"
    )
    with pytest.raises(InvalidContract) as refused:
        fits(ORDERS, "full", generation=5)
    assert str(refused.value) == "Manifest.generation: this table's positions are strings, got 5"


# A refusal names the field and the rule ----------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Manifest(5, "full", T), "Manifest.table: expected a string, got int"),
        (lambda: Manifest("orders", 5, T), "Manifest.shape: expected a string, got int"),
        (lambda: manifest(""), "Manifest.shape: names a shape of the contract"),
        (
            lambda: manifest("full", produced_at=datetime(2026, 10, 18)),
            "Manifest.produced_at: naive datetime 2026-10-18T00:00:00 carries no UTC offset",
        ),
        (
            lambda: manifest("day", window=(date(2026, 10, 1),)),
            "Manifest.window: a window is a pair [low, high]",
        ),
        (
            lambda: manifest("changes", since=datetime(2026, 10, 17)),
            "Manifest.since: naive datetime 2026-10-17T00:00:00 carries no UTC offset",
        ),
        (
            lambda: manifest("feed", since="g41", generation=4.5),
            "Manifest.generation: an integer or a nonempty string",
        ),
        (
            lambda: manifest("feed", since="g41", generation=True),
            "Manifest.generation: an integer or a nonempty string",
        ),
        (
            lambda: manifest("feed", since="g41", generation=""),
            "Manifest.generation: a generation is a nonempty string",
        ),
        (
            lambda: manifest("full", schema_hash=5),
            "Manifest.schema_hash: expected a string, got int",
        ),
        (lambda: manifest("full", schema_hash=""), "Manifest.schema_hash: nonempty when present"),
        (
            lambda: fits(LOG, "tail", since=42, generation=42, rows=1),
            "Manifest.rows: a zero-length interval holds no rows and no tombstones, got 1 rows "
            "and 0 tombstones",
        ),
        (
            lambda: fits(
                ORDERS, "day", window=(date(2026, 10, 1), date(2026, 10, 1)), generation="g42"
            ),
            "Manifest.generation: a complete window never issues a position",
        ),
        (
            lambda: fits(ORDERS, "changes", since=EARLIER, generation="g42"),
            "Manifest.generation: a timestamp read issues no position",
        ),
        (
            lambda: fits(ORDERS, "feed", since="g41"),
            "Manifest.generation: a generation feed issues its next generation",
        ),
        (
            lambda: fits(LOG, "tail", since=40),
            "Manifest.generation: a sequence read covers (since, generation]; name generation",
        ),
        (
            lambda: fits(ORDERS, "day", window=(1, 2)),
            "Manifest.window[0] (order_date): expected date, got int 1",
        ),
        (
            lambda: manifest("tail", table="log", since=2**53 + 1, generation=2**60),
            "Manifest.since: a 54-bit integer is not exact in binary64, so it could have no "
            "identity; send it as a string",
        ),
        (
            lambda: manifest("changes", since=EARLIER, rows=-1),
            "Manifest.rows: -1 must be a nonnegative integer",
        ),
        (
            lambda: manifest("changes", since=EARLIER, tombstones=True),
            "Manifest.tombstones: True must be a nonnegative integer",
        ),
        (
            lambda: manifest("full", content_hash="AB"),
            "Manifest.content_hash: 'AB' is not a lowercase hex SHA-256",
        ),
    ],
)
def test_a_refused_manifest_is_told_the_field_and_the_rule_in_full(
    make: Callable[[], object], message: str
) -> None:
    """Bad input raises a clear error naming what is wrong: the field's path, then the rule."""
    with pytest.raises(InvalidContract) as refused_with:
        make()
    assert str(refused_with.value) == message
