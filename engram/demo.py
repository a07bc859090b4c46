"""``make demo``: a few weeks of an assistant working with a small coffee roastery's owner.

Writes the sample memory into a fresh store, and the roastery's order book into a small domain
database beside it, then prints what a handful of queries retrieve, with the reasons each memory was
recalled; then current truth replacing a stale fact, feedback, and the four recall modes. The data
was written for this project.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engram.cli import explain
from engram.config import RedactionConfig, RetrievalConfig
from engram.domain import SQLiteDomainSource
from engram.memory import Memory
from engram.recall_types import Recall

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
USER = "maya"  # Maya runs "Ember & Oak", a small coffee roastery


def _at(days_ago: float, hour: int = 10) -> str:
    return (NOW - timedelta(days=days_ago)).replace(hour=hour, minute=0).isoformat()


ENTITIES: list[dict[str, Any]] = [
    {"entity_id": "customer:bluebird", "name": "Bluebird Bakery", "aliases": ["Bluebird"]},
    {"entity_id": "customer:acme", "name": "Acme Corporation", "aliases": ["Acme", "Acme Corp"]},
    {"entity_id": "customer:harbor", "name": "Harbor Hotel", "aliases": ["the Harbor"]},
    {"entity_id": "supplier:finca", "name": "Finca La Esperanza", "aliases": ["Finca", "La Esperanza"]},
    {"entity_id": "order:a-1042", "name": "order A-1042", "aliases": ["A-1042"]},
]

# The ontology (customer --HAS_MANY--> order) and the relations it allows.
ONTOLOGY = [("customer", "HAS_MANY", "order")]
RELATIONS = [("customer:acme", "HAS_MANY", "order:a-1042")]

MEMORIES: list[dict[str, Any]] = [
    # summaries
    {"kind": "summary", "content": "Bluebird Bakery is Maya's oldest wholesale customer: a weekly standing order "
     "of house espresso, paid on time, owner Priya likes to be called before price changes.",
     "entities": ["customer:bluebird"], "created_at": _at(3)},
    {"kind": "summary", "content": "Acme Corporation is a large office account since January: big irregular orders "
     "for their three floors, slow to pay, always asks for invoices by e-mail.",
     "entities": ["customer:acme"], "created_at": _at(2)},
    # facts
    {"kind": "fact", "subject": "Acme Corporation", "predicate": "prefers", "object": "NET30 payment terms",
     "entities": ["customer:acme"], "importance": 0.8, "created_at": _at(40)},
    {"kind": "fact", "subject": "Bluebird Bakery", "predicate": "has_property", "object": "a standing order of "
     "12 kg house espresso every Monday", "entities": ["customer:bluebird"], "created_at": _at(60)},
    {"kind": "fact", "subject": "Harbor Hotel", "predicate": "prefers", "object": "decaf in 1 kg bags for the "
     "breakfast buffet", "entities": ["customer:harbor"], "created_at": _at(25)},
    {"kind": "fact", "subject": "Finca La Esperanza", "predicate": "has_property", "object": "a six-week lead "
     "time on green coffee from Huila", "entities": ["supplier:finca"], "importance": 0.7, "created_at": _at(50)},
    {"kind": "fact", "subject": "Maya", "predicate": "prefers", "object": "roasting on Tuesdays and Fridays",
     "created_at": _at(45)},
    # procedures
    {"kind": "procedure", "trigger": "a customer asks for a rush order",
     "action": "roast on the next Tuesday or Friday slot, charge the 10% rush fee, and ship by courier the "
     "same afternoon", "created_at": _at(35)},
    {"kind": "procedure", "trigger": "an invoice is more than 30 days overdue",
     "action": "send a friendly reminder, then call after 7 more days; pause new orders after 45 days",
     "created_at": _at(20)},
    {"kind": "procedure", "trigger": "green coffee stock falls below 60 kg",
     "action": "reorder from Finca La Esperanza, remembering their six-week lead time",
     "entities": ["supplier:finca"], "created_at": _at(30)},
    # episodes
    {"kind": "episode", "content": "Acme ordered 40 kg of the Huila single origin and 20 kg of house espresso "
     "for their office relaunch.", "entities": ["customer:acme"], "created_at": _at(24)},
    {"kind": "episode", "content": "Order A-1042 was delayed a day: the courier missed the Friday pickup, so "
     "Maya drove the first 20 kg over herself.", "entities": ["order:a-1042"], "created_at": _at(23)},
    {"kind": "episode", "content": "Bluebird Bakery added 3 kg of decaf to this week's order for a wedding.",
     "entities": ["customer:bluebird"], "created_at": _at(18)},
    {"kind": "episode", "content": "Acme's invoice #789 for the relaunch order is 35 days overdue; Maya sent a "
     "reminder.", "entities": ["customer:acme"], "importance": 0.8, "created_at": _at(6)},
    {"kind": "episode", "content": "Wholesale sales dropped about 15% this quarter because two cafés closed "
     "for renovation and the Harbor Hotel paused orders in February.", "importance": 0.9,
     "entities": ["customer:harbor"], "created_at": _at(9)},
    {"kind": "episode", "content": "The roaster's afterburner was serviced; the technician recommended a "
     "check every six months.", "created_at": _at(28)},
    # messages
    {"kind": "message", "role": "user", "content": "Priya from Bluebird called: they want to try our new "
     "Ethiopian natural for their pour-over bar next month.", "entities": ["customer:bluebird"],
     "created_at": _at(4), "session_id": "s-0316"},
    {"kind": "message", "role": "assistant", "content": "Noted. I'll remind you to send Bluebird a 250 g sample "
     "of the Ethiopian natural before the 1st.", "entities": ["customer:bluebird"], "created_at": _at(4),
     "session_id": "s-0316"},
    {"kind": "message", "role": "user", "content": "Harbor Hotel is back! They ordered 8 kg of decaf and 10 kg "
     "of espresso for the spring season.", "entities": ["customer:harbor"], "created_at": _at(1),
     "session_id": "s-0319"},
    {"kind": "message", "role": "user", "content": "Remind me: my accountant's e-mail is lena.fischer@example.com "
     "and the VAT return is due on the 10th.", "created_at": _at(12), "session_id": "s-0308"},
    {"kind": "message", "role": "user", "content": "The farmers market stall made 620 euros on Saturday, mostly "
     "bags of the house blend.", "created_at": _at(13), "session_id": "s-0307"},
    {"kind": "message", "role": "user", "content": "I'm thinking about a subscription box for home customers: "
     "two bags a month, free shipping.", "created_at": _at(15), "session_id": "s-0305"},
    {"kind": "message", "role": "user", "content": "I'm thinking about a subscription box for home customers: "
     "two bags a month, free shipping.", "created_at": _at(14), "session_id": "s-0306"},
]

QUERIES = [
    "What did Acme order last month?",
    "How do I usually handle rush orders?",
    "Tell me about my customers",
    "Why are sales down this quarter?",
    "What's new with Bluebird lately?",
    "What payment terms does Acme Corp prefer?",
]


# What changed later: Acme renegotiated, so the NET30 fact is no longer current truth.
LATER_FACT: dict[str, Any] = {
    "kind": "fact", "subject": "Acme Corporation", "predicate": "prefers", "object": "NET60 payment terms",
    "entities": ["customer:acme"], "importance": 0.8, "created_at": _at(5),
}

# The roastery's order book: what the domain database answers ("What did Acme order?").
ORDERS = [
    ("A-0990", "acme", "house espresso", 15, _at(68)),
    ("A-1042", "acme", "Huila single origin", 40, _at(24)),
    ("A-1043", "acme", "house espresso", 20, _at(24, hour=11)),
    ("B-2001", "bluebird", "house espresso", 12, _at(25)),
    ("B-2007", "bluebird", "decaf", 3, _at(18)),
]


def build(memory: Memory) -> int:
    for entity in ENTITIES:
        fields = dict(entity)
        memory.add_entity(fields.pop("entity_id"), user_id=USER, **fields)
    for from_type, relation, to_type in ONTOLOGY:
        memory.define_relation(from_type, relation, to_type, user_id=USER)
    for a, relation, b in RELATIONS:
        memory.entities.relate(a, relation, b, user_id=USER)
    return len(memory.add_many({"user_id": USER, **item} for item in MEMORIES))


def build_domain(path: str) -> None:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE customers (id TEXT PRIMARY KEY, name TEXT NOT NULL)")
        conn.execute(
            "CREATE TABLE orders (id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers (id), "
            "item TEXT NOT NULL, kg REAL NOT NULL, ordered_at TEXT NOT NULL)"
        )
        conn.executemany("INSERT INTO customers VALUES (?, ?)", [("acme", "Acme Corporation"), ("bluebird", "Bluebird Bakery")])
        conn.executemany(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
            [(i, c, item, kg, at[:19]) for i, c, item, kg, at in ORDERS],  # UTC, text order is time order
        )
    conn.close()


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def _heading(title: str) -> None:
    print("=" * 100)
    print(title)
    print("-" * 100)


def _recall_lines(result: Recall, limit: int = 3) -> str:
    return "\n".join(f"  [{m.score:.2f}] {m.record.content[:80]}  <- {m.reason}" for m in result.memories[:limit])


def show_truth(memory: Memory, config: RetrievalConfig) -> None:
    _heading("CURRENT TRUTH: later, Acme renegotiated to NET60; the NET30 fact is superseded, not deleted")
    newer = memory.add_many([{"user_id": USER, **LATER_FACT}])[0]
    older = memory.get(next(link.to_id for link in memory.links(newer.id, user_id=USER)), user_id=USER)
    print(f"new:   {newer.content}  (status {newer.status})")
    print(f"older: {older.content}  (status {older.status}, valid until {older.valid_to:%Y-%m-%d})")
    query = "What payment terms does Acme Corp prefer?"
    now = memory.retrieve(query, user_id=USER, now=NOW, config=config)
    then = memory.retrieve(query, user_id=USER, now=NOW, config=config, as_of=_at(10))
    facts = [m.content for m in now.memories if m.type == "fact"]
    print(f"\nretrieve now: {facts[0] if facts else '-'}  ({now.metadata.suppressed_superseded} older version held back)")
    facts = [m.content for m in then.memories if m.type == "fact"]
    print(f"retrieve as_of ten days ago: {facts[0] if facts else '-'}")
    print("\nmemory.recall_linked(<the NET30 fact>, direction='both') -- what replaced it:")
    print(_recall_lines(memory.recall_linked(older.id, user_id=USER, direction="both")))
    print("\nmemory.find_contradictions('Acme payment terms'):")
    print(_recall_lines(memory.find_contradictions("Acme payment terms", user_id=USER, now=NOW, min_salience=0.0)))
    print()


def show_feedback_and_recall(memory: Memory, config: RetrievalConfig) -> None:
    _heading("FEEDBACK: the agent reports which retrieved memories it used (they gain reinforcement)")
    for query in ("How do I usually handle rush orders?", "What did Acme order last month?"):
        result = memory.retrieve(query, user_id=USER, now=NOW, config=config)
        if result.memories:
            used = max(result.memories, key=lambda m: m.score)
            fed = memory.feedback(result.metadata.retrieval_id or "", [used.id], user_id=USER, now=NOW)
            print(f"{query!r}: used {used.content[:60]!r} (recorded {fed.recorded}, "
                  f"weights {result.metadata.config['weightsSource']})")
    print("`engram tune --user maya` fits the weights once enough feedback is logged.\n")
    _heading("RECALL MODES: memory.recall(..., mode=...)")
    for mode in ("relevant", "recent", "important", "frequent"):
        topic = "Acme payment" if mode == "relevant" else None
        print(f"{mode}:")
        print(_recall_lines(memory.recall(topic, user_id=USER, mode=mode, now=NOW, max_results=3)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", default="engram-demo.db", help="where to write the sample store")
    args = parser.parse_args(argv)
    domain_db = str(Path(args.db).with_name(Path(args.db).stem + "-domain.db"))
    _remove(args.db)
    _remove(domain_db)
    build_domain(domain_db)
    with Memory(args.db, domain_source=SQLiteDomainSource(domain_db)) as memory:
        count = build(memory)
        print(f"Wrote {count} memories of {USER!r} to {args.db}, and {len(ORDERS)} orders to {domain_db}\n")
        config = RetrievalConfig(top_k=5, max_tokens=600)
        show_truth(memory, config)
        for query in QUERIES:
            result = memory.retrieve(query, user_id=USER, now=NOW, config=config)
            _heading(f"QUERY: {query}")
            print(explain(result))
            print("-" * 100)
            print(result.to_prompt(style="augmentation"))
        show_feedback_and_recall(memory, config)
        _heading("Redaction on, policy format:")
        redacted = memory.retrieve(
            "What is my accountant's e-mail?", user_id=USER, now=NOW,
            config=config.with_(redaction=RedactionConfig(enabled=True)),
        )
        print(redacted.to_prompt(style="policy"))


if __name__ == "__main__":
    main()
