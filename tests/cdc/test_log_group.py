"""A group of tables read at one log position (one slot's LSN on PostgreSQL, one pass over the
binlog on MariaDB) and published together: a transaction that touches two of them is in both
deliveries or in neither, and a reader of the receiver never sees one table ahead of the other."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from airflow_runs import states, xcom
from cdc_pipeline import COLUMNS, FULL_READ, MariaTable, PgTable, log_contract, write_group_dag

from dogana_core.group import Group
from dogana_core.manifest import Manifest
from dogana_provider.hooks.dogana import DoganaHook
from dogana_provider.receiver.transactions import transaction
from dogana_provider.schema.versions import SchemaVersions

ROWS = 20
TOTAL = ROWS * 100 * 2


def quoted(source: PgTable | MariaTable, table: str) -> str:
    """Another table's name, quoted as the source's database quotes its table's."""
    return source.quoted[0] + table + source.quoted[-1]


@pytest.fixture
def second(log_source: PgTable | MariaTable) -> Iterator[str]:
    table = f"{log_source.table}_b"
    log_source.execute(f"CREATE TABLE {quoted(log_source, table)} ({log_source.ddl})")
    try:
        yield table
    finally:
        log_source.execute(f"DROP TABLE IF EXISTS {quoted(log_source, table)}")


def fill(source: PgTable | MariaTable, tables: list[str]) -> None:
    rows = ", ".join(f"({i}, 100, {source.now}, 'n', true)" for i in range(1, ROWS + 1))
    for table in tables:
        source.execute(f"INSERT INTO {quoted(source, table)} VALUES {rows}")


@pytest.mark.airflow
def test_a_transaction_across_two_tables_of_a_group_is_published_in_both_at_one_instant(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    log_source: PgTable | MariaTable,
    second: str,
) -> None:
    source = log_source
    tables = [source.table, second]
    first_table, second_table = (quoted(source, t) for t in tables)
    connector = source.group_config(tables, columns=dict.fromkeys(tables, COLUMNS), fetch_rows=7)
    contracts = [log_contract(table) for table in tables]
    module, receiver_id = write_group_dag(airflow_home, tmp_path, monkeypatch, connector, contracts)
    fill(source, tables)
    hook = DoganaHook(receiver_id)
    stop = threading.Event()
    samples: list[tuple[Any, ...]] = []

    def move() -> None:
        """Each transaction moves an amount from a row of one table to a row of the other."""
        session = source.session()
        try:
            step = 0
            while not stop.is_set():
                step += 1
                session.execute("BEGIN")
                session.execute(
                    f"UPDATE {first_table} SET amount = amount - 1 WHERE id = %s",
                    (step % ROWS + 1,),
                )
                session.execute(
                    f"UPDATE {second_table} SET amount = amount + 1 WHERE id = %s",
                    (step * 7 % ROWS + 1,),
                )
                session.execute("COMMIT")
        finally:
            session.db.close()

    def sample() -> None:
        """The receiver's two tables read in one committed state, as a reader would."""
        while not stop.is_set():
            try:
                with hook.committed() as connection:
                    sums = [
                        connection.execute(f'SELECT sum(amount), count(*) FROM "{t}"').fetchone()
                        for t in tables
                    ]
                    ledgers = [hook.receiver.store.state(connection, t) for t in tables]
            except Exception:  # before the first publication the tables are not there
                continue
            if all(ledger is not None for ledger in ledgers):
                samples.append((*sums, *(ledger.ledger.generation for ledger in ledgers)))

    threads = [threading.Thread(target=move), threading.Thread(target=sample)]
    first = module.dag.test()
    for thread in threads:
        thread.start()
    try:
        runs = [module.dag.test() for _ in range(3)]
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    last = module.dag.test()
    for run in (first, *runs, last):
        assert set(states(run).values()) == {"success"}
    manifests = [Manifest.from_dict(d["manifest"]) for d in xcom(last, "both.extract")]
    assert [m.shape for m in manifests] == ["log", "log"]
    assert len({(m.produced_at, m.since, m.generation) for m in manifests}) == 1

    with hook.committed() as connection:
        for table in tables:
            published = connection.execute(
                f'SELECT id, CAST(amount AS INTEGER) FROM "{table}" ORDER BY id'
            ).fetchall()
            found = source.execute(f"SELECT id, amount FROM {quoted(source, table)} ORDER BY id")
            assert [tuple(r) for r in published] == [(i, int(a)) for i, a in found.fetchall()]
    ledgers = hook.ledgers(tables)
    group = Group(tuple(ledger.contract for ledger in ledgers.values()))
    claims = group.claims(ledgers, manifests[0].produced_at, limit=timedelta.max)
    assert claims.exact_as_of == manifests[0].produced_at

    assert samples, "the reader sampled the receiver while the group was delivered"
    for (sum_a, count_a), (sum_b, count_b), position_a, position_b in samples:
        assert (count_a, count_b) == (ROWS, ROWS)
        assert float(sum_a) + float(sum_b) == TOTAL, "a transaction in one table, not the other"
        assert position_a == position_b


