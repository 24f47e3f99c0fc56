"""What a test reads back from Airflow's metadata database after a dag.test() run: each task's
state, what a task pushed, and the Asset events. Shared by tests/operators, tests/sensors and
tests/dags.

Airflow is imported inside each function, never when this module loads: it reads its
configuration once, and the session's AIRFLOW_HOME is set after conftests are imported
(tests/conftest.py, pytest_configure).
"""

from __future__ import annotations

from typing import Any


def states(run: Any) -> dict[str, str]:
    """Each task's final state in a DagRun, as a string."""
    from airflow.utils.session import create_session

    with create_session() as session:
        return {ti.task_id: str(ti.state) for ti in run.get_task_instances(session=session)}


def xcom(run: Any, task_id: str, key: str = "return_value") -> Any:
    """What a task of run pushed (its return value by default), or None."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    query = XComModel.get_many(run_id=run.run_id, key=key, dag_ids=run.dag_id, task_ids=task_id)
    with create_session() as session:
        row = session.scalars(query).first()
        return None if row is None else XComModel.deserialize_value(row)


def asset_events(uri: str) -> list[dict[str, Any]]:
    """The extras of every event of the Asset with this URI, oldest first."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        events = session.scalars(
            select(AssetEvent)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetModel.uri == uri)
            .order_by(AssetEvent.id)
        ).all()
        return [dict(event.extra) for event in events]


def rendered(run: Any, task_id: str) -> dict[str, Any]:
    """A task's fields as Rendered Templates shows them, and the renderer of each by name."""
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.models.serialized_dag import SerializedDagModel
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        ti = session.scalars(
            select(TaskInstance).where(
                TaskInstance.dag_id == run.dag_id,
                TaskInstance.run_id == run.run_id,
                TaskInstance.task_id == task_id,
            )
        ).one()
        fields = RenderedTaskInstanceFields.get_templated_fields(ti, session=session) or {}
        task = SerializedDagModel.get_dag(run.dag_id, session=session).get_task(task_id)
        return {"fields": fields, "renderers": dict(task.template_fields_renderers)}
