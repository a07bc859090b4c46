"""Child processes of the reliability suite and the campaigns that drive them.

Children run as ``python -m tests.reliability._workers ROLE ...`` from the repository root, so a test
and ``bench/reliability.py`` drive exactly the same code. Every child records what it did only *after*
the call returned (an id is written to the log once ``add_many`` has returned it), so the parent knows
which writes the engine promised to keep.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
LONG = os.environ.get("ENGRAM_LONG") == "1"
REPORT_ENV = "ENGRAM_RELIABILITY_REPORT"

WORDS = (
    "invoice", "shipment", "ledger", "pallet", "freight", "harbor", "quarterly", "rebate", "warehouse",
    "contract", "renewal", "discount", "courier", "customs", "audit", "payroll", "forecast", "tender",
    "supplier", "backlog",
)


def scale(short: int, long: int) -> int:
    """The short figure under ``make test``, the long one with ``ENGRAM_LONG=1``."""
    return long if LONG else short


def report(name: str, figures: dict[str, Any]) -> None:
    """Print a figure set (visible with ``pytest -s``) and append it to ``$ENGRAM_RELIABILITY_REPORT``."""
    line = json.dumps({"test": name, "long": LONG, **figures}, sort_keys=True, default=str)
    print(f"\n[reliability] {line}")
    target = os.environ.get(REPORT_ENV)
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def spawn(role: str, *args: str, log_dir: Path) -> subprocess.Popen[bytes]:
    """Start one worker child; its stderr goes to a file in ``log_dir`` for the post-mortem."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    stderr = open(log_dir / f"{role}-{os.getpid()}-{time.monotonic_ns()}.err", "wb")  # noqa: SIM115
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.reliability._workers", role, *args],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
        )
    finally:
        stderr.close()


def stderr_tail(log_dir: Path, limit: int = 2000) -> str:
    parts = [p.read_text(errors="replace")[-limit:] for p in sorted(log_dir.glob("*.err")) if p.stat().st_size]
    return "\n".join(parts)[-limit:]


def fake_vectors(texts: Sequence[str]) -> np.ndarray[Any, np.dtype[np.float32]]:
    from engram.embedders.fake import FakeEmbedder

    return FakeEmbedder().embed_batch(list(texts))


# =====================================================================================================
# Crash safety
# =====================================================================================================


def crash_ingest(db: str, log: str, seed: int) -> None:
    """Ingest forever in batches (some larger than one 256-record transaction), now and then delete or
    link; every line is written after the call it reports has returned. The parent SIGKILLs us."""
    from engram import Memory
    from engram.embedders.fake import FakeEmbedder

    rng = random.Random(seed)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(*parts: str) -> None:
        os.write(fd, ("\t".join(parts) + "\n").encode())

    added: list[tuple[str, str]] = []
    counter = 0
    with Memory(db, embedder=FakeEmbedder()) as memory:
        emit("READY")
        while True:
            n = rng.choice((1, 3, 17, 64, 300))  # 300 spans two add_many transactions
            items = []
            for _ in range(n):
                token = f"k{seed}x{counter}"
                counter += 1
                items.append({
                    "user_id": f"u{rng.randrange(3)}",
                    "content": f"{token} {' '.join(rng.choices(WORDS, k=4))}",
                    "tags": [f"t{rng.randrange(5)}"],
                    "entities": [f"topic:{rng.randrange(20)}"],
                    "metadata": {"token": token},
                })
            records = memory.add_many(items)
            for record in records:
                emit("A", record.user_id, record.id, record.content)
                added.append((record.user_id, record.id))
            roll = rng.random()
            if roll < 0.15 and added:
                user, victim = added.pop(rng.randrange(len(added)))
                emit("d", user, victim)  # intent: until "D" the outcome is unknown
                memory.delete(victim, user_id=user)
                emit("D", user, victim)
            elif roll < 0.3 and len(records) >= 2 and records[0].user_id == records[1].user_id:
                memory.link(records[0].id, records[1].id, "related", user_id=records[0].user_id)