def test_a_truncate_of_a_table_of_a_group_refuses_the_group_read_as_truncate_in_log(
    log_source: PgTable | MariaTable, second: str
) -> None:
    from dogana_provider.connectors import RefusedRead, group_connector_of

    source, tables = log_source, [log_source.table, second]
    fill(source, tables)
    group = group_connector_of(source.group_config(tables, columns=dict.fromkeys(tables, COLUMNS)))
    whole = group.read(None)
    assert {len(whole[t].batches) > 0 for t in tables} == {True}
    positions = {whole[t].checkpoint() for t in tables}
    assert len(positions) == 1, "every table of the group read at one position"
    source.execute(f"UPDATE {quoted(source, tables[0])} SET amount = 1 WHERE id = 1")
    source.execute(f"TRUNCATE TABLE {quoted(source, second)}")
    with pytest.raises(RefusedRead) as raised:
        group.read(positions.pop())
    assert raised.value.rule == "truncate_in_log"
    assert second in str(raised.value) and FULL_READ in str(raised.value)


@pytest.mark.parametrize("kind", ["pg_logical", "mariadb_binlog"])
def test_a_group_names_two_or_more_tables_once_and_only_its_connectors_options(kind: str) -> None:
    from dogana_provider.connectors import ConnectorError, group_connector_of

    base = (
        {"kind": kind, "conn_id": "db", "slot": "s"}
        if kind == "pg_logical"
        else {
            "kind": kind,
            "conn_id": "db",
        }
    )
    group = group_connector_of({**base, "tables": ["a", "b"], "columns": {"b": COLUMNS}})
    assert [m.table for m in group.members.values()] == ["a", "b"]
    assert group.member("B").config.get("columns") == COLUMNS
    mistakes = [
        {**base, "tables": ["a"]},
        {**base, "tables": ["a", "A"]},
        {**base, "table": "a"},
        {**base, "tables": ["a", "b"], "unknown": 1},
        {**base, "tables": ["a", "b"], "columns": {"c": COLUMNS}},
    ]
    for config in mistakes:
        with pytest.raises(ConnectorError, match=f"a {kind} group"):
            group_connector_of(config)
    with pytest.raises(ConnectorError, match="is not a table of the group"):
        group.member("c")


def test_only_a_log_reads_a_group_in_one_read_and_extract_takes_its_connector() -> None:
    from dogana_provider.connectors import GROUP_CONNECTORS, ConnectorError, group_connector_of
    from dogana_provider.operators.extract import ExtractOperator

    assert sorted(GROUP_CONNECTORS) == ["mariadb_binlog", "pg_logical"]
    with pytest.raises(ConnectorError, match="reads one table at a time"):
        group_connector_of({"kind": "sql", "conn_id": "db", "tables": ["a", "b"]})
    contracts = [log_contract("a").to_dict(), log_contract("b").to_dict()]
    for kind in GROUP_CONNECTORS:
        connector = {"kind": kind, "conn_id": "db", "tables": ["a", "b"]}
        ExtractOperator(task_id=f"extract_{kind}", group=contracts, connector=connector)
    with pytest.raises(ValueError, match="a jsonl connector reads one table"):
        ExtractOperator(
            task_id="extract_jsonl", group=contracts, connector={"kind": "jsonl", "path": "x"}
        )


@pytest.mark.mariadb
def test_a_group_read_from_a_purged_binlog_position_is_refused_naming_every_tables_full_read(
    binlog_source: MariaTable,
) -> None:
    from dogana_provider.connectors import RefusedRead, group_connector_of

    tables = [binlog_source.table, f"{binlog_source.table}_b"]
    binlog_source.execute(f"CREATE TABLE `{tables[1]}` ({binlog_source.ddl})")
    try:
        group = group_connector_of(binlog_source.group_config(tables))
        with pytest.raises(RefusedRead) as raised:
            group.read(4)  # binlog file 0, which a server never keeps
    finally:
        binlog_source.execute(f"DROP TABLE IF EXISTS `{tables[1]}`")
    assert raised.value.rule == "binlog_purged"
    assert FULL_READ in str(raised.value) and ", ".join(tables) in str(raised.value)


