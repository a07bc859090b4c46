"""``engram copy`` throughput: a SQLite store of N memories into PostgreSQL and back, no re-embedding.

    python bench/copy_store.py [--memories 100000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import memories

from engram import Memory
from engram.embedders.fake import FakeEmbedder
from engram.stores.copy import copy_store
from engram.stores.sqlite.store import SQLiteStore
from engram.testing.pgserver import start_postgres


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--out", default="bench/results/copy_store.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src_path = Path(tmp) / "src.db"
        with Memory(src_path, embedder=FakeEmbedder(384)) as memory:
            items = list(memories(args.memories))
            for start in range(0, len(items), 5000):
                memory.add_many(items[start : start + 5000])
        report: dict[str, object] = {"memories": args.memories}
        with start_postgres() as server:  # its own dir: the server's user cannot enter ours
            src = SQLiteStore(src_path)
            dst = Memory(server.url, embedder=FakeEmbedder(384)).store
            started = time.perf_counter()
            copied = copy_store(src, dst)
            seconds = time.perf_counter() - started
            report["sqlite_to_postgres_s"] = round(seconds, 1)
            report["sqlite_to_postgres_per_s"] = round(args.memories / seconds, 1)
            back = SQLiteStore(Path(tmp) / "back.db")
            started = time.perf_counter()
            copy_store(dst, back)
            seconds = time.perf_counter() - started
            report["postgres_to_sqlite_s"] = round(seconds, 1)
            report["postgres_to_sqlite_per_s"] = round(args.memories / seconds, 1)
            report["verified"] = back.count() == src.count() == args.memories
            report["copy_report"] = str(copied)
            for store in (src, dst, back):
                store.close()
    print(json.dumps(report))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
