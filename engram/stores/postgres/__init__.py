"""PostgreSQL + pgvector backend (``pip install '.[postgres]'``).

``Memory("postgresql://user@host:5432/db")`` opens :class:`engram.stores.postgres.store.PostgresStore`;
the import is deferred so the embedded SQLite store never needs psycopg. See docs/scaling.md.
"""
