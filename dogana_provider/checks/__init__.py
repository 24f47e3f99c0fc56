"""What the gate checks on a delivery's rows: the protocol's row checks (rows.py), a DAG author's
quality expectations with their consequences (expectations.py) and ODCS quality rules mapped to
them (odcs.py)."""
