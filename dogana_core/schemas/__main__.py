"""python -m dogana_core.schemas: regenerate the shipped JSON Schemas from the codecs."""

from __future__ import annotations

from dogana_core.schemas import generate, write


def main() -> None:
    changed = write()
    status = f"changed: {', '.join(changed)}" if changed else "all current"
    print(f"{len(generate())} schemas; {status}")


if __name__ == "__main__":
    main()
