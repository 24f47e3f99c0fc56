"""The dogana page in the Airflow UI: an Airflow 3 plugin serving server-rendered HTML."""
