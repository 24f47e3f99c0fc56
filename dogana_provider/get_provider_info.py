"""The provider's metadata, found by Airflow through the ``apache_airflow_provider`` entry point.

Only keys that are true today are listed. There is no dogana connection type: a receiver is any
common-sql connection (sqlite, postgres, mysql), which DoganaHook reaches through its own hook.
Airflow shows as the provider's documentation the ``Documentation`` URL of the package's
project URLs (pyproject.toml), which replaces any ``documentation-url`` given here; the one here
is the same, for readers of this dict who do not look at the package's metadata.
"""

from __future__ import annotations

from typing import Any

from dogana_provider import __version__
from dogana_provider.settings import CONFIG

DOCUMENTATION_URL = "https://pypi.org/project/airflow-provider-dogana/"

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
        "documentation-url": DOCUMENTATION_URL,
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
                    "dogana_provider.operators.activate",
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
        "asset-uris": [
            {
                "schemes": ["dogana"],
                "handler": "dogana_provider.lineage.assets.sanitize_uri",
                "factory": "dogana_provider.lineage.assets.create_asset",
            }
        ],
        "config": CONFIG,
    }
