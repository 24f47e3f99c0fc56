"""Runs one DAG file with dag.test() where dogana was installed from its wheel; prints the outcome.

    ENV/bin/python run_dag.py DAG_FILE TABLE

test_fresh_install.py starts it with a fresh environment's python, its AIRFLOW_HOME and connections
set. It prints one line, RESULT and a JSON object: the Airflow version, where dogana_provider
was imported from, the version Airflow's providers manager found through the entry point, each
task's state, and the published rows and claims of TABLE when the run published it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# tests/, for airflow_runs; dogana itself must come from the environment's site-packages.
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))

from airflow_runs import states


def main(dag_file: str, table: str) -> None:
    import airflow

    import dogana_provider
    from dogana_core.claims import NO_LIMIT
    from dogana_provider.hooks.dogana import DoganaHook

    spec = importlib.util.spec_from_file_location("dag_under_test", dag_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    run = module.dag.test(logical_date=datetime.now(UTC))
    from airflow.providers_manager import ProvidersManager

    provider = ProvidersManager().providers.get("airflow-provider-dogana")
    result: dict[str, Any] = {
        "airflow": airflow.__version__,
        "dogana_provider": dogana_provider.__file__,
        "provider_version": provider.version if provider else None,
        "states": states(run),
    }
    if result["states"].get("publish") == "success":
        with DoganaHook().receiver.read(table) as snapshot:
            result["columns"] = list(snapshot.columns)
            result["rows"] = sorted(list(row) for row in snapshot.rows)
            result["claims"] = str(snapshot.ledger.claims(datetime.now(UTC), limit=NO_LIMIT).state)
    print("RESULT " + json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
