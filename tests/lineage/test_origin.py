"""Origin: where a delivery's rows came from, as XCom hands it from extract to publish."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dogana_provider.lineage.origin import LONGEST, Origin, of_file, of_query, origins_of

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=8,
)


def test_an_origin_never_holds_a_uri_with_a_password() -> None:
    with pytest.raises(ValueError, match=r"Origin\.source: a URI carrying a user or password"):
        Origin(source="postgresql://loader:s3cret@db:5432/shop")
    named = of_file("s3://AKIAKEY:s3cret@deliveries/orders/2026-12-01.parquet")
    assert named == "s3://deliveries/orders/2026-12-01.parquet"
    assert "s3cret" not in str(Origin(source=named))


def test_a_long_file_uri_keeps_its_end() -> None:
    uri = "file:///" + "d/" * 200 + "orders.parquet"
    named = of_file(uri)
    assert len(named) == LONGEST and named.endswith("/orders.parquet")


def test_a_query_is_named_by_its_digest_not_its_text() -> None:
    sql = "SELECT * FROM orders WHERE region = 'north'"
    assert of_query(sql) == of_query(sql) != of_query(sql + " ")
    assert of_query(sql).startswith("query:") and "north" not in of_query(sql)


def test_an_origin_round_trips_through_its_dict() -> None:
    origin = Origin("shop_db", "shop.orders", "orders_daily", "manual__1", "extract")
    assert Origin.from_dict(origin.to_dict()) == origin
    assert origins_of({"orders": origin.to_dict()}) == {"orders": origin}


@given(JSON)
def test_bad_origin_input_is_refused_naming_where(value: object) -> None:
    try:
        found = origins_of({"orders": value}, "origins")
    except ValueError as exc:
        assert str(exc).startswith("origins['orders']")
    else:
        assert isinstance(found["orders"], Origin)
