"""The provider's metadata, found by Airflow through the ``apache_airflow_provider`` entry point.

Only keys that are true today are listed: hooks, operators and connection types are added here
as they land.
"""

from __future__ import annotations

from typing import Any

from dogana_provider import __version__


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "airflow-provider-dogana",
        "name": "Dogana",
        "description": (
            "Load tables from other systems and know, for every region of every table, "
            "which rows to trust and as of when."
        ),
        "versions": [__version__],
    }
