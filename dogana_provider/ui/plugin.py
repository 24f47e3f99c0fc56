"""The Airflow plugin: the dogana page, found through the entry point ``airflow.plugins``.

Its FastAPI app (dogana_provider.ui.app) serves server-rendered HTML at /dogana/; the external
view puts it in the UI's Browse menu, shown inside the Airflow UI at /plugin/dogana.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from dogana_provider.ui.app import app


class DoganaPlugin(AirflowPlugin):
    name = "dogana"
    fastapi_apps = [{"app": app, "url_prefix": "/dogana", "name": "dogana claims"}]
    external_views = [
        {
            "name": "Claims (dogana)",
            "href": "dogana/",
            "url_route": "dogana",
            "destination": "nav",
            "category": "browse",
        }
    ]
