"""Exit 0 when the PostgreSQL server of the given URL accepts connections, else 1."""

import sys

import dj_database_url
import psycopg

cfg = dj_database_url.parse(sys.argv[1])
try:
    psycopg.connect(
        host=cfg["HOST"] or None,
        port=cfg["PORT"] or None,
        user=cfg["USER"] or None,
        password=cfg["PASSWORD"] or None,
        dbname="postgres",
        connect_timeout=3,
    ).close()
except psycopg.Error as exc:
    print(f"PostgreSQL not reachable: {exc}", file=sys.stderr)
    sys.exit(1)
