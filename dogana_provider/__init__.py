"""The dogana Airflow provider: the reference receiver behind Airflow hooks and operators.

dogana_core decides from declarations alone; this package reads files and databases, checks rows
against manifests and commits through Airflow's SQL hooks.
"""

__version__ = "0.1.0"
