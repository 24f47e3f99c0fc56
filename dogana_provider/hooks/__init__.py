"""Hooks: DoganaHook, the receiver behind an Airflow connection."""
