"""JSON Schemas (draft 2020-12) of the wire kinds, one <Kind>.json per kind, shipped in the package.

The schemas are generated from the codecs each kind declares (Wire.json_schema), so they describe
exactly the wire dict to_dict writes: version 4, kind, every field, the three tags. They state
the shape of a document, not every rule: a document that validates can still be refused by
from_dict (a date that does not exist, a duration that would round, a manifest that breaks a
rule of its contract). Regenerate them with `python -m dogana_core.schemas`; a test checks that
the committed files equal what the generator writes.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from dogana_core.kinds import wire_kinds

__all__ = ["generate", "load_schema", "schema_text", "write"]


def schema_text(schema: Any) -> str:
    """The file form of a schema: two-space indents, ASCII, one trailing newline."""
    return json.dumps(schema, indent=2, ensure_ascii=True) + "\n"


def generate() -> dict[str, str]:
    """File name -> file text, for every wire kind that exists."""
    return {f"{kind.__name__}.json": schema_text(kind.json_schema()) for kind in wire_kinds()}


def load_schema(kind_name: str) -> Any:
    """The shipped JSON Schema of one wire kind, as a dict; FileNotFoundError when none ships."""
    if not kind_name.isidentifier():
        raise FileNotFoundError(f"no schema for {kind_name!r}")
    text = resources.files(__name__).joinpath(f"{kind_name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def write(directory: Path | None = None) -> list[str]:
    """Write every schema into directory (this package's folder by default).

    Schemas of kinds that no longer exist are removed. Returns the names of the files that
    changed, so a caller can tell whether the committed files were current.
    """
    target = directory if directory is not None else Path(__file__).resolve().parent
    files = generate()
    changed: list[str] = []
    for name, text in files.items():
        path = target / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(name)
    for path in sorted(target.glob("*.json")):
        if path.name not in files:
            path.unlink()
            changed.append(path.name)
    return changed
