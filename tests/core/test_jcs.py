"""Versioned JSON 5: RFC 8785, the JSON Canonicalization Scheme, which identities hash.

JCS emits UTF-8, sorts keys by UTF-16 code units and prints binary64 numbers by the ECMAScript
shortest round trip, -0 as 0. Integers must be exact binary64, never rounded. dogana_core writes
its own (standard library only); these tests pin it to the RFC's own examples and compare it
with the independent rfc8785 package on generated values.
"""

from __future__ import annotations

import math
import struct
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from dogana_core import SerializationError
from dogana_core.jcs import canonicalize

# RFC 8785 Appendix B: IEEE 754 bit patterns and the text JCS gives them.
APPENDIX_B = {
    "0000000000000000": "0",
    "8000000000000000": "0",
    "0000000000000001": "5e-324",
    "8000000000000001": "-5e-324",
    "7fefffffffffffff": "1.7976931348623157e+308",
    "ffefffffffffffff": "-1.7976931348623157e+308",
    "4340000000000000": "9007199254740992",
    "c340000000000000": "-9007199254740992",
    "4430000000000000": "295147905179352830000",
    "44b52d02c7e14af5": "9.999999999999997e+22",
    "44b52d02c7e14af6": "1e+23",
    "44b52d02c7e14af7": "1.0000000000000001e+23",
    "444b1ae4d6e2ef4e": "999999999999999700000",
    "444b1ae4d6e2ef4f": "999999999999999900000",
    "444b1ae4d6e2ef50": "1e+21",
    "3eb0c6f7a0b5ed8c": "9.999999999999997e-7",
    "3eb0c6f7a0b5ed8d": "0.000001",
    "41b3de4355555553": "333333333.3333332",
    "41b3de4355555554": "333333333.33333325",
    "41b3de4355555555": "333333333.3333333",
    "41b3de4355555556": "333333333.3333334",
    "41b3de4355555557": "333333333.33333343",
    "becbf647612f3696": "-0.0000033333333333333333",
    "43143ff3c1cb0959": "1424953923781206.2",
}


@pytest.mark.parametrize(("bits", "text"), sorted(APPENDIX_B.items()))
def test_numbers_print_as_the_ecmascript_shortest_round_trip(bits: str, text: str) -> None:
    (value,) = struct.unpack(">d", bytes.fromhex(bits))
    assert canonicalize(value) == text.encode("ascii")


def test_negative_zero_prints_as_zero() -> None:
    assert canonicalize(-0.0) == b"0"
    assert canonicalize([0.0, -0.0]) == b"[0,0]"


def refused(value: Any, path: str, message: str) -> None:
    """canonicalize refuses value, naming the path to the part refused and the rule."""
    with pytest.raises(SerializationError) as caught:
        canonicalize(value)
    assert (caught.value.path, caught.value.message, str(caught.value)) == (
        path,
        message,
        f"{path}: {message}",
    )


def test_non_finite_numbers_are_refused() -> None:
    for value, text in ((math.nan, "nan"), (math.inf, "inf"), (-math.inf, "-inf")):
        refused(value, "$", f"{text} is not a JSON number")


def test_the_rfc_example_canonicalizes_as_the_rfc_shows() -> None:
    # RFC 8785 section 3.2.2, parsed by Python: 333333333.33333329 is binary64 333333333.3333333.
    value = {
        "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
        "literals": [None, True, False],
    }
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonicalize(value) == expected.encode("utf-8")


