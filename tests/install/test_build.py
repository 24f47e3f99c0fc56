"""The release as PyPI would take it: python -m build makes an sdist and a wheel that pass
twine check, carry the license and every data file, declare one version, and keep every
database driver behind an extra."""

from __future__ import annotations

import sys
import tarfile
import zipfile

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from release import EXTRA_ONLY, ROOT, Dist
from wheelhouse import run

import dogana_provider
from dogana_provider.get_provider_info import get_provider_info

PACKAGES = ("dogana_core", "dogana_provider")


def test_wheel_and_sdist_pass_twine_check(dist: Dist) -> None:
    run([sys.executable, "-m", "twine", "check", "--strict", str(dist.wheel), str(dist.sdist)])


def test_version_is_single_sourced(dist: Dist) -> None:
    version = dist.metadata()["Version"]
    assert version == dogana_provider.__version__
    assert get_provider_info()["versions"][0] == version
    assert dist.wheel.name.startswith(f"airflow_provider_dogana-{version}-")


def test_wheel_carries_every_data_file_of_the_packages(dist: Dist) -> None:
    """Schemas, vectors, a plugin's templates and static files: whatever is not Python."""
    wanted = {
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = set(wheel.namelist())
    assert any(name.startswith("dogana_core/schemas/") for name in wanted)
    assert sorted(wanted - names) == []


def test_wheel_declares_license_classifiers_and_urls(dist: Dist) -> None:
    metadata = dist.metadata()
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata.get_all("License-File") == ["LICENSE"]
    with zipfile.ZipFile(dist.wheel) as wheel:
        license_text = wheel.read(f"{dist.stem}.dist-info/licenses/LICENSE").decode()
    assert "Apache License" in license_text and "Version 2.0" in license_text
    classifiers = metadata.get_all("Classifier") or []
    assert "Framework :: Apache Airflow :: Provider" in classifiers
    assert "Programming Language :: Python :: 3.11" in classifiers
    urls = dict(url.split(", ", 1) for url in metadata.get_all("Project-URL") or [])
    assert {"Documentation", "Changelog"} <= set(urls)
    assert "# Changelog" in (metadata.get_payload() or "")


def test_sdist_holds_license_readme_and_changelog(dist: Dist) -> None:
    with tarfile.open(dist.sdist) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"} <= names


def test_database_providers_are_extras(dist: Dist) -> None:
    requirements = [Requirement(r) for r in dist.metadata().get_all("Requires-Dist") or []]
    always = {canonicalize_name(r.name) for r in requirements if r.marker is None}
    assert "apache-airflow-providers-sqlite" in always
    assert not always & EXTRA_ONLY

    def extra(name: str) -> set[str]:
        return {
            canonicalize_name(r.name)
            for r in requirements
            if r.marker is not None and r.marker.evaluate({"extra": name})
        }

    assert "apache-airflow-providers-postgres" in extra("postgres")
    assert "apache-airflow-providers-mysql" in extra("mysql")
