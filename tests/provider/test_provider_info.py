"""What Airflow reads from the provider's metadata: its documentation link, its [dogana]
configuration section and the dogana:// Asset scheme, each as Airflow itself resolves it."""

from __future__ import annotations

import tempfile
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from dogana_provider import settings

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_documentation_url_airflow_shows_is_the_page_of_this_packages_readme() -> None:
    import importlib.metadata

    from airflow.providers_manager import ProvidersManager

    from dogana_provider.get_provider_info import DOCUMENTATION_URL

    # Airflow replaces the dict's documentation-url by the package's Documentation project URL.
    shown = ProvidersManager().providers["airflow-provider-dogana"].data["documentation-url"]
    assert shown == DOCUMENTATION_URL
    url = urlsplit(shown)
    assert (url.scheme, url.netloc, url.path) == (
        "https",
        "pypi.org",
        "/project/airflow-provider-dogana/",
    )
    # What that page shows is the package's description, made from this repository's README.md
    # (the installed copy is as of the last install, so only its title is compared).
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    readme = project["tool"]["setuptools"]["dynamic"]["readme"]["file"][0]
    assert readme == "README.md" and (ROOT / readme).is_file()
    description = importlib.metadata.metadata("airflow-provider-dogana")["Description"]
    title = (ROOT / readme).read_text(encoding="utf-8").splitlines()[0]
    assert description.splitlines()[0] == title == "# airflow-provider-dogana"


def test_the_dogana_section_reads_its_defaults_and_environment_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from airflow.configuration import conf

    for option in (settings.DELIVERY_FOLDER, settings.DELIVERY_RETENTION, settings.KEEP_PUBLISHED):
        monkeypatch.delenv(settings.env_var(option), raising=False)
    # The defaults come from get_provider_info()["config"], as Airflow loads every provider's.
    assert conf.get("dogana", "delivery_folder") == ""
    assert settings.delivery_folder() == "file:///tmp/dogana"  # this machine's temporary dir
    assert conf.getint("dogana", "delivery_retention") == 86_400
    assert conf.getboolean("dogana", "keep_published") is False

    monkeypatch.setenv("AIRFLOW__DOGANA__DELIVERY_FOLDER", "s3://deliveries/dogana/")
    monkeypatch.setenv("AIRFLOW__DOGANA__DELIVERY_RETENTION", "3600")
    monkeypatch.setenv("AIRFLOW__DOGANA__KEEP_PUBLISHED", "True")
    assert settings.delivery_folder() == "s3://deliveries/dogana"
    monkeypatch.setenv("AIRFLOW__DOGANA__DELIVERY_FOLDER", "")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    assert settings.delivery_folder() == (tmp_path / "dogana").as_uri()
    assert settings.delivery_retention().total_seconds() == 3600
    assert settings.keep_published() is True


def test_a_negative_retention_is_refused_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIRFLOW__DOGANA__DELIVERY_RETENTION", "-1")
    with pytest.raises(ValueError, match=r"\[dogana\] delivery_retention .*AIRFLOW__DOGANA__"):
        settings.delivery_retention()


@pytest.mark.parametrize(
    ("executor", "distributed"),
    [
        ("LocalExecutor", []),
        ("CeleryExecutor", ["CeleryExecutor"]),
        ("LocalExecutor,KubernetesExecutor", ["KubernetesExecutor"]),
        (
            "airflow.providers.celery.executors.celery_executor.CeleryExecutor",
            ["CeleryExecutor"],
        ),
        ("fast:LocalExecutor,remote:my.company.RemoteExecutor", ["RemoteExecutor"]),
    ],
)
def test_an_executor_that_is_not_local_is_distributed(
    monkeypatch: pytest.MonkeyPatch, executor: str, distributed: list[str]
) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__EXECUTOR", executor)
    assert settings.distributed_executors() == distributed


@pytest.mark.parametrize(
    ("uri", "wrong"),
    [
        ("dogana://dogana_default/orders/2026", "not one table name"),
        ("dogana:///orders", "not a connection id"),
        ("dogana://dogana_default/", "not one table name"),
        ("dogana://dogana_default/1orders", "not one table name"),
        ("dogana://user@dogana_default/orders", "no user, password or port"),
        ("dogana://dogana_default:5432/orders", "no user, password or port"),
        ("dogana://dogana_default/orders?version=2", "no query"),
    ],
)
def test_a_dogana_asset_uri_is_validated_when_the_asset_is_defined(uri: str, wrong: str) -> None:
    from airflow.sdk import Asset

    with pytest.raises(ValueError, match=rf"dogana://<receiver_conn_id>/<table>: .*{wrong}"):
        Asset(uri=uri)


def test_the_factory_airflow_lists_for_the_scheme_builds_the_asset_publish_emits() -> None:
    from airflow.sdk import Asset
    from airflow.sdk.providers_manager_runtime import ProvidersManagerTaskRuntime

    from dogana_provider.operators.publish import dogana_asset

    assert Asset(uri="DOGANA://dogana_default/orders#x").uri == "dogana://dogana_default/orders"
    factory = ProvidersManagerTaskRuntime().asset_factories["dogana"]
    built = factory(table="orders", receiver_conn_id="warehouse")
    assert built == dogana_asset("orders", "warehouse")
    assert built.uri == "dogana://warehouse/orders"
