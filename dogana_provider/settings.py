"""The provider's ``[dogana]`` configuration section: where deliveries wait between tasks.

ExtractOperator writes a delivery's files and GateOperator reads them, often on another
machine: under CeleryExecutor or KubernetesExecutor consecutive tasks of one run land on
workers that share no ``/tmp``. One setting sends every delivery where every worker reads it:

    [dogana]
    delivery_folder = s3://deliveries/dogana     # or gs://..., or file:///mnt/shared/dogana

(or ``AIRFLOW__DOGANA__DELIVERY_FOLDER``). A delivery of run R of DAG D goes to
``<delivery_folder>/<D>/<R>/<table>.parquet``. PublishOperator removes a delivery's files once
it is published (``keep_published`` keeps them), and each extract removes what is older than
``delivery_retention`` under its DAG's folder: files a rejected delivery or a failed run left,
and those kept after publication. So nothing under the folder grows without bound.

ui_receivers names the receivers the Airflow UI's dogana page shows (dogana_provider/ui).

readers = N reads a PostgreSQL table by N readers in its one snapshot (sources/parallel.py).

require_activation = True switches on, in every receiver a task registers a table in, the
receiver's own stored setting of that name (receiver/activating.py): from then on the receiver
publishes only tables a named person activated. It never switches it off: that takes
``dogana require-activation RECEIVER off --by NAME``.

Airflow reads these options' descriptions and defaults from ``get_provider_info()["config"]``
(CONFIG below), as it does every provider's, so ``airflow config list`` shows them.
"""

from __future__ import annotations

import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from dogana_provider import __version__

SECTION = "dogana"
DELIVERY_FOLDER = "delivery_folder"
DELIVERY_RETENTION = "delivery_retention"
KEEP_PUBLISHED = "keep_published"
UI_RECEIVERS = "ui_receivers"
REQUIRE_ACTIVATION = "require_activation"
READERS = "readers"

UNSET_FOLDER = ""  # the option's default: dogana in the running machine's temporary directory
DEFAULT_RETENTION = 86_400

# The executors whose every task runs on one machine, where a local folder is shared.
LOCAL_EXECUTORS = frozenset({"LocalExecutor", "SequentialExecutor", "DebugExecutor"})

CONFIG: dict[str, Any] = {
    SECTION: {
        "description": "Where dogana's deliveries wait between the extract, gate and publish "
        "tasks, and for how long.\n",
        "options": {
            DELIVERY_FOLDER: {
                "description": "The folder ExtractOperator writes deliveries to and GateOperator "
                "reads them from, as any fsspec URL: s3://bucket/prefix, gs://bucket/prefix, or "
                "file:///a/shared/mount. A run's files go to <folder>/<dag_id>/<run_id>/. Empty, "
                "the default, is dogana in the temporary directory of the machine running the "
                "task ($TMPDIR, else /tmp: file:///tmp/dogana), which no other machine sees: "
                "under a distributed executor (CeleryExecutor, KubernetesExecutor) set a folder "
                "every worker sees. An operator's output_folder overrides it. Files published or "
                "older than delivery_retention are removed only under this folder.\n",
                "version_added": __version__,
                "type": "string",
                "example": "s3://deliveries/dogana",
                "default": UNSET_FOLDER,
            },
            DELIVERY_RETENTION: {
                "description": "Seconds a delivery's files may stay under the delivery folder: "
                "each extract removes older files under its DAG's folder (left by a rejected "
                "delivery or a failed run, or kept with keep_published). Keep it above the "
                "longest wait between an extract and its gate, retries included.\n",
                "version_added": __version__,
                "type": "integer",
                "example": "604800",
                "default": str(DEFAULT_RETENTION),
            },
            KEEP_PUBLISHED: {
                "description": "Keep a delivery's files once it is published, until "
                "delivery_retention removes them, instead of removing them at publication.\n",
                "version_added": __version__,
                "type": "boolean",
                "example": "True",
                "default": "False",
            },
            UI_RECEIVERS: {
                "description": "The receiver connections the Airflow UI's dogana page shows, "
                "comma separated. A user sees a receiver only if allowed to read its "
                "connection.\n",
                "version_added": __version__,
                "type": "string",
                "example": "dogana_default,warehouse_eu",
                "default": "dogana_default",
            },
            REQUIRE_ACTIVATION: {
                "description": "Switch on, in every receiver a task registers a table in, the "
                "receiver's stored require_activation setting: it then publishes only the tables "
                "a named person activated (dogana activate, ActivateSourceOperator), and the plan "
                "task of any other fails saying what is missing. False, the default, leaves each "
                "receiver's own setting as it is: this option never switches it off (dogana "
                "require-activation RECEIVER off --by NAME does).\n",
                "version_added": __version__,
                "type": "boolean",
                "example": "True",
                "default": "False",
            },
            READERS: {
                "description": "How many readers ExtractOperator reads a PostgreSQL table with, "
                "inside its one snapshot, each writing a part of the delivery (sources/"
                "parallel.py): a whole number from 1 to 64; an operator's readers overrides it. "
                "MySQL/MariaDB and SQLite read with one whatever is set (MariaDB exports no "
                "snapshot another session could share), as does a table_sql query; the task's "
                "log says why.\n",
                "version_added": __version__,
                "type": "integer",
                "example": "2",
                "default": "1",
            },
        },
    }
}


