"""Identity vectors fix canonical forms and hashes for other implementations.

Each shipped case is recomputed from its wire form alone: from_dict(wire) must write the same
wire, the same identity_json and the same identity, and the identity must be the SHA-256 of the
RFC 8785 bytes of the identity form, which an independent JCS implementation also produces.
"""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from dogana_core import vectors
from dogana_core.jcs import canonicalize
from dogana_core.kinds import wire_kind, wire_kinds
from dogana_core.vectors import __main__ as vectors_main
from dogana_core.vectors import load_vectors, vectors_text

VECTORS = load_vectors()
IDS = [f"{i:02d}-{case['kind']}" for i, case in enumerate(VECTORS)]


def walk(value: Any) -> Any:
    """Every value nested in a JSON value, itself included."""
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)


def as_binary64(text: bytes) -> Any:
    """JSON as JCS reads it: every number a binary64, so a large integer token is a float."""

    def number(token: str) -> int | float:
        value = int(token)
        return value if abs(value) <= 2**53 - 1 else float(token)

    return json.loads(text, parse_int=number)


def test_the_shipped_vectors_equal_what_the_generator_writes() -> None:
    shipped = resources.files("dogana_core.vectors").joinpath("identity.json")
    assert shipped.read_text(encoding="utf-8") == vectors_text(), (
        "run `python -m dogana_core.vectors`; if an identity changed, a canonical form changed"
    )


def test_every_case_has_its_five_fields() -> None:
    for case in VECTORS:
        assert set(case) == {"name", "kind", "wire", "identity_json", "identity"}
        assert case["wire"]["kind"] == case["kind"]
        assert case["wire"]["version"] == 4


@pytest.mark.parametrize("case", VECTORS, ids=IDS)
def test_each_vector_is_recomputed_from_its_wire(case: dict[str, Any]) -> None:
    value = wire_kind(case["kind"]).from_dict(case["wire"])
    assert value.to_dict() == case["wire"]
    assert value.identity_json() == case["identity_json"]
    assert value.identity == case["identity"]


@pytest.mark.parametrize("case", VECTORS, ids=IDS)
def test_each_identity_is_the_sha256_of_the_jcs_bytes(case: dict[str, Any]) -> None:
    data = case["identity_json"].encode("utf-8")
    assert hashlib.sha256(data).hexdigest() == case["identity"]
    assert re.fullmatch("[0-9a-f]{64}", case["identity"])
    assert canonicalize(as_binary64(data)) == data


@pytest.mark.parametrize("case", VECTORS, ids=IDS)
def test_each_identity_json_is_what_an_independent_jcs_writes(case: dict[str, Any]) -> None:
    data = case["identity_json"].encode("utf-8")
    assert rfc8785.dumps(as_binary64(data)) == data


@pytest.mark.parametrize("case", VECTORS, ids=IDS)
def test_the_identity_form_omits_the_version_and_writes_datetimes_in_utc(
    case: dict[str, Any],
) -> None:
    identity_form = json.loads(case["identity_json"])
    for item in walk(identity_form):
        if isinstance(item, dict):
            assert "version" not in item
            if "$datetime" in item:
                assert re.fullmatch(
                    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00", item["$datetime"]
                )
                assert not item["$datetime"].endswith(".000000+00:00")


def test_the_vectors_cover_every_wire_kind() -> None:
    covered = {case["kind"] for case in VECTORS}
    missing = [kind.__name__ for kind in wire_kinds() if kind.__name__ not in covered]
    assert not missing, f"add examples of {missing} to dogana_core/vectors and regenerate"


def test_the_vectors_cover_every_tag() -> None:
    tags = [item for case in VECTORS for item in walk(case["wire"]) if isinstance(item, dict)]
    datetimes = [tag["$datetime"] for tag in tags if "$datetime" in tag]
    seconds = [tag["$seconds"] for tag in tags if "$seconds" in tag]
    assert any("$date" in tag for tag in tags)
    assert any("." in text for text in datetimes), "a datetime with microseconds"
    assert any("." not in text for text in datetimes), "a datetime without"
    assert any(type(number) is int and number > 0 for number in seconds), "an integral duration"
    assert any(type(number) is float for number in seconds), "a fractional duration"


