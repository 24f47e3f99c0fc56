"""The schema policy's vocabulary and rules, without a database: every change under every mode
has one named outcome, and the held version's policy is the one that judges."""

from __future__ import annotations

import pytest

from dogana_provider.schema.policy import (
    DEFAULT,
    Change,
    InvalidPolicy,
    Kind,
    Mode,
    Outcome,
    SchemaPolicy,
    compare,
    judge,
    policies,
    type_change,
)
from dogana_provider.schema.source_check import SchemaRefused, check_source
from dogana_provider.schema.versions import SchemaVersion
from dogana_provider.sources.discover import SourceColumn

R, A, H, D, F, P = (
    Outcome.RECORDED,
    Outcome.APPLIED,
    Outcome.READ_AS_HELD,
    Outcome.DISCARDED,
    Outcome.REFUSED,
    Outcome.PER_ROW,
)
# change: outcome under evolve, freeze, discard_value, discard_row (docs/schema-policy.md)
TABLE = {
    Kind.ADDED: (R, F, D, F),
    Kind.DROPPED: (R, F, R, F),
    Kind.NOT_NULL: (R, F, R, R),
    Kind.NULLABLE: (R, F, R, P),
    Kind.WIDENED: (A, F, D, F),
    Kind.NARROWED: (H, F, D, F),
    Kind.RETYPED: (F, F, D, F),
}
MODES = (Mode.EVOLVE, Mode.FREEZE, Mode.DISCARD_VALUE, Mode.DISCARD_ROW)


@pytest.mark.parametrize("kind", list(TABLE))
@pytest.mark.parametrize("mode", MODES)
def test_every_change_has_one_named_outcome_under_each_mode(kind: Kind, mode: Mode) -> None:
    policy = SchemaPolicy(columns=mode, data_type=mode)
    assert judge(policy, Change(kind, "c")).outcome is TABLE[kind][MODES.index(mode)]


def test_the_default_is_todays_behaviour() -> None:
    """A new column added nullable, a dropped one NULL in new rows, a retyped one refused."""
    assert SchemaPolicy(Mode.EVOLVE, Mode.EVOLVE, Mode.FREEZE) == DEFAULT
    assert SchemaPolicy.of(None) == DEFAULT
    assert judge(DEFAULT, Change(Kind.ADDED, "c")).outcome is Outcome.RECORDED
    assert judge(DEFAULT, Change(Kind.DROPPED, "c")).outcome is Outcome.RECORDED
    assert judge(DEFAULT, Change(Kind.RETYPED, "c")).outcome is Outcome.REFUSED


def test_one_modes_name_sets_columns_and_data_type() -> None:
    assert SchemaPolicy.of("freeze") == SchemaPolicy(Mode.EVOLVE, Mode.FREEZE, Mode.FREEZE)
    assert SchemaPolicy.of({"data_type": "evolve"}) == SchemaPolicy(data_type=Mode.EVOLVE)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("thaw", "'thaw' is not one of evolve, freeze, discard_value, discard_row"),
        ({"colums": "freeze"}, "colums: not tables, columns or data_type"),
        ({"tables": "discard_row"}, "tables: discard_row has no meaning"),
        (3, "a mode's name or a mapping"),
    ],
)
def test_a_policy_that_does_not_parse_names_the_rule(value: object, message: str) -> None:
    with pytest.raises(InvalidPolicy, match=message):
        SchemaPolicy.of(value)


def test_a_groups_policies_are_by_table_and_name_a_stranger() -> None:
    assert policies("freeze", ["a", "b"], "p")["b"]["columns"] == "freeze"
    assert policies({"a": "evolve"}, ["a", "b"], "p") == {"a": SchemaPolicy.of("evolve").to_dict()}
    with pytest.raises(InvalidPolicy, match="p: c: not a table"):
        policies({"c": "evolve"}, ["a", "b"], "p")


def col(name: str, kind: str = "str", nullable: bool = True) -> SourceColumn:
    return SourceColumn(name, kind, nullable)


def test_a_rename_is_a_drop_and_an_add() -> None:
    changes = compare([col("id", "int"), col("name")], [col("id", "int"), col("title")])
    assert [(c.kind, c.column) for c in changes] == [
        (Kind.DROPPED, "name"),
        (Kind.ADDED, "title"),
    ]


def test_only_a_decimals_precision_with_its_scale_kept_widens() -> None:
    assert type_change("decimal(10,2)", "decimal(12,2)") is Kind.WIDENED
    assert type_change("decimal(10,2)", "decimal(8,2)") is Kind.NARROWED
    assert type_change("decimal(10,2)", "decimal(12,3)") is Kind.RETYPED
    assert type_change("int", "float") is Kind.RETYPED
    assert type_change("int", "int") is None


def test_int_to_bigint_and_varchar_to_text_are_no_change() -> None:
    """One dogana type each: the published table is already BIGINT and TEXT."""
    held = [
        SourceColumn("n", "int", True, "integer"),
        SourceColumn("s", "str", True, "varchar(20)"),
    ]
    now = [SourceColumn("n", "int", True, "bigint"), SourceColumn("s", "str", True, "text")]
    assert compare(held, now) == []


def version(columns: list[SourceColumn], policy: SchemaPolicy) -> SchemaVersion:
    return SchemaVersion("t", "m" * 64, tuple(columns), policy, (), "2026-01-01", 1, "p" * 64)


def test_the_held_versions_policy_judges_not_the_declared_one() -> None:
    held = version([col("id", "int")], SchemaPolicy.of("freeze"))
    with pytest.raises(SchemaRefused, match="extra added"):
        check_source("t", held, [col("id", "int"), col("extra")], SchemaPolicy.of("evolve"))


def test_a_refusal_names_every_column_and_what_changed() -> None:
    held = version([col("id", "int"), col("a"), col("b", "decimal(10,2)")], DEFAULT)
    now = [col("id", "int"), col("b", "date"), col("c")]
    with pytest.raises(SchemaRefused) as refused:
        check_source("t", held, now, DEFAULT)
    message = str(refused.value)
    assert "b retyped: decimal(10,2) -> date: refused (data_type freeze)" in message
    assert "a dropped (was str): recorded (columns evolve)" in message
    assert "c added (str): recorded (columns evolve)" in message


def test_a_new_policy_alone_is_a_new_version_governing_the_next_change() -> None:
    held = version([col("id", "int")], SchemaPolicy.of("freeze"))
    expected = check_source("t", held, [col("id", "int")], SchemaPolicy.of("evolve"))
    assert expected.record and expected.policy == SchemaPolicy.of("evolve")
    assert [j.change.kind for j in expected.judged] == [Kind.POLICY]


def test_a_narrowed_or_discarded_column_is_not_a_new_version() -> None:
    held = version([col("id", "int"), col("x", "decimal(10,2)")], SchemaPolicy.of("evolve"))
    narrowed = check_source(
        "t", held, [col("id", "int"), col("x", "decimal(6,2)")], SchemaPolicy.of("evolve")
    )
    assert not narrowed.record and narrowed.read_as == {"x": "decimal(10,2)"}
    discarding = version([col("id", "int")], SchemaPolicy.of("discard_value"))
    left = check_source(
        "t", discarding, [col("id", "int"), col("new")], SchemaPolicy.of("discard_value")
    )
    assert not left.record and left.left_out == ("new",)
