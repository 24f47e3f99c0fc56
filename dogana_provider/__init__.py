"""The dogana Airflow provider: the reference receiver behind Airflow hooks and operators.

dogana_core decides from declarations alone; this package reads files and databases, checks rows
against manifests and commits through Airflow's SQL hooks.

Modules that once lay at the top of this package live in their rooms now (``checks/``,
``dialects/``, ``delivery/``, ``report/``, ``cli/``, ``lineage/``, ``staging/``). A DAG
that imports one by its old name still works and is warned: each old name is an alias of the
module at its new home, so both give the same objects.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

__version__ = "0.1.0"

MOVED = {
    "dogana_provider.assets": "dogana_provider.lineage.assets",
    "dogana_provider.copy_binary": "dogana_provider.staging.postgres",
    "dogana_provider.deliveries": "dogana_provider.delivery.folders",
    "dogana_provider.expectations": "dogana_provider.checks.expectations",
    "dogana_provider.files": "dogana_provider.delivery.files",
    "dogana_provider.hold_report": "dogana_provider.report.holds",
    "dogana_provider.holds_cli": "dogana_provider.cli.holds",
    "dogana_provider.odcs_quality": "dogana_provider.checks.odcs",
    "dogana_provider.printing": "dogana_provider.report.table",
    "dogana_provider.sources_cli": "dogana_provider.cli.activation",
    "dogana_provider.sql": "dogana_provider.dialects",
    "dogana_provider.sqlite_load": "dogana_provider.staging.sqlite",
    "dogana_provider.status": "dogana_provider.report.status",
    "dogana_provider.receiver.sources": "dogana_provider.receiver.activating",
    "dogana_provider.receiver.source_store": "dogana_provider.receiver.activation_store",
}
"""Old module name -> its home now. (checks and cli kept their names as packages.)"""


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module name as the module at its new home, with a DeprecationWarning."""

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        home = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} has moved to {home}; import it from there",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(home)

    def exec_module(self, module: ModuleType) -> None:
        """The module at its home is already executed."""


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())
