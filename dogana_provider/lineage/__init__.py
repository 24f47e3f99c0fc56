"""Lineage: the Asset each published table is (assets.py) and the OpenLineage events of the
operators (openlineage.py, imported only when Airflow's OpenLineage provider asks)."""