def test_the_vectors_cover_large_integers_and_unicode_strings() -> None:
    values = [item for case in VECTORS for item in walk(case["wire"])]
    assert any(type(v) is int and v > 2**53 for v in values), "an integer past 2**53"
    strings = [v for v in values if isinstance(v, str)]
    assert any(not s.isascii() and all(ord(c) < 0x10000 for c in s) for s in strings)
    assert any(any(ord(c) >= 0x10000 for c in s) for s in strings), "beyond the BMP"
    assert any(any(ord(c) < 0x20 for c in s) for s in strings), "a control character"


def test_large_integers_are_exact_on_the_wire_and_binary64_in_the_identity() -> None:
    case = next(c for c in VECTORS if c["kind"] == "Manifest" and c["wire"]["generation"] == 2**60)
    assert case["wire"]["generation"] == 1152921504606846976
    assert '"generation":1152921504606847000' in case["identity_json"]


def test_a_replay_is_identified_as_the_acceptance_it_repeats() -> None:
    receipts = [c for c in VECTORS if c["kind"] == "Receipt"]
    accepted = next(c for c in receipts if c["wire"]["outcome"] == "accepted")
    replayed = next(c for c in receipts if c["wire"]["outcome"] == "replayed")
    assert replayed["identity"] == accepted["identity"]
    assert '"outcome":"accepted"' in replayed["identity_json"]
    assert {**replayed["wire"], "outcome": "accepted"} == accepted["wire"]


def test_defaults_are_omitted_from_the_identity_form() -> None:
    by_name = {case["name"]: case for case in VECTORS}
    assert by_name["Shape at every default: only its kind is identified"]["identity_json"] == (
        '{"kind":"Shape"}'
    )
    region = next(c for c in VECTORS if c["kind"] == "Region" and c["wire"]["low"] is None)
    assert region["identity_json"] == '{"kind":"Region"}'


def test_regions_are_written_half_open_with_one_form() -> None:
    for case in VECTORS:
        for item in walk(case["wire"]):
            if isinstance(item, dict) and item.get("kind") in ("Region", "RegionClaim"):
                assert item["high_open"] is True
                assert item["low_open"] is (item["low"] is None)
                assert item["low"] not in ("", {"$date": "0001-01-01"})
                assert item["low"] != {"$datetime": "0001-01-01T00:00:00+00:00"}


def test_the_readme_states_the_canonical_forms() -> None:
    readme = resources.files("dogana_core.vectors").joinpath("README.md").read_text("utf-8")
    for phrase in (
        "+00:00",
        "exactly six digits",
        "integer it spells",
        "sorted",
        "[low, high)",
        "written\n  unbounded",
        "without `version`",
        "`accepted`",
        "RFC 8785",
        "UTF-16 code units",
    ):
        assert phrase in readme, phrase


def test_the_generator_writes_identity_json_beside_itself_and_says_when_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """python -m dogana_core.vectors writes into the package's folder: here a stand-in."""
    monkeypatch.setattr(vectors, "__file__", str(tmp_path / "__init__.py"))
    written = tmp_path / "identity.json"
    written.write_text("[]\n", encoding="utf-8")
    vectors_main.main()
    assert written.read_text(encoding="utf-8") == vectors_text()
    vectors_main.main()
    count = len(load_vectors())
    assert capsys.readouterr().out == (
        f"{count} identity vectors; identity.json changed\n"
        f"{count} identity vectors; identity.json current\n"
    )


def test_the_generator_writes_into_a_folder_it_is_given(tmp_path: Path) -> None:
    assert vectors.write(tmp_path) is True
    assert (tmp_path / "identity.json").read_text(encoding="utf-8") == vectors_text()
    assert vectors.write(tmp_path) is False