def test_keys_sort_by_utf16_code_units() -> None:
    # RFC 8785 section 3.2.3: the emoji (surrogates D83D DE00) sorts before U+FB33, although its
    # code point is larger.
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    text = canonicalize(value).decode("utf-8")
    order = ["\\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    positions = [text.index(f'"{key}"') for key in order]
    assert positions == sorted(positions)


def test_output_is_utf8_without_ascii_escapes() -> None:
    assert canonicalize("caf\u00e9 \U0001f600") == '"caf\u00e9 \U0001f600"'.encode()


def test_control_characters_use_short_escapes_or_lowercase_hex() -> None:
    assert canonicalize("\b\t\n\f\r\x00\x1f\x7f") == b'"\\b\\t\\n\\f\\r\\u0000\\u001f\x7f"'


def test_quotes_and_backslashes_are_escaped_and_slashes_are_not() -> None:
    assert canonicalize('a"b\\c/d') == b'"a\\"b\\\\c/d"'


def test_strings_reject_lone_surrogates() -> None:
    for text in ("\ud800", "a\udfffb", "\udc00\ud800"):
        for value, path in ((text, "$"), ({text: 1}, "$"), ({"a": [1, text]}, "$.a[1]")):
            with pytest.raises(SerializationError) as refused:
                canonicalize(value)
            assert str(refused.value) == f"{path}: string holds a lone surrogate"


def test_integers_within_binary64_print_exactly() -> None:
    assert canonicalize(2**53 - 1) == b"9007199254740991"
    assert canonicalize(-(2**53 - 1)) == b"-9007199254740991"
    assert canonicalize(2**53) == b"9007199254740992"


def test_large_exact_integers_print_as_their_binary64_shortest_token() -> None:
    assert canonicalize(2**60) == b"1152921504606847000"
    assert canonicalize(-(2**60)) == b"-1152921504606847000"
    assert canonicalize(10**21) == b"1e+21"


def test_integers_binary64_cannot_hold_are_refused_never_rounded() -> None:
    for value in (2**53 + 1, -(2**53 + 1), 2**60 + 1):
        refused(value, "$", f"integer {value} is not exact in binary64; send it as a string")
    refused(10**400, "$", f"integer {10**400} overflows binary64")


def test_object_keys_are_strings() -> None:
    for value, message in (
        ({1: "one"}, "$: object key 1 is not a string"),
        ({"a": [{None: 1}]}, "$.a[0]: object key None is not a string"),
    ):
        with pytest.raises(SerializationError) as refused:
            canonicalize(value)
        assert str(refused.value) == message


def test_only_json_values_canonicalize() -> None:
    for value, name in ((b"bytes", "bytes"), ({1, 2}, "set"), (object(), "object")):
        for wrapped, path in ((value, "$"), ({"a": [value]}, "$.a[0]")):
            with pytest.raises(SerializationError) as refused:
                canonicalize(wrapped)
            assert str(refused.value) == f"{path}: {name} is not a JSON value"


def test_literals_and_empty_containers() -> None:
    assert canonicalize([None, True, False, [], {}]) == b"[null,true,false,[],{}]"


# Against an independent implementation -----------------------------------------------------------

SAFE_INTEGERS = st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)
KEYS = st.text(st.characters(codec="utf-8"), max_size=8) | st.sampled_from(
    ["\U0001f600", "\ufb33", "\uffff", "\U00010000", "\u20ac", "\r", "", "a", "A", "\u00e9"]
)
SCALARS = (
    st.none()
    | st.booleans()
    | SAFE_INTEGERS
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([-0.0, 5e-324, 1e21, 1e-7, 1.7976931348623157e308, 0.1, 1e23])
    | st.text(st.characters(codec="utf-8"))
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=300)
@given(JSON_VALUES)
def test_jcs_equals_the_rfc8785_package_on_generated_values(value: Any) -> None:
    assert canonicalize(value) == rfc8785.dumps(value)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_finite_float_prints_as_the_rfc8785_package_prints_it(value: float) -> None:
    assert canonicalize(value) == rfc8785.dumps(value)


@given(st.floats(min_value=2.0**53, max_value=1.7976931348623157e308))
def test_large_exact_integers_print_as_the_binary64_value_they_equal(magnitude: float) -> None:
    # rfc8785 refuses Python ints past 2**53 - 1; an exact one means the same as its float.
    for value in (int(magnitude), -int(magnitude)):
        assert canonicalize(value) == rfc8785.dumps(float(value))
        assert canonicalize({"n": [value]}) == rfc8785.dumps({"n": [float(value)]})


@given(st.integers(min_value=2**53 + 1, max_value=2**70))
def test_integers_are_canonical_only_when_binary64_holds_them(value: int) -> None:
    if int(float(value)) == value:
        assert canonicalize(value) == rfc8785.dumps(float(value))
    else:
        with pytest.raises(SerializationError):
            canonicalize(value)


def test_an_integer_binary64_cannot_hold_is_refused_naming_its_path() -> None:
    with pytest.raises(SerializationError) as caught:
        canonicalize({"a": 2**53 + 1})
    assert str(caught.value) == (
        "$.a: integer 9007199254740993 is not exact in binary64; send it as a string"
    )
    with pytest.raises(SerializationError) as caught:
        canonicalize({"a": 10**400})
    assert (caught.value.path, caught.value.message) == (
        "$.a",
        f"integer {10**400} overflows binary64",
    )


def test_a_number_that_is_not_finite_is_refused_naming_its_path() -> None:
    for value, text in ((math.nan, "nan"), (-math.inf, "-inf")):
        with pytest.raises(SerializationError) as caught:
            canonicalize({"a": [value]})
        assert str(caught.value) == f"$.a[0]: {text} is not a JSON number"
