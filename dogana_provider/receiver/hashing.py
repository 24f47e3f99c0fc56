"""The SHA-256 of a delivered file's bytes, for a replay, which never stages the rows.

Staging hashes the bytes while it reads them (dogana_provider/staging); a replay reads no rows, yet
must refuse a repeated manifest over other bytes, so it hashes the file alone, streamed.
"""

from __future__ import annotations

import hashlib


def file_sha256(path: str) -> str | None:
    """The file's bytes hashed, streamed; None when they cannot be read (it never matches)."""
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None
