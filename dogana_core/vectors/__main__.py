"""python -m dogana_core.vectors: regenerate identity.json from the example values."""

from __future__ import annotations

from dogana_core.vectors import FILE, cases, write


def main() -> None:
    changed = write()
    print(f"{len(cases())} identity vectors; {FILE} {'changed' if changed else 'current'}")


if __name__ == "__main__":
    main()
