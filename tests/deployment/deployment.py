"""A real Airflow deployment for tests: its own AIRFLOW_HOME and PostgreSQL metadata database,
the scheduler, DAG processor, triggerer and API server as processes, and a REST client.

What `dag.test()` never exercises is here: a DAG file parsed by the DAG processor, a run created
through `/api/v2` (with or without a logical date), tasks run by an executor in processes of
their own that reach the API server's execution API, a sensor deferred to the triggerer, and
Asset events that make the scheduler create runs of the DAGs scheduled on them.

    deployment = Deployment(postgres_url, dags=[...], environment={"AIRFLOW_CONN_X": ...})
    deployment.start()          # db migrate, the processes, until /monitor/health is healthy
    client = deployment.client()
    run = client.trigger("dogana_orders_daily")      # logical_date null, as a user's trigger
    client.wait(run)["state"]                        # "success"
    deployment.stop()           # every process group ended, the database dropped, home removed

The executor and the processes beyond the four are parameters: a CeleryExecutor deployment
passes executor="CeleryExecutor", the broker in `environment`, and its workers as `services`
(each with its own environment, a TMPDIR or a queue). Every process runs in a session of its
own, so stop() ends it with everything it started (LocalExecutor's workers, the tasks' own
processes) by its process group id, and never anything else.

The intervals that decide how fast a run moves through the scheduler are set short (SPEED):
one scheduler loop, one triggerer loop, one parse of the DAGs folder take about a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
from cryptography.fernet import Fernet

TERMINAL = {"success", "failed"}
"""The states a DAG run ends in."""

USER = "dogana"
"""The deployment's administrator: the user client() logs in as."""

# Each value is an [section] option of airflow.cfg, set through AIRFLOW__SECTION__OPTION.
SPEED = {
    "SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
    "SCHEDULER__JOB_HEARTBEAT_SEC": "1",
    "SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": "0.5",
    "TRIGGERER__JOB_HEARTBEAT_SEC": "1",
    # The DAGs folder is listed every 5 s (a DAG file written after start is found); a file
    # already parsed is parsed again only after a minute: parsing costs the CPU tasks need.
    "DAG_PROCESSOR__REFRESH_INTERVAL": "5",
    "DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "60",
    "DAG_PROCESSOR__BUNDLE_REFRESH_CHECK_INTERVAL": "1",
    "DAG_PROCESSOR__PARSING_PROCESSES": "1",
    "DAG_PROCESSOR__PRINT_STATS_INTERVAL": "600",
    "CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL": "1",
    "API__WORKERS": "1",
}


@dataclass(frozen=True)
class Service:
    """One long-running `airflow ...` process: its name (its log is logs/<name>.log), its
    arguments after `airflow`, what its environment adds to the deployment's, and a command it
    runs under (prefix: `unshare ...` gives a Celery worker a mount namespace, as if it ran on a
    machine of its own)."""

    name: str
    args: Sequence[str]
    environment: Mapping[str, str] = field(default_factory=dict)
    prefix: Sequence[str] = ()


CORE = (
    Service("scheduler", ("scheduler", "--skip-serve-logs")),
    Service("dag-processor", ("dag-processor",)),
    Service("triggerer", ("triggerer", "--skip-serve-logs")),
)


class DeploymentError(RuntimeError):
    """The deployment did not start, or a process of it died; the message ends with its log."""


