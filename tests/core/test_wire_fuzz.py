"""Versioned JSON 2: bad wire input raises SerializationError (or InvalidContract), nothing else.

Fuzzed with hypothesis: random JSON values and text, and valid documents of every wire kind
mutated (fields dropped, added or replaced; wrong types; broken tags; lone surrogates; numbers
too big, fractional or not finite; nested documents of earlier versions). Reading may refuse with
SerializationError, or with InvalidContract (its parent) when well-formed JSON breaks a rule of
the value; any other exception is a defect. A document that is read must write itself back:
from_json(to_json(x)) == x.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from wire_strategies import wire_values

from dogana_core import InvalidContract, SerializationError, Wire
from dogana_core.kinds import wire_kind, wire_kinds
from dogana_core.vectors import load_vectors
from dogana_core.wire import parse_json

FUZZ = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])

SEEDS: list[tuple[str, dict[str, Any]]] = [(case["kind"], case["wire"]) for case in load_vectors()]
KIND_NAMES = [kind.__name__ for kind in wire_kinds()]

LONE_SURROGATES = st.sampled_from(["\ud800", "a\udfff", "\udc00\ud800", "x\ud83d"])
SPECIAL_NUMBERS = st.sampled_from(
    [
        0,
        -1,
        4.0,
        -0.0,
        0.5,
        1e-7,
        1e300,
        -1e300,
        1.7976931348623157e308,
        2**53 + 1,
        2**64,
        -(2**63),
        10**400,
        10**5000,
        float("nan"),
        float("inf"),
        float("-inf"),
    ]
)
BROKEN_TAGS = st.sampled_from(
    [
        {"$date": "2026-02-30"},
        {"$date": "2026-10-18T00:00:00Z"},
        {"$date": 20261018},
        {"$datetime": "2026-10-18T00:00:00"},
        {"$datetime": "2026-10-18T00:00:00.1234567Z"},
        {"$datetime": "0001-01-01T00:00:00+00:01"},
        {"$datetime": "9999-12-31T23:59:59-00:01"},
        {"$datetime": "2026-10-18T00:00:00+24:00"},
        {"$datetime": "2026-10-18T00:00:00Z\ud800"},
        {"$seconds": -1},
        {"$seconds": 1e-7},
        {"$seconds": 1e300},
        {"$seconds": 10**400},
        {"$seconds": "60"},
        {"$seconds": float("nan")},
        {"$date": "2026-10-18", "$datetime": "2026-10-18T00:00:00Z"},
        {"$time": "12:00"},
        {},
    ]
)
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
JUNK = st.one_of(
    JSON_VALUES,
    LONE_SURROGATES,
    SPECIAL_NUMBERS,
    BROKEN_TAGS,
    st.sampled_from(list({name for name in KIND_NAMES})),
    st.sampled_from([case["wire"] for case in load_vectors()[:5]]),
).map(copy.deepcopy)  # never share a value between documents


def nodes(document: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value inside a document, the document itself first."""
    found = [path]
    if isinstance(document, dict):
        for key, value in document.items():
            found.extend(nodes(value, (*path, key)))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found.extend(nodes(value, (*path, index)))
    return found


def at(document: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        document = document[step]
    return document


@st.composite
def mutated_documents(draw: st.DrawFn) -> tuple[str, Any]:
    """A valid document of some kind with one to three mutations."""
    kind, document = draw(st.sampled_from(SEEDS))
    document = copy.deepcopy(document)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(nodes(document)))
        operation = draw(st.sampled_from(["replace", "drop", "add", "version", "kind"]))
        if not path:
            if operation == "replace":
                document = draw(JUNK)
            continue
        parent, last = at(document, path[:-1]), path[-1]
        if operation == "replace":
            parent[last] = draw(JUNK)
        elif operation == "drop":
            del parent[last]
        elif operation == "add":
            if isinstance(parent, dict):
                parent[draw(st.text(max_size=8) | LONE_SURROGATES)] = draw(JUNK)
            else:
                parent.insert(last, draw(JUNK))
        elif isinstance(parent, dict) and "version" in parent:
            field = "version" if operation == "version" else "kind"
            versions = st.sampled_from([1, 2, 3, 5, 4.0, "4", None])
            parent[field] = draw(versions | st.sampled_from(KIND_NAMES))
    return kind, document


