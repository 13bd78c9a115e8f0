"""``python -m fourcorner.adapters.sql.migrations NAME``: write the next migration pair,
creating the tables of the collections in ``application.collections.ALL`` that no migration
creates yet.

It only writes files (``NNNN_NAME.sqlite.sql`` and ``NNNN_NAME.postgres.sql`` beside this
module) for review and commit. A change to an existing collection's columns is written by
hand as a new migration (``ALTER TABLE ... ADD COLUMN``, and filling the column).
"""

from __future__ import annotations

import argparse
import pathlib
import re

from fourcorner.adapters.sql import migrations
from fourcorner.adapters.sql.dialect import POSTGRES, SQLITE
from fourcorner.adapters.sql.table import ddl_script
from fourcorner.application.collections import ALL


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m fourcorner.adapters.sql.migrations")
    parser.add_argument("name", help="what the migration adds, in snake case")
    name = parser.parse_args().name
    if not re.fullmatch(r"[a-z0-9_]+", name):
        parser.error("the name is lower case letters, digits and underscores")
    existing = migrations.load(SQLITE.name)
    created: set[str] = set()
    for migration in existing:
        created.update(re.findall(r'CREATE TABLE "(\w+)"', migration.sql))
    new = [c for c in ALL if c.name not in created]
    if not new:
        parser.exit(message="every collection has its table; nothing written\n")
    version = (existing[-1].version if existing else 0) + 1
    here = pathlib.Path(__file__).parent
    for dialect in (SQLITE, POSTGRES):
        path = here / f"{version:04d}_{name}.{dialect.name}.sql"
        head = (
            f"-- {version:04d} {name}: {', '.join(c.name for c in new)}.\n"
            "-- Written with adapters.sql.table.ddl_script. Released: never edit, add a migration.\n"
        )
        path.write_text(f"{head}\n{ddl_script(new, dialect)}", encoding="utf-8")
        print(path)


if __name__ == "__main__":
    main()