def _conf() -> Any:
    try:
        from airflow.sdk import conf as sdk_conf
    except ImportError:  # Airflow before the Task SDK exported its configuration
        from airflow.configuration import conf

        return conf
    return sdk_conf


def env_var(option: str) -> str:
    """The environment variable that sets an option: AIRFLOW__DOGANA__<OPTION>."""
    return f"AIRFLOW__{SECTION.upper()}__{option.upper()}"


def named(option: str) -> str:
    """How a message names an option, so a reader knows what to set and where."""
    return f"[{SECTION}] {option} (environment variable {env_var(option)})"


def delivery_folder() -> str:
    """The configured folder, or when unset dogana in this machine's temporary directory: read
    when a task runs, so each machine resolves its own (airflow.cfg keeps the option empty)."""
    configured = str(_conf().get(SECTION, DELIVERY_FOLDER, fallback=UNSET_FOLDER)).strip()
    return configured.rstrip("/") or default_folder()


def default_folder() -> str:
    return Path(tempfile.gettempdir(), "dogana").as_uri()


def delivery_retention() -> timedelta:
    seconds = _conf().getint(SECTION, DELIVERY_RETENTION, fallback=DEFAULT_RETENTION)
    if seconds < 0:
        raise ValueError(f"{named(DELIVERY_RETENTION)} is {seconds}; give 0 or more seconds")
    return timedelta(seconds=seconds)


def keep_published() -> bool:
    return bool(_conf().getboolean(SECTION, KEEP_PUBLISHED, fallback=False))


def require_activation() -> bool:
    return bool(_conf().getboolean(SECTION, REQUIRE_ACTIVATION, fallback=False))


def readers() -> int:
    """The readers of a table's snapshot read unless an operator names its own."""
    from dogana_provider.sources.parallel import checked_readers

    return checked_readers(_conf().get(SECTION, READERS, fallback="1").strip(), named(READERS))


def ui_receivers() -> list[str]:
    """The connection ids of the receivers the UI page shows."""
    listed = str(_conf().get(SECTION, UI_RECEIVERS, fallback="dogana_default"))
    return [name.strip() for name in listed.split(",") if name.strip()]


def default_deferrable() -> bool:
    """[operators] default_deferrable: whether a deferrable operator defers unless told."""
    return bool(_conf().getboolean("operators", "default_deferrable", fallback=False))


def distributed_executors() -> list[str]:
    """The configured executors ([core] executor) that may run a run's tasks on other machines.

    An entry is a name (CeleryExecutor), a class path, or ``alias:path``; several are
    separated by commas.
    """
    configured = str(_conf().get("core", "executor", fallback="LocalExecutor"))
    names = [entry.split(":")[-1].split(".")[-1].strip() for entry in configured.split(",")]
    return [name for name in names if name and name not in LOCAL_EXECUTORS]
