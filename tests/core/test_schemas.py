"""JSON Schemas cover all fourteen wire kinds; they ship inside the package.

The schemas are generated from the codecs (`python -m dogana_core.schemas`), so the committed
files must equal what the generator writes now, and every example value and every to_dict()
output must validate against its kind's schema (Draft 2020-12; jsonschema is a test dependency).
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from wire_strategies import wire_values

from dogana_core import Shape, Wire, kinds, schemas
from dogana_core.kinds import KINDS, wire_kind, wire_kinds
from dogana_core.schemas import __main__ as schemas_main
from dogana_core.schemas import generate, load_schema, write
from dogana_core.vectors import example_values, load_vectors

FOURTEEN = [
    "Shape",
    "Contract",
    "Manifest",
    "Region",
    "Ledger",
    "Check",
    "Action",
    "ApplyPlan",
    "Transition",
    "Receipt",
    "RegionClaim",
    "Claims",
    "Requirement",
    "ExtractionRequest",
]

SCHEMA_DIR = resources.files("dogana_core.schemas")


def validator(kind_name: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(kind_name))


def test_the_wire_kinds_are_the_fourteen_the_protocol_names() -> None:
    assert [name for name, _ in KINDS] == FOURTEEN
    assert [kind.__name__ for kind in wire_kinds()] == FOURTEEN


def test_every_wire_kind_is_a_wire_class_of_its_name() -> None:
    for kind in wire_kinds():
        assert issubclass(kind, Wire)
        assert wire_kind(kind.__name__) is kind
    with pytest.raises(KeyError) as missing:
        wire_kind("Frobnicator")
    assert missing.value.args == ("Frobnicator",)


def test_a_kind_whose_module_or_class_does_not_exist_yet_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listed = (
        ("Gone", "dogana_core.no_such_module"),
        ("Shape", "dogana_core.shape"),
        ("Gone", "dogana_core.shape"),
        ("Contract", "dogana_core.contract"),
    )
    monkeypatch.setattr(kinds, "KINDS", listed)
    assert [kind.__name__ for kind in wire_kinds()] == ["Shape", "Contract"]


def test_a_name_that_is_no_wire_kind_or_a_broken_module_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kinds, "KINDS", (("Coverage", "dogana_core.shape"),))
    with pytest.raises(TypeError) as refused:
        wire_kinds()
    assert str(refused.value) == "dogana_core.shape.Coverage is not the wire kind Coverage"
    (tmp_path / "dogana_broken_kind.py").write_text("import dogana_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(kinds, "KINDS", (("Broken", "dogana_broken_kind"),))
    with pytest.raises(ModuleNotFoundError, match="dogana_no_such_dependency"):
        wire_kinds()


def test_there_is_one_schema_file_per_wire_kind() -> None:
    shipped = {entry.name for entry in SCHEMA_DIR.iterdir() if entry.name.endswith(".json")}
    assert shipped == {f"{kind.__name__}.json" for kind in wire_kinds()}


def test_the_committed_schemas_equal_what_the_generator_writes() -> None:
    stale = [
        name
        for name, text in generate().items()
        if SCHEMA_DIR.joinpath(name).read_text(encoding="utf-8") != text
    ]
    assert not stale, f"run `python -m dogana_core.schemas`: {stale} are stale"


def test_the_generator_writes_every_schema_and_removes_stale_ones(tmp_path: Path) -> None:
    (tmp_path / "Gone.json").write_text("{}")
    changed = write(tmp_path)
    assert set(changed) == {f"{name}.json" for name in FOURTEEN} | {"Gone.json"}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.json" for n in FOURTEEN)
    assert write(tmp_path) == []


def test_the_generator_writes_beside_itself_by_default_and_says_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """python -m dogana_core.schemas writes into the package's folder: here a stand-in."""
    monkeypatch.setattr(schemas, "__file__", str(tmp_path / "__init__.py"))
    (tmp_path / "Gone.json").write_text("{}", encoding="utf-8")
    schemas_main.main()
    assert {p.name: p.read_text(encoding="utf-8") for p in tmp_path.glob("*.json")} == generate()
    schemas_main.main()
    # Written in the generator's order, then the stale one removed.
    changed = ", ".join([*generate(), "Gone.json"])
    assert capsys.readouterr().out == f"14 schemas; changed: {changed}\n14 schemas; all current\n"