def read_strictly(kind_name: str, document: Any) -> None:
    """Read a document; refusal is SerializationError or InvalidContract, acceptance round-trips."""
    kind = wire_kind(kind_name)
    try:
        value = kind.from_dict(document)
    except (SerializationError, InvalidContract):
        return
    written_back(value)


def written_back(value: Wire) -> None:
    """A value that was read writes itself back unchanged and has an identity."""
    kind = type(value)
    assert kind.from_json(value.to_json()) == value
    assert value.identity


@FUZZ
@given(st.sampled_from(KIND_NAMES), JSON_VALUES)
def test_random_json_values_only_raise_serialization_errors(kind: str, document: Any) -> None:
    read_strictly(kind, document)


@FUZZ
@given(st.sampled_from(KIND_NAMES), st.text() | st.binary())
def test_random_text_only_raises_serialization_errors(kind: str, text: str | bytes) -> None:
    with pytest.raises(SerializationError):
        wire_kind(kind).from_json(text)


@FUZZ
@given(mutated_documents())
@example(("Shape", {"version": 4, "kind": "Shape"}))
@example(("Manifest", [[[[[[[[[[]]]]]]]]]]))
def test_mutated_documents_only_raise_serialization_errors_or_invalid_contract(
    pair: tuple[str, Any],
) -> None:
    read_strictly(*pair)


@FUZZ
@given(mutated_documents())
def test_mutated_documents_as_json_text_only_raise_serialization_errors_or_invalid_contract(
    pair: tuple[str, Any],
) -> None:
    kind, document = pair
    try:
        text = json.dumps(document, ensure_ascii=False)
    except ValueError:  # json.dumps refuses ints past Python's digit limit: no text to send
        return
    try:
        value = wire_kind(kind).from_json(text.encode("utf-8", "surrogatepass"))
    except (SerializationError, InvalidContract):
        return
    written_back(value)


@FUZZ
@given(st.sampled_from(SEEDS), st.data())
def test_damaged_json_text_only_raises_serialization_errors_or_invalid_contract(
    seed: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    kind, document = seed
    text = json.dumps(document)
    start = data.draw(st.integers(min_value=0, max_value=len(text)))
    end = data.draw(st.integers(min_value=start, max_value=min(len(text), start + 8)))
    damaged = text[:start] + data.draw(st.text(max_size=4)) + text[end:]
    try:
        value = wire_kind(kind).from_json(damaged)
    except (SerializationError, InvalidContract):
        return
    written_back(value)


@FUZZ
@given(wire_values(), st.data())
def test_generated_values_mutated_only_raise_serialization_errors_or_invalid_contract(
    value: Wire, data: st.DataObject
) -> None:
    document = value.to_dict()
    path = data.draw(st.sampled_from(nodes(document)[1:]))
    at(document, path[:-1])[path[-1]] = data.draw(JUNK)
    read_strictly(type(value).__name__, document)


def test_every_seed_is_read_back_unchanged() -> None:
    for kind, document in SEEDS:
        assert wire_kind(kind).from_dict(document).to_dict() == document


def test_a_document_nested_too_deeply_is_refused() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(SerializationError):
        wire_kind("Shape").from_dict({**SEEDS[0][1], "coverage": deep})
    with pytest.raises(SerializationError) as refused:
        parse_json("[" * 100_000 + "]" * 100_000)
    assert str(refused.value) == "JSON nested too deeply"


def test_an_integer_too_long_to_print_is_refused() -> None:
    with pytest.raises(SerializationError):
        wire_kind("Manifest").from_dict({**SEEDS[8][1], "table": 10**5000})
