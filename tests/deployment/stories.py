"""Stories: what a test module does to the deployment, played at once with every other module's.

The layer's time is spent waiting: for the scheduler to queue a task, for a task's process to
start, for the next poll. A module registers what it drives (triggering runs, waiting on them)
as a story, a function of a REST client and the database servers; the session starts every
collected module's story in a thread of its own as soon as the deployment is up (conftest.py,
`played`), so independent runs share the scheduler's time, and each test waits on its module's
story's result.

    @story
    def mapped(client: Client, servers: Servers) -> Run: ...     # in a test module

    def test_it(played: Played) -> None:
        run = played.result(mapped)                  # waits for the story, or raises its error

    told = told_by(mapped, "told")                   # or a module fixture named told, its result
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import psycopg
import pytest
from deployment import Client

T = TypeVar("T")

Servers = dict[str, str | None]
"""The database servers' URLs by kind ("postgres", "mariadb"), None for one not reachable."""

Story = Callable[[Client, Servers], Any]

STORIES: dict[str, Story] = {}
"""Every story of every imported test module, by its module and name."""


def story(function: Callable[[Client, Servers], T]) -> Callable[[Client, Servers], T]:
    """Register function as its module's story (modules are imported before any test runs)."""
    STORIES[key(function)] = function
    return function


def key(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__name__}"


class Played:
    """The stories started for this session, each a Future of what its function returned."""

    def __init__(self, futures: dict[str, Future[Any]]) -> None:
        self.futures = futures

    def result(self, function: Callable[[Client, Servers], T], timeout: float = 600) -> T:
        result: T = self.futures[key(function)].result(timeout)
        return result


def told_by(function: Callable[[Client, Servers], T], name: str) -> Any:
    """A module fixture named name whose value is what the story function returned."""

    @pytest.fixture(scope="module", name=name)
    def result(played: Played) -> T:
        return played.result(function)

    return result


def drop_schema(postgres_url: str, schema: str) -> None:
    """A PostgreSQL schema a story or the session made, dropped with everything in it."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
