"""The delivery folder: where a run's files wait between extract and gate, and when they go.

A run's files go to ``<[dogana] delivery_folder>/<dag_id>/<run_id>/`` (settings.py) unless the
extract task names its own ``output_folder``. Two things keep the folder bounded:

- PublishOperator removes a delivery's files under the folder once it is published (a replay
  too), unless ``[dogana] keep_published``; a file elsewhere (an operator's own output_folder,
  a file a sender pushed, a drop folder) is its owner's, never removed;
- every extract into the configured folder first sweeps its DAG's folder: files older than
  ``[dogana] delivery_retention`` go, with the run folders they leave empty. They are what a
  rejected delivery or a failed run left, or what keep_published kept.

A gate that cannot find a local file says why it most likely cannot (missing_delivery):
a local folder is seen by one machine only, which a distributed executor does not promise.
"""

from __future__ import annotations

import contextlib
import logging
import re
import socket
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import ObjectStoragePath

from dogana_provider import settings

log = logging.getLogger(__name__)

LOCAL_PROTOCOLS = ("", "file", "local")


class MissingDelivery(Exception):
    """A delivery's file is not where the extract task wrote it; the message says what to set."""


def safe(text: str) -> str:
    # A run id holds ':' and '+'; a folder name should not need quoting in any URL scheme.
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def dag_folder(dag_id: str) -> ObjectStoragePath:
    """The configured delivery folder's subfolder for one DAG."""
    return ObjectStoragePath(f"{settings.delivery_folder()}/{safe(dag_id)}")


def run_folder(dag_id: str, run_id: str) -> ObjectStoragePath:
    """Where a run's deliveries go by default: <delivery_folder>/<dag_id>/<run_id>."""
    return dag_folder(dag_id) / safe(run_id)


def owned(uri: str) -> bool:
    """Whether a file lies under the configured delivery folder, which dogana keeps bounded."""
    path, folder = ObjectStoragePath(uri), ObjectStoragePath(settings.delivery_folder())
    local = (path.protocol in LOCAL_PROTOCOLS) and (folder.protocol in LOCAL_PROTOCOLS)
    if not local and path.protocol != folder.protocol:
        return False
    return str(path.path).startswith(str(folder.path).rstrip("/") + "/")


def parted(path: ObjectStoragePath) -> bool:
    """Whether path is a delivery read by several readers: a folder of Parquet parts."""
    return path.is_dir() and path.name.endswith(".parquet")


def parts(path: ObjectStoragePath) -> list[ObjectStoragePath]:
    """A parted delivery's parts in order (delivery/files.py names them so they sort)."""
    return sorted(
        (item for item in path.iterdir() if item.name.startswith("part-")),
        key=lambda item: item.name,
    )


def delete(path: ObjectStoragePath) -> None:
    """Remove a delivery: its file, or its folder of parts with what the read left there."""
    if not path.is_dir():
        path.unlink(missing_ok=True)
        return
    for item in list(path.iterdir()):
        item.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # an object store has no folder to remove
        path.rmdir()


def sweep(folder: ObjectStoragePath, older_than: timedelta, *, keep: str) -> int:
    """Remove the files under folder's run folders modified longer than older_than ago, and
    the run folders left empty by them or empty since then; never the run folder named keep.
    Returns how many files went. A file system that cannot tell a file's age keeps its files,
    and says so."""
    if not folder.exists():
        return 0
    horizon = datetime.now(UTC) - older_than
    removed = 0
    kept = {keep}
    for run in folder.iterdir():
        if run.name in kept or not run.is_dir():
            continue
        emptied = 0
        for item in list(run.iterdir()):
            if item.is_dir() and not parted(item):
                continue  # an extract writes files and folders of parts; this is someone else's
            modified = _modified(item)
            if modified is None:
                log.warning("%s: its file system tells no modification time; kept", item)
                continue
            if modified < horizon:
                delete(item)
                emptied += 1
        removed += emptied
        # A young empty folder may be a run's about to be written: only an old one goes.
        old = emptied or (_modified(run) or horizon) < horizon
        if run.protocol in LOCAL_PROTOCOLS and old and not any(run.iterdir()):
            with contextlib.suppress(OSError):  # a file arrived since: the folder stays
                run.rmdir()
    return removed


def remove(uris: Iterable[str], spent: str = "published") -> None:
    """Remove a delivery's files under the delivery folder once spent: published, or
    superseded (refused, and another publication met its run). A file elsewhere is its
    owner's, and stays. Their run folder stays too (another task of the run may be about to
    write into it): the sweep removes it once empty and older than the retention.

    A file that cannot be removed is logged, not raised: the publication is committed, and the
    next sweep removes the file once it is older than the retention."""
    for uri in uris:
        if not owned(uri):
            log.info("%s: %s; outside the delivery folder, so left to its owner", uri, spent)
            continue
        try:
            delete(ObjectStoragePath(uri))
        except OSError as exc:
            log.warning("%s: %s, but not removed (%s); the sweep removes it later", uri, spent, exc)
            continue
        log.info("%s: %s, removed", uri, spent)


def missing_delivery(uri: str) -> MissingDelivery:
    """Why a delivery's local file is not here, and the setting that fixes it."""
    executors = settings.distributed_executors()
    setting = settings.named(settings.DELIVERY_FOLDER)
    where = f"this worker ({socket.gethostname()})"
    if executors:
        why = (
            f"the extract task wrote it to a local folder, which only the machine that ran it "
            f"sees, and under {', '.join(executors)} the tasks of one run may run on different "
            f"workers: set {setting} to a folder every worker sees (s3://..., gs://..., or a "
            "shared mount), or give the extract task an output_folder there"
        )
    else:
        why = (
            "it was removed after a publication or by the sweep of files older than "
            f"{settings.named(settings.DELIVERY_RETENTION)}, or the extract task ran on another "
            f"machine: then set {setting} to a folder every worker sees"
        )
    return MissingDelivery(f"delivery file {uri} is not on {where}: {why}")


def _modified(path: ObjectStoragePath) -> datetime | None:
    fs: Any = path.fs
    try:
        modified = fs.modified(path.path)
    except (NotImplementedError, AttributeError):
        return None
    if not isinstance(modified, datetime):
        return None
    return modified if modified.tzinfo is not None else modified.replace(tzinfo=UTC)