def test_a_group_plan_mixing_whole_reads_and_log_reads_is_refused_naming_the_fix() -> None:
    from datetime import UTC, datetime

    from dogana_core.planner import ExtractionRequest
    from dogana_provider.connectors import ConnectorError
    from dogana_provider.operators.extract import _group_since

    contracts = {table: log_contract(table) for table in ("a", "b")}
    until = datetime(2026, 1, 1, tzinfo=UTC)
    whole = [ExtractionRequest(t, "snapshot", until, issue_position=True) for t in "ab"]
    assert _group_since(contracts, whole) is None
    logs = [ExtractionRequest(t, "log", until, since=7, issue_position=True) for t in "ab"]
    assert _group_since(contracts, logs) == 7
    for mixed in ([whole[0], logs[1]], [logs[0], replace(logs[1], since=8)]):
        with pytest.raises(ConnectorError, match="every table's complete shape"):
            _group_since(contracts, mixed)


@pytest.mark.airflow
def test_a_refused_group_read_keeps_what_is_published_and_prints_every_tables_full_read(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    log_source: PgTable | MariaTable,
    second: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    import json
    import shlex

    source, tables = log_source, [log_source.table, second]
    connector = source.group_config(tables, columns=dict.fromkeys(tables, COLUMNS))
    contracts = [log_contract(table) for table in tables]
    module, receiver_id = write_group_dag(airflow_home, tmp_path, monkeypatch, connector, contracts)
    fill(source, tables)
    assert set(states(module.dag.test()).values()) == {"success"}
    hook = DoganaHook(receiver_id)
    before = {t: ledger.generation for t, ledger in hook.ledgers(tables).items()}
    source.execute(f"TRUNCATE TABLE {quoted(source, second)}")
    capfd.readouterr()
    refused = module.dag.test()
    assert states(refused)["both.extract"] == "failed"
    assert {t: ledger.generation for t, ledger in hook.ledgers(tables).items()} == before
    conf = json.dumps({"dogana_shape": dict.fromkeys(tables, "snapshot")})
    printed = f"airflow dags trigger {module.dag.dag_id} --conf {shlex.quote(conf)}"
    assert f"to run the full read: {printed}" in capfd.readouterr().out
    reset = module.dag.test(run_conf=json.loads(shlex.split(printed)[5]))
    assert set(states(reset).values()) == {"success"}
    with hook.committed() as connection:
        counts = [connection.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables]
    assert counts == [ROWS, 0]


def published(hook: DoganaHook, table: str) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """A table's published columns and rows, in key order."""
    with hook.receiver.read(table) as snapshot:
        return snapshot.columns, sorted(snapshot.rows)


def kept(hook: DoganaHook, tables: list[str]) -> Any:
    """What is published of the tables: rows, ledgers and receipts."""
    return (
        {t: published(hook, t) for t in tables},
        hook.ledgers(tables),
        {t: [r.to_dict() for r in hook.receiver.receipts(t)] for t in tables},
    )


def equal_to_the_source(
    hook: DoganaHook, source: PgTable | MariaTable, table: str, extra: list[str]
) -> bool:
    """The published table holds the source's rows (amounts are integral here)."""
    columns = ", ".join(["name", *extra])
    with hook.committed() as connection:
        found = connection.execute(
            f'SELECT id, CAST(amount AS INTEGER), {columns} FROM "{table}" ORDER BY id'
        )
        held = [tuple(row) for row in found.fetchall()]
    rows = source.execute(f"SELECT id, amount, {columns} FROM {quoted(source, table)} ORDER BY id")
    return held == [(key, int(amount), *rest) for key, amount, *rest in rows.fetchall()]


# The ALTER (on PostgreSQL, on MariaDB), the refusal's words, the columns declared as they are
# now, and the group's schema policy. The retype keeps the column's dogana type (str), which the
# published table holds as it is. The widening changes it (decimal(12,2) to decimal(14,2)),
# which the policy judges before the read: data_type evolve lets the full read publish it.
ALTERS = {
    "add": (("ADD COLUMN extra INT DEFAULT 5",) * 2, "extra added", {"extra": "int"}, None),
    "retype": (
        ("ALTER COLUMN name TYPE varchar(40)", "MODIFY name VARCHAR(40)"),
        "name retyped",
        {},
        None,
    ),
    "widen": (
        ("ALTER COLUMN amount TYPE numeric(14,2)", "MODIFY amount DECIMAL(14,2)"),
        "amount retyped",
        {"amount": "decimal(14,2)"},
        {"data_type": "evolve"},
    ),
}


@pytest.mark.airflow
@pytest.mark.parametrize("change", sorted(ALTERS))
def test_a_column_changed_in_one_table_of_a_group_refuses_the_group_until_its_full_read(
    airflow_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    log_source: PgTable | MariaTable,
    second: str,
    capfd: pytest.CaptureFixture[str],
    change: str,
) -> None:
    """A column added, retyped or widened in one table of a group, between two deliveries and amid
    changes to both tables: the group's read is refused as relation_changed, naming the table
    and the change, and neither table's rows, ledger or receipts move. The command printed is
    the group's full read, every table's complete shape: declaring the columns as they are now
    does not read the log over the change; that full read reads both tables again, and the log
    goes on from it; a widened decimal is published with the table's next schema version."""
    import json
    import shlex

    source, tables = log_source, [log_source.table, second]
    first_table, second_table = (quoted(source, t) for t in tables)
    (alter_pg, alter_maria), named, declared, policy = ALTERS[change]
    contracts = [log_contract(table) for table in tables]

    def dag(columns: dict[str, dict[str, str]]) -> Any:
        connector = source.group_config(tables, columns=columns)
        return write_group_dag(airflow_home, tmp_path, monkeypatch, connector, contracts, policy)

    module, receiver_id = dag(dict.fromkeys(tables, COLUMNS))
    fill(source, tables)
    assert set(states(module.dag.test()).values()) == {"success"}
    hook = DoganaHook(receiver_id)
    before = kept(hook, tables)
    # In the log: a transaction over both tables, the ALTER of the second, then more of both.
    source.execute("BEGIN")
    source.execute(f"UPDATE {first_table} SET amount = amount - 1 WHERE id = 1")
    source.execute(f"UPDATE {second_table} SET amount = amount + 1 WHERE id = 2")
    source.execute("COMMIT")
    alter = alter_pg if isinstance(source, PgTable) else alter_maria
    source.execute(f"ALTER TABLE {second_table} {alter}")
    source.execute(f"UPDATE {first_table} SET amount = amount - 2 WHERE id = 3")
    source.execute(f"UPDATE {second_table} SET amount = amount + 2 WHERE id = 4")

    capfd.readouterr()
    run = states(module.dag.test())
    assert run["both.extract"] == "failed" and run["both.publish"] != "success"
    logged = capfd.readouterr().out
    assert "relation_changed" in logged and f"{second}'s columns" in logged and named in logged
    assert kept(hook, tables) == before
    conf = json.dumps({"dogana_shape": dict.fromkeys(tables, "snapshot")})
    printed = f"airflow dags trigger {module.dag.dag_id} --conf {shlex.quote(conf)}"
    assert f"to run the full read: {printed}" in logged

    module, _ = dag({tables[0]: COLUMNS, second: {**COLUMNS, **declared}})
    capfd.readouterr()
    assert states(module.dag.test())["both.extract"] == "failed"
    assert "relation_changed" in capfd.readouterr().out, "the log over the change is not read"
    assert kept(hook, tables) == before

    reset = module.dag.test(run_conf=json.loads(shlex.split(printed)[5]))
    assert set(states(reset).values()) == {"success"}
    source.execute(f"UPDATE {first_table} SET amount = amount - 3 WHERE id = 5")
    source.execute(f"UPDATE {second_table} SET amount = amount + 3, name = 'after' WHERE id = 6")
    later = module.dag.test()
    assert set(states(later).values()) == {"success"}
    shapes = [Manifest.from_dict(d["manifest"]).shape for d in xcom(later, "both.extract")]
    assert shapes == ["log", "log"]
    assert equal_to_the_source(hook, source, tables[0], [])
    assert equal_to_the_source(hook, source, second, ["extra"] if change == "add" else [])
    if change == "widen":
        receiver = hook.receiver
        held = SchemaVersions(receiver.dialect, receiver.store.prefix)
        with transaction(receiver.connect, receiver.dialect, write=False) as connection:
            amounts = [
                [{c.name: c.type for c in v.columns}["amount"] for v in held.history(connection, t)]
                for t in tables
            ]
        assert amounts == [["decimal(12,2)"], ["decimal(12,2)", "decimal(14,2)"]]