class Deployment:
    """One Airflow deployment on this machine, started by start() and ended by stop().

    :param postgres_url: the PostgreSQL server, as postgresql://user@host:port/database; a
        database of the deployment's own is created there and dropped by stop().
    :param dags: DAG files, or folders of them, copied into the deployment's DAGs folder.
    :param environment: added to every process's environment (connections as AIRFLOW_CONN_*,
        configuration as AIRFLOW__SECTION__OPTION).
    :param connections: connections kept in the metadata database, as most teams keep them:
        each id's value as AIRFLOW_CONN_* takes it (a URI, or JSON), added with `airflow
        connections add` once the database is migrated.
    :param executor: [core] executor.
    :param services: processes started beside the scheduler, DAG processor, triggerer and API
        server (Celery workers, say).
    :param parallelism: [core] parallelism: task instances running at once.
    :param users: users beside the administrator, each name's role (viewer, user, op, admin)
        in the default SimpleAuthManager; client(name) logs in as one.
    """

    def __init__(
        self,
        postgres_url: str,
        *,
        dags: Iterable[Path] = (),
        environment: Mapping[str, str] | None = None,
        connections: Mapping[str, str] | None = None,
        executor: str = "LocalExecutor",
        services: Sequence[Service] = (),
        parallelism: int = 8,
        users: Mapping[str, str] | None = None,
    ) -> None:
        self.postgres_url = postgres_url
        self.dags = list(dags)
        self.executor = executor
        self.services = [*CORE, *services]
        self.parallelism = parallelism
        self.extra_environment = dict(environment or {})
        self.connections = dict(connections or {})
        self.database = f"dogana_airflow_{uuid.uuid4().hex[:12]}"
        self.home = Path(tempfile.mkdtemp(prefix="dogana-deployment-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.roles = {USER: "admin", **(users or {})}
        self.passwords = {name: secrets.token_urlsafe(16) for name in self.roles}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.environment = self._environment()

    # Configuration ----------------------------------------------------------------------------

    @property
    def dags_folder(self) -> Path:
        return self.home / "dags"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    def _environment(self) -> dict[str, str]:
        """This machine's environment without any Airflow setting, then the deployment's."""
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_VAR_"))
            and name != "AIRFLOW_HOME"
        }
        # The executor's task processes run `python -m airflow...` from this .venv.
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        settings = {
            "CORE__EXECUTOR": self.executor,
            "CORE__LOAD_EXAMPLES": "False",
            "CORE__DAGS_FOLDER": str(self.dags_folder),
            "CORE__PARALLELISM": str(self.parallelism),
            "CORE__EXECUTION_API_SERVER_URL": f"{self.url}/execution/",
            "CORE__SIMPLE_AUTH_MANAGER_USERS": ",".join(
                f"{name}:{role}" for name, role in self.roles.items()
            ),
            "CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(self.home / "passwords.json"),
            "DATABASE__SQL_ALCHEMY_CONN": self._metadata_url(),
            "API__HOST": "127.0.0.1",
            "API__PORT": str(self.port),
            "API__BASE_URL": self.url,
            # Every process signs and checks the tasks' tokens with one key.
            "API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "API__SECRET_KEY": secrets.token_hex(32),
            # Every process reads the passwords the metadata database keeps with one key.
            "CORE__FERNET_KEY": Fernet.generate_key().decode(),
            "LOGGING__BASE_LOG_FOLDER": str(self.logs / "tasks"),
            **SPEED,
        }
        env.update({f"AIRFLOW__{name}": value for name, value in settings.items()})
        env["AIRFLOW_HOME"] = str(self.home)
        env.update(self.extra_environment)
        return env

    def terminal_environment(self) -> dict[str, str]:
        """The environment of a person at the deployment's terminal: its AIRFLOW_HOME and
        settings (the metadata database among them), but no AIRFLOW_CONN_* variable, so that a
        command finds connections where the deployment keeps them."""
        return {
            name: value
            for name, value in self.environment.items()
            if not name.startswith("AIRFLOW_CONN_")
        }

    def at_the_terminal(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The installed `dogana` command run as a person runs it at the deployment's terminal."""
        return subprocess.run(
            [str(Path(sys.executable).parent / "dogana"), *args],
            env={**self.terminal_environment(), "COLUMNS": "200"},
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def _metadata_url(self) -> str:
        parts = urlsplit(self.postgres_url)
        return urlunsplit(("postgresql+psycopg2", parts.netloc, f"/{self.database}", "", ""))

    # Start and stop ---------------------------------------------------------------------------

    def start(self, timeout: float = 240) -> None:
        """Create the metadata database, migrate it, start every process, and wait until the
        API server answers and reports the scheduler, triggerer and DAG processor healthy."""
        deadline = time.monotonic() + timeout
        self.dags_folder.mkdir()
        self.logs.mkdir()
        for path in self.dags:
            if path.is_dir():  # a folder of DAG files and what they read beside them
                shutil.copytree(path, self.dags_folder / path.name)
            else:
                shutil.copyfile(path, self.dags_folder / path.name)
        (self.home / "passwords.json").write_text(json.dumps(self.passwords))
        with psycopg.connect(self.postgres_url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{self.database}"')
        migrate = self._airflow(("db", "migrate"), timeout=max(deadline - time.monotonic(), 1))
        if migrate.returncode != 0:
            raise DeploymentError(f"airflow db migrate failed:\n{migrate.stdout[-4000:]}")
        for conn_id, connection in self.connections.items():
            spelled = "--conn-json" if connection.lstrip().startswith("{") else "--conn-uri"
            added = self._airflow(
                ("connections", "add", conn_id, spelled, connection),
                timeout=max(deadline - time.monotonic(), 1),
            )
            if added.returncode != 0:
                raise DeploymentError(f"airflow connections add {conn_id} failed:\n{added.stdout}")
        for service in self.services:
            self._spawn(service)
        self._spawn(Service("api-server", ("api-server",)))
        self._wait_healthy(deadline)

    def stop(self, timeout: float = 10) -> None:
        """End every process group this deployment started, drop its database, remove its home.

        SIGTERM first, so the scheduler and the workers end their tasks; SIGKILL for whatever
        is still running after timeout seconds.
        """
        for process in self.processes.values():
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(max(deadline - time.monotonic(), 0.1))
        for process in self.processes.values():
            # The group may outlive its leader (a task process): end the rest too.
            _signal_group(process, signal.SIGKILL)
            process.wait()
        self.processes.clear()
        with psycopg.connect(self.postgres_url, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
        shutil.rmtree(self.home, ignore_errors=True)

    def __enter__(self) -> Deployment:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _airflow(self, args: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "airflow", *args],
            env=self.environment,
            cwd=self.home,
            capture_output=False,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
        )

    def _spawn(self, service: Service) -> None:
        log = open(self.logs / f"{service.name}.log", "ab")  # noqa: SIM115 - the child owns it
        try:
            self.processes[service.name] = subprocess.Popen(
                [*service.prefix, sys.executable, "-m", "airflow", *service.args],
                env={**self.environment, **service.environment},
                cwd=self.home,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()

    def _wait_healthy(self, deadline: float) -> None:
        wanted = ("metadatabase", "scheduler", "triggerer", "dag_processor")
        seen: dict[str, Any] = {}
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                seen = httpx.get(f"{self.url}/api/v2/monitor/health", timeout=5).json()
            except (httpx.HTTPError, ValueError):
                seen = {}
            if seen and all((seen.get(name) or {}).get("status") == "healthy" for name in wanted):
                return
            time.sleep(1)
        raise DeploymentError(f"not healthy after start: {seen}\n{self.tails()}")

    # What a failing test wants to see ---------------------------------------------------------

    def check_alive(self) -> None:
        """Raise DeploymentError when a process of the deployment has exited."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise DeploymentError(f"{name} exited with {process.returncode}\n{self.tail(name)}")

    def tail(self, name: str, lines: int = 40) -> str:
        path = self.logs / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return f"--- {path} (last {lines} lines)\n" + "\n".join(text.splitlines()[-lines:])

    def tails(self, lines: int = 20) -> str:
        return "\n".join(self.tail(name, lines) for name in self.processes)

    def task_log(self, run: Run, task_id: str, map_index: int = -1) -> str:
        """A task's log files of run, as the task wrote them (every try, concatenated)."""
        folder = self.logs / "tasks" / f"dag_id={run.dag_id}" / f"run_id={run.run_id}"
        folder = folder / f"task_id={task_id}"
        if map_index >= 0:
            folder = folder / f"map_index={map_index}"
        return "\n".join(p.read_text(errors="replace") for p in sorted(folder.glob("*.log")))

    def client(self, user: str = USER) -> Client:
        """A REST client logged in as user (the administrator by default)."""
        return Client(self.url, user, self.passwords[user], deployment=self)


@dataclass(frozen=True)
class Run:
    """A DAG run, as the REST API names it."""

    dag_id: str
    run_id: str


class Client:
    """Airflow 3's REST API (/api/v2) as a user's client calls it, with a JWT from /auth/token.

    The token is what the default SimpleAuthManager hands out for a username and password
    (POST /auth/token); every request carries it as a Bearer token.
    """

    def __init__(
        self, url: str, username: str, password: str, *, deployment: Deployment | None = None
    ) -> None:
        self.deployment = deployment
        # A single API worker on a loaded 2-core machine can take over 30 s to answer (a token,
        # while the DAG processor parses every file just after start): the runs' own deadlines
        # (wait's timeout) bound a test, not one slow answer.
        self.http = httpx.Client(base_url=url, timeout=120)
        token = self.http.post("/auth/token", json={"username": username, "password": password})
        token.raise_for_status()
        self.http.headers["Authorization"] = f"Bearer {token.json()['access_token']}"

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, f"/api/v2{path}", **kwargs)
        if response.is_error:
            raise AssertionError(f"{method} {path}: {response.status_code} {response.text}")
        return response.json() if response.content else None

    # DAGs -------------------------------------------------------------------------------------

    def wait_parsed(self, dag_ids: Iterable[str], timeout: float = 120) -> None:
        """Wait until the DAG processor has parsed each DAG and none has an import error."""
        remaining = set(dag_ids)
        deadline = time.monotonic() + timeout
        while remaining and time.monotonic() < deadline:
            errors = self.request("GET", "/importErrors")["import_errors"]
            if errors:
                raise AssertionError(f"import errors: {errors}")
            found = self.request("GET", "/dags", params={"limit": 100})["dags"]
            remaining -= {dag["dag_id"] for dag in found}
            if remaining:
                self._pause()
        if remaining:
            raise AssertionError(f"not parsed after {timeout} s: {sorted(remaining)}")

    def unpause(self, dag_id: str) -> None:
        self.request("PATCH", f"/dags/{dag_id}", json={"is_paused": False})

    def add_connection(self, conn_id: str, conn_type: str, **fields: Any) -> None:
        """A connection in the metadata database (host, port, login, schema, extra as a dict),
        as an administrator adds one; tasks read it through the execution API."""
        if "extra" in fields:
            fields["extra"] = json.dumps(fields["extra"])
        body = {"connection_id": conn_id, "conn_type": conn_type, **fields}
        self.request("POST", "/connections", json=body)

    def add_server_connection(self, conn_id: str, conn_type: str, url: str, **fields: Any) -> None:
        """A connection to the server at url (its host, port and user), its database the
        connection's schema; fields as add_connection's."""
        parts = urlsplit(url)
        self.add_connection(
            conn_id,
            conn_type,
            host=parts.hostname,
            port=parts.port,
            login=parts.username,
            schema=parts.path.lstrip("/"),
            **fields,
        )

    def add_schema_connection(self, conn_id: str, url: str, schema: str, **fields: Any) -> None:
        """A PostgreSQL connection to the server at url whose every session resolves tables in
        schema (libpq options): a receiver of a test's own."""
        extra = {"options": f"-csearch_path={schema}"}
        self.add_server_connection(conn_id, "postgres", url, extra=extra, **fields)

    def pool(self, name: str, slots: int) -> None:
        """Create the pool with this many slots, or resize it: at 0 the scheduler queues none
        of its tasks, which wait scheduled until it has a slot open."""
        body = {"name": name, "slots": slots, "include_deferred": False}
        response = self.http.patch(
            f"/api/v2/pools/{name}", params={"update_mask": "slots"}, json=body
        )
        if response.status_code == 404:
            self.request("POST", "/pools", json=body)
        elif response.is_error:
            raise AssertionError(f"PATCH /pools/{name}: {response.status_code} {response.text}")

    # Runs -------------------------------------------------------------------------------------

    def trigger(
        self, dag_id: str, *, logical_date: str | None = None, conf: dict[str, Any] | None = None
    ) -> Run:
        """Create a run; logical_date None is Airflow 3's default for a manual run."""
        body = {"logical_date": logical_date, "conf": conf or {}}
        found = self.request("POST", f"/dags/{dag_id}/dagRuns", json=body)
        return Run(dag_id, found["dag_run_id"])

    def run(self, run: Run) -> dict[str, Any]:
        """The run as /dagRuns returns it: state, logical_date, run_after, data_interval_end."""
        result: dict[str, Any] = self.request("GET", f"/dags/{run.dag_id}/dagRuns/{run.run_id}")
        return result

    def runs(self, dag_id: str, **params: Any) -> list[Run]:
        """The DAG's runs, oldest first; params filter them (run_type=..., state=...)."""
        found = self.request(
            "GET", f"/dags/{dag_id}/dagRuns", params={"order_by": "run_after", **params}
        )
        return [Run(dag_id, item["dag_run_id"]) for item in found["dag_runs"]]

    def wait(self, run: Run, timeout: float = 300) -> dict[str, Any]:
        """Wait until run ends (success or failed); its final state as run() returns it."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.run(run)
            if found["state"] in TERMINAL:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{run} still {found['state']} after {timeout} s: {self.states(run)}"
                )
            self._pause()

    def wait_all(self, runs: Iterable[Run], timeout: float = 400) -> dict[Run, dict[str, Any]]:
        """wait() for several runs at once (they run in parallel; one deadline for all)."""
        deadline = time.monotonic() + timeout
        return {run: self.wait(run, max(deadline - time.monotonic(), 1)) for run in runs}

    def wait_for_run(self, dag_id: str, timeout: float = 120, **params: Any) -> Run:
        """Wait until a run of dag_id matching params exists (one the scheduler creates)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.runs(dag_id, **params)
            if found:
                return found[-1]
            self._pause()
        raise AssertionError(f"no run of {dag_id} with {params} after {timeout} s")

    # What a run left ---------------------------------------------------------------------------

    def task_instances(self, run: Run) -> list[dict[str, Any]]:
        found = self.request(
            "GET",
            f"/dags/{run.dag_id}/dagRuns/{run.run_id}/taskInstances",
            params={"limit": 1000},
        )
        return list(found["task_instances"])

    def clear(self, run: Run, task_id: str) -> None:
        """Clear task_id and what follows it in run, as the UI's Clear button does."""
        self.request(
            "POST",
            f"/dags/{run.dag_id}/clearTaskInstances",
            json={
                "dry_run": False,
                "dag_run_id": run.run_id,
                "task_ids": [task_id],
                "include_downstream": True,
                "only_failed": False,
            },
        )

    def states(self, run: Run) -> dict[str, str | None]:
        """Each task's state; a mapped task's instances as task_id[map_index]."""
        return {
            ti["task_id"] if ti["map_index"] < 0 else f"{ti['task_id']}[{ti['map_index']}]": (
                ti["state"]
            )
            for ti in self.task_instances(run)
        }

    def explain(self, run: Run, lines: int = 30) -> str:
        """Each task's state, and the end of every failed task's log: a failing test's message."""
        text = [f"{run}: {self.states(run)}"]
        for ti in self.task_instances(run):
            if ti["state"] in ("failed", "upstream_failed") and self.deployment is not None:
                log = self.deployment.task_log(run, ti["task_id"], ti["map_index"])
                errors = [line for line in log.splitlines() if '"level":"error"' in line]
                text.append(f"--- {ti['task_id']}[{ti['map_index']}]: {ti['state']}")
                text.extend(line[:2000] for line in (errors or log.splitlines())[-lines:])
        return "\n".join(text)

    def xcom(self, run: Run, task_id: str, key: str = "return_value", map_index: int = -1) -> Any:
        """What a task pushed (its return value by default), as JSON; None when nothing."""
        response = self.http.get(
            f"/api/v2/dags/{run.dag_id}/dagRuns/{run.run_id}/taskInstances/{task_id}"
            f"/xcomEntries/{key}",
            params={"map_index": map_index},
        )
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.json()["value"]

    def asset_events(self, uri: str, **params: Any) -> list[dict[str, Any]]:
        """The events of the Asset with this URI, oldest first; params filter them
        (source_dag_id, source_run_id, ...). The Asset may be one no DAG names, known only from
        the events an AssetAlias outlet gave it, which /assets lists only when asked to
        (only_active=false)."""
        assets = self.request(
            "GET", "/assets", params={"uri_pattern": uri, "limit": 1000, "only_active": False}
        )
        [asset] = [a for a in assets["assets"] if a["uri"] == uri]
        found = self.request(
            "GET",
            "/assets/events",
            params={"asset_id": asset["id"], "order_by": "timestamp", "limit": 1000, **params},
        )
        return list(found["asset_events"])

    def _pause(self) -> None:
        if self.deployment is not None:
            self.deployment.check_alive()
        time.sleep(1)


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
    """Signal the process group this deployment created for process (its pid is the group's)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
