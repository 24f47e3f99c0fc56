"""The provider's metadata, found by Airflow through the ``apache_airflow_provider`` entry point.

Only keys that are true today are listed. There is no dogana connection type: a receiver is any
common-sql connection (sqlite, postgres, mysql), which DoganaHook reaches through its own hook.
"""

from __future__ import annotations

from typing import Any

from dogana_provider import __version__

INTEGRATION = "Dogana"


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "airflow-provider-dogana",
        "name": "Dogana",
        "description": (
            "Load tables from other systems and know, for every region of every table, "
            "which rows to trust and as of when."
        ),
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": INTEGRATION,
                "tags": ["software"],
            }
        ],
        "hooks": [
            {"integration-name": INTEGRATION, "python-modules": ["dogana_provider.hooks.dogana"]}
        ],
        "operators": [
            {
                "integration-name": INTEGRATION,
                "python-modules": [
                    "dogana_provider.operators.plan",
                    "dogana_provider.operators.extract",
                    "dogana_provider.operators.gate",
                    "dogana_provider.operators.publish",
                    "dogana_provider.operators.freshness",
                ],
            }
        ],
        "sensors": [
            {"integration-name": INTEGRATION, "python-modules": ["dogana_provider.sensors.claims"]}
        ],
        "triggers": [
            {
                "integration-name": INTEGRATION,
                "python-modules": ["dogana_provider.triggers.claims"],
            }
        ],
    }