def test_a_name_that_is_not_a_kind_is_named_in_the_refusal() -> None:
    with pytest.raises(FileNotFoundError) as refused:
        load_schema("../pyproject")
    assert str(refused.value) == "no schema for '../pyproject'"


@pytest.mark.parametrize("name", FOURTEEN)
def test_each_schema_is_a_draft_2020_12_schema_of_its_kind(name: str) -> None:
    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == name
    assert schema["properties"]["version"] == {"const": 4}
    assert schema["properties"]["kind"] == {"const": name}
    assert schema == wire_kind(name).json_schema()


def test_load_schema_refuses_names_that_are_not_kinds() -> None:
    for name in ("Frobnicator", "../pyproject", ""):
        with pytest.raises(FileNotFoundError):
            load_schema(name)


def test_every_example_value_validates_against_its_schema() -> None:
    seen = set()
    for _, value in example_values():
        kind = type(value).__name__
        validator(kind).validate(value.to_dict())
        seen.add(kind)
    assert seen == set(FOURTEEN)


def test_every_identity_vector_wire_validates_against_its_schema() -> None:
    for case in load_vectors():
        validator(case["kind"]).validate(case["wire"])


@settings(max_examples=150)
@given(wire_values())
def test_every_generated_to_dict_output_validates(value: Wire) -> None:
    validator(type(value).__name__).validate(value.to_dict())


def broken(data: dict[str, Any], change: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    change(data)
    return data


@pytest.mark.parametrize(
    ("what", "change"),
    [
        ("a missing field", lambda d: d.pop("rows")),
        ("an unknown field", lambda d: d.update(keys=[1, 2])),
        ("an earlier version", lambda d: d.update(version=3)),
        ("another kind", lambda d: d.update(kind="Contract")),
        ("a wrong type", lambda d: d.update(rows="10")),
        ("a fractional integer", lambda d: d.update(rows=10.5)),
        (
            "a seventh fractional digit",
            lambda d: d.update(produced_at={"$datetime": "2026-10-18T00:00:00.1234567Z"}),
        ),
        ("a naive datetime", lambda d: d.update(produced_at={"$datetime": "2026-10-18T00:00:00"})),
        ("a date outside its grammar", lambda d: d["window"].__setitem__(0, {"$date": "2026-1-8"})),
        (
            "a tag with two keys",
            lambda d: d["window"].__setitem__(0, {"$date": "2026-10-18", "x": 1}),
        ),
        ("an empty shape name", lambda d: d.update(shape="")),
    ],
)
def test_the_schemas_refuse_what_the_wire_format_refuses(what: str, change: Any) -> None:
    month = next(
        value for name, value in example_values() if name.startswith("Manifest: a complete date")
    )
    data = broken(month.to_dict(), change)
    with pytest.raises(ValidationError):
        validator("Manifest").validate(data)


def test_a_negative_duration_fails_the_shape_schema() -> None:
    data = broken(Shape.changes().to_dict(), lambda d: d.update(lookback={"$seconds": -1}))
    with pytest.raises(ValidationError):
        validator("Shape").validate(data)


def test_nested_kinds_are_checked_by_their_own_schema() -> None:
    contract = next(value for _, value in example_values() if type(value).__name__ == "Contract")
    data = broken(contract.to_dict(), lambda d: d["shapes"]["full"].update(version=3))
    with pytest.raises(ValidationError):
        validator("Contract").validate(data)
    data = broken(contract.to_dict(), lambda d: d["shapes"]["full"].update(coverage="rows"))
    with pytest.raises(ValidationError):
        validator("Contract").validate(data)
