"""A row-by-row read pauses Python's cyclic garbage collector (extract.py) and leaves it as it
found it: on after a read that began with it on, off after one that began with it off, on after
a read that failed, and off until the last of nested reads ends."""

from __future__ import annotations

import gc

import pytest

from dogana_provider.sources.extract import _collection_paused


def test_the_collector_is_off_during_a_read_and_on_again_after() -> None:
    assert gc.isenabled()
    with _collection_paused():
        assert not gc.isenabled()
        with _collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_failed_read_turns_the_collector_on_again() -> None:
    with pytest.raises(RuntimeError), _collection_paused():
        raise RuntimeError("the connection was lost")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    try:
        with _collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