@dataclass
class CrashLedger:
    """What the children promised: memories whose add returned, deletes that returned."""

    present: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (user, content)
    deleted: dict[str, str] = field(default_factory=dict)  # id -> user
    uncertain: set[str] = field(default_factory=set)  # delete started, not known to have returned

    def absorb(self, log: Path) -> list[str]:
        """Read one child's log (complete lines only); returns the ids added by it."""
        fresh: list[str] = []
        if not log.exists():
            return fresh
        text = log.read_text(encoding="utf-8", errors="strict")
        lines = text.split("\n")[:-1]  # a line cut by the kill has no newline yet
        for line in lines:
            parts = line.split("\t")
            if parts[0] == "A":
                self.present[parts[2]] = (parts[1], parts[3])
                fresh.append(parts[2])
            elif parts[0] == "d":
                self.uncertain.add(parts[2])
            elif parts[0] == "D":
                self.uncertain.discard(parts[2])
                self.present.pop(parts[2], None)
                self.deleted[parts[2]] = parts[1]
        for memory_id in self.uncertain:
            self.present.pop(memory_id, None)
        return [i for i in fresh if i in self.present]


def sqlite_integrity(db: str) -> list[str]:
    """PRAGMA integrity_check plus FTS5's own check of its index against the memories table."""
    conn = sqlite3.connect(db, timeout=30)
    try:
        problems = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall() if r[0] != "ok"]
        try:
            conn.execute("INSERT INTO keyword_fts (keyword_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            problems.append(f"fts5: {exc}")
        return problems
    finally:
        conn.close()


def verify_crash_store(
    db: str, ledger: CrashLedger, fresh: Sequence[str], rng: random.Random, *, deep_cap: int = 400
) -> dict[str, Any]:
    """Open the store as a restarting process would and check every promise in the ledger."""
    from engram import Memory
    from engram.embedders.fake import FakeEmbedder
    from engram.model import Filters

    out: dict[str, Any] = {"lost": [], "keyword_miss": [], "vector_miss": [], "content_mismatch": [],
                           "resurrected": [], "integrity": []}
    with Memory(db, embedder=FakeEmbedder()) as memory:
        memory.embedder  # binds the store to the model, as any real open would  # noqa: B018
        out["integrity"] = sqlite_integrity(db)
        # Presence of every promised memory under its own user, read straight from the table.
        conn = sqlite3.connect(db)
        try:
            stored = set(conn.execute("SELECT id, user_id FROM memories").fetchall())
        finally:
            conn.close()
        out["lost"] = [i for i, (user, _) in ledger.present.items() if (i, user) not in stored]
        fresh_set = set(fresh)
        by_user: dict[str, list[str]] = defaultdict(list)
        for memory_id in fresh:
            by_user[ledger.present[memory_id][0]].append(memory_id)
        for user, ids in by_user.items():  # and through the store's own read path for the newest
            found = {r.id for r in memory.store.fetch(user, ids)}
            out["lost"].extend(i for i in ids if i not in found and i not in out["lost"])
        for memory_id, user in ledger.deleted.items():
            if memory.store.get(user, memory_id) is not None:
                out["resurrected"].append(memory_id)
        # Deep checks: the newest writes (most at risk), a sample of the rest, a sample of older ones.
        fresh = list(fresh)
        deep = fresh[-50:] + rng.sample(fresh[:-50], min(len(fresh[:-50]), deep_cap))
        older = [i for i in ledger.present if i not in fresh_set]
        deep += rng.sample(older, min(len(older), 30, deep_cap))
        contents = [ledger.present[i][1] for i in deep]
        vectors = fake_vectors(contents) if contents else np.zeros((0, 64), dtype=np.float32)
        for memory_id, content, vector in zip(deep, contents, vectors, strict=True):
            user = ledger.present[memory_id][0]
            record = memory.store.get(user, memory_id)
            if record is None:
                continue  # already counted as lost
            if record.content != content:
                out["content_mismatch"].append(memory_id)
            token = content.split(" ", 1)[0]
            if memory_id not in {h[0] for h in memory.store.keyword_search(user, token, 10, Filters())}:
                out["keyword_miss"].append(memory_id)
            top = memory.store.vector_search(user, vector, 1, Filters())
            if not top or top[0][0] != memory_id:
                out["vector_miss"].append(memory_id)
        # Every fresh memory's stored vector is its own (the index is exact, so it is then found).
        for user, ids in by_user.items():
            wanted = ids
            vectors_stored = memory.store.vectors(user, wanted)
            expected = list(fake_vectors([ledger.present[i][1] for i in wanted])) if wanted else []
            for memory_id, vector in zip(wanted, expected, strict=True):
                got = vectors_stored.get(memory_id)
                if got is None or not np.allclose(got, vector, atol=1e-6):
                    out["vector_miss"].append(memory_id)
        out["checked_deep"] = len(deep)
        out["stored"] = memory.store.count()
    return out


def crash_campaign(
    workdir: Path, kills: int, *, seed: int = 8, max_pause: float = 0.4, deep_cap: int = 400
) -> dict[str, Any]:
    """Start an ingesting child, SIGKILL it at a random point, verify the store; ``kills`` times."""
    rng = random.Random(seed)
    db = str(workdir / "crash.db")
    ledger = CrashLedger()
    problems: list[str] = []
    lost: set[str] = set()
    survived = 0
    killed_before_ready = 0
    checked = 0
    started = time.perf_counter()
    for run in range(kills):
        log = workdir / f"crash-{run}.log"
        proc = spawn("crash-ingest", db, str(log), str(seed * 100_000 + run), log_dir=workdir)
        try:
            if rng.random() < 0.15:
                # Kill early: during import, open, migration or the first batch.
                time.sleep(rng.uniform(0.05, 0.8))
            else:
                deadline = time.monotonic() + 60
                while not (log.exists() and log.stat().st_size) and proc.poll() is None:
                    if time.monotonic() > deadline:
                        raise AssertionError("crash child never became ready")
                    time.sleep(0.01)
                time.sleep(rng.uniform(0.0, max_pause))
            if proc.poll() is not None:
                raise AssertionError(f"crash child exited by itself ({proc.returncode}): {stderr_tail(workdir)}")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if not log.exists():
            killed_before_ready += 1
        fresh = ledger.absorb(log)
        if not Path(db).exists():
            survived += 1
            continue
        result = verify_crash_store(db, ledger, fresh, rng, deep_cap=deep_cap)
        checked += result["checked_deep"]
        lost.update(result["lost"])
        for key in ("integrity", "lost", "keyword_miss", "vector_miss", "content_mismatch", "resurrected"):
            if result[key]:
                problems.append(f"kill {run}: {key}: {result[key][:5]} ({len(result[key])})")
        survived += 1
    return {
        "kills": kills,
        "kills_survived": survived,
        "killed_before_ready": killed_before_ready,
        "memories_promised": len(ledger.present),
        "memories_lost": len(lost),
        "deletes_promised": len(ledger.deleted),
        "deep_checks": checked,
        "problems": problems,
        "seconds": round(time.perf_counter() - started, 1),
    }


# =====================================================================================================
# Concurrency
# =====================================================================================================


def counter_id(writer: int, j: int) -> str:
    return f"C{writer}x{j}"


COUNTERS = 4


def _sleep_until(at: float) -> None:
    delay = at - time.time()
    if delay > 0:
        time.sleep(delay)


@contextlib.contextmanager
def _errors_to(errors: list[str]) -> Iterator[None]:
    try:
        yield
    except Exception as exc:  # every escape is a finding, counted by the parent
        if len(errors) < 50:
            errors.append(f"{type(exc).__module__}.{type(exc).__name__}: {exc}"[:300])
        else:
            errors.append("...")


def writer(target: str, out: str, start_at: float, seconds: float, index: int) -> None:
    """add_many batches tagged with their batch id and size; update counters in place."""
    from engram import Memory
    from engram.embedders.fake import FakeEmbedder

    rng = random.Random(index)
    user = f"w{index}"
    batches: dict[str, int] = {}
    counters: dict[str, int] = {}
    errors: list[str] = []
    ops = records = 0
    max_ms = 0.0
    with Memory(target, embedder=FakeEmbedder()) as memory:
        memory.embedder  # noqa: B018
        _sleep_until(start_at)
        n = 0
        while time.time() < start_at + seconds:
            t0 = time.perf_counter()
            with _errors_to(errors):
                if n % 5 == 4:
                    j = rng.randrange(COUNTERS)
                    value = counters.get(counter_id(index, j), 0) + 1
                    memory.update(counter_id(index, j), user_id=f"{user}-c",
                                  content=f"counter {counter_id(index, j)} value {value}", metadata={"value": value})
                    counters[counter_id(index, j)] = value
                else:
                    batch = f"b{index}n{n}"
                    size = rng.randint(2, 40)
                    memory.add_many([
                        {"user_id": user, "content": f"{batch} item {i} {' '.join(rng.choices(WORDS, k=3))}",
                         "tags": [batch], "metadata": {"batch": batch, "size": size}}
                        for i in range(size)
                    ])
                    batches[batch] = size
                    records += size
                ops += 1
            max_ms = max(max_ms, (time.perf_counter() - t0) * 1000)
            n += 1
    Path(out).write_text(json.dumps({"role": "writer", "index": index, "ops": ops, "records": records,
                                     "batches": batches, "counters": counters, "errors": errors,
                                     "max_ms": max_ms}))


def _torn_batches(records: Sequence[Any], limit: int) -> list[str]:
    """Batches seen partly: each add_many is one transaction, so a batch is all there or absent."""
    groups: dict[str, list[Any]] = defaultdict(list)
    for record in records:
        if "batch" in record.metadata:
            groups[record.metadata["batch"]].append(record)
    if len(records) >= limit and records:
        oldest = min(r.created_at for r in records)  # the page may cut the oldest batch
        groups = {b: rs for b, rs in groups.items() if rs[0].created_at != oldest}
    return [b for b, rs in groups.items() if len(rs) != rs[0].metadata["size"]]


def reader(target: str, out: str, start_at: float, seconds: float, index: int, writers: int) -> None:
    """Read while others write: batches all-or-nothing, counters never missing nor torn, no errors."""
    from engram import Memory, RetrievalConfig
    from engram.embedders.fake import FakeEmbedder
    from engram.errors import MemoryNotFound
    from engram.model import Filters

    rng = random.Random(1000 + index)
    errors: list[str] = []
    torn: list[str] = []
    ops = 0
    max_ms = 0.0
    config = RetrievalConfig(min_score=0.0, cache_ttl=0.0)
    with Memory(target, embedder=FakeEmbedder()) as memory:
        memory.embedder  # noqa: B018
        _sleep_until(start_at)
        while time.time() < start_at + seconds:
            w = rng.randrange(writers)
            user = f"w{w}"
            roll = rng.random()
            t0 = time.perf_counter()
            with _errors_to(errors):
                if roll < 0.3:
                    limit = 300
                    listed = memory.list(user_id=user, limit=limit)
                    torn.extend(f"list {b}" for b in _torn_batches(listed, limit))
                    if listed:
                        pick = rng.choice(listed)
                        got = memory.store.get(user, pick.id)
                        if got != pick:
                            torn.append(f"get {pick.id} differs from list")
                elif roll < 0.6:
                    cid = counter_id(w, rng.randrange(COUNTERS))
                    try:
                        record = memory.get(cid, user_id=f"{user}-c")
                    except MemoryNotFound:
                        torn.append(f"counter {cid} missing mid-update")
                    else:
                        value = record.metadata.get("value", 0)
                        if value and not record.content.endswith(f"value {value}"):
                            torn.append(f"counter {cid} torn: {record.content!r} vs {value}")
                elif roll < 0.8:
                    word = rng.choice(WORDS)
                    result = memory.retrieve(f"{word} item", user_id=user, config=config)
                    error = result.metadata.error
                    # Empty before the writer's first batch: that is the seed's policy, not a failure.
                    if error is not None and error["code"] != "COLLECTION_NOT_FOUND":
                        errors.append(f"retrieve fallback {result.metadata.error}")
                    for entry in result.memories:
                        if entry.record is None or entry.record.user_id != user:
                            torn.append(f"retrieve returned a foreign memory {entry.id}")
                else:
                    hits = memory.store.keyword_search(user, rng.choice(WORDS), 50, Filters())
                    records = memory.store.fetch(user, [h[0] for h in hits])
                    if len(records) != len(hits):
                        # A hit may vanish only if deleted in between; this suite never deletes.
                        torn.append("keyword hit without its row")
                    for batch in list({r.metadata["batch"] for r in records})[:3]:
                        whole = memory.list(user_id=user, filters=Filters(tags_all=(batch,)), limit=100)
                        if len(whole) != whole[0].metadata["size"]:
                            torn.append(f"keyword {batch}: {len(whole)} of {whole[0].metadata['size']}")
                ops += 1
            max_ms = max(max_ms, (time.perf_counter() - t0) * 1000)
    Path(out).write_text(json.dumps({"role": "reader", "index": index, "ops": ops, "torn": torn[:50],
                                     "torn_count": len(torn), "errors": errors, "max_ms": max_ms}))


def setup_counters(target: str, writers: int) -> None:
    from engram import Memory
    from engram.embedders.fake import FakeEmbedder

    with Memory(target, embedder=FakeEmbedder()) as memory:
        memory.add_many([
            {"id": counter_id(w, j), "user_id": f"w{w}-c", "content": f"counter {counter_id(w, j)} value 0",
             "metadata": {"value": 0}}
            for w in range(writers) for j in range(COUNTERS)
        ])


def reconcile(target: str, results: Sequence[dict[str, Any]]) -> list[str]:
    """After the run: every recorded batch whole, nothing unrecorded, counters at their last value."""
    from engram import Memory
    from engram.embedders.fake import FakeEmbedder

    problems: list[str] = []
    with Memory(target, embedder=FakeEmbedder()) as memory:
        for result in results:
            if result["role"] != "writer":
                continue
            user = f"w{result['index']}"
            records = []
            offset = 0
            while True:
                page = memory.list(user_id=user, limit=10_000, offset=offset)
                records.extend(page)
                offset += len(page)
                if len(page) < 10_000:
                    break
            counts: dict[str, int] = defaultdict(int)
            for record in records:
                counts[record.metadata["batch"]] += 1
            if dict(counts) != result["batches"]:
                missing = set(result["batches"]) - set(counts)
                extra = set(counts) - set(result["batches"])
                problems.append(f"{user}: batches differ (missing {len(missing)}, unrecorded {len(extra)})")
            if len(records) != result["records"]:
                problems.append(f"{user}: {len(records)} stored, {result['records']} recorded")
            for cid, value in result["counters"].items():
                record = memory.get(cid, user_id=f"{user}-c")
                if record.metadata.get("value") != value:
                    problems.append(f"{cid}: value {record.metadata.get('value')} != last written {value}")
    if not target.startswith("postgres"):
        problems.extend(f"integrity: {p}" for p in sqlite_integrity(target))
    return problems


def concurrency_run(target: str, workdir: Path, *, writers: int, readers: int, seconds: float) -> dict[str, Any]:
    setup_counters(target, writers)
    start_at = time.time() + 3.0  # every child imported and connected before the clock starts
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    for i in range(writers):
        out = workdir / f"writer-{i}.json"
        procs.append((spawn("writer", target, str(out), str(start_at), str(seconds), str(i), log_dir=workdir), out))
    for i in range(readers):
        out = workdir / f"reader-{i}.json"
        procs.append((spawn("reader", target, str(out), str(start_at), str(seconds), str(i), str(writers),
                            log_dir=workdir), out))
    results: list[dict[str, Any]] = []
    crashed: list[str] = []
    for proc, out in procs:
        try:
            code = proc.wait(timeout=seconds + 120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = -9
        if code != 0 or not out.exists():
            crashed.append(f"{out.name}: exit {code}")
            continue
        results.append(json.loads(out.read_text()))
    if crashed:
        crashed.append(stderr_tail(workdir))
    errors = [e for r in results for e in r["errors"]]
    torn = [t for r in results for t in r.get("torn", [])]
    problems = reconcile(target, results)
    write_ops = sum(r["ops"] for r in results if r["role"] == "writer")
    read_ops = sum(r["ops"] for r in results if r["role"] == "reader")
    return {
        "backend": "postgres" if target.startswith("postgres") else "sqlite",
        "writers": writers,
        "readers": readers,
        "seconds": seconds,
        "write_ops": write_ops,
        "read_ops": read_ops,
        "records_written": sum(r.get("records", 0) for r in results),
        "ops_per_second": round((write_ops + read_ops) / seconds, 1),
        "write_ops_per_second": round(write_ops / seconds, 1),
        "read_ops_per_second": round(read_ops / seconds, 1),
        "max_op_ms": round(max((r["max_ms"] for r in results), default=0.0), 1),
        "errors": len(errors) + len(crashed),
        "error_samples": (crashed + errors)[:10],
        "torn_reads": sum(r.get("torn_count", 0) for r in results),
        "torn_samples": torn[:10],
        "reconcile_problems": problems,
    }


def main(argv: Sequence[str]) -> None:
    role, *args = argv
    if role == "crash-ingest":
        crash_ingest(args[0], args[1], int(args[2]))
    elif role == "writer":
        writer(args[0], args[1], float(args[2]), float(args[3]), int(args[4]))
    elif role == "reader":
        reader(args[0], args[1], float(args[2]), float(args[3]), int(args[4]), int(args[5]))
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
