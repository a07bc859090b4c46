"""``make demo``: a few weeks of an assistant working with a small coffee roastery's owner.

Writes the sample memory into a fresh store and prints what a handful of queries retrieve, with
the reasons each memory was recalled. The data was written for this project.
"""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime, timedelta
from typing import Any

from engram.cli import explain
from engram.config import RedactionConfig, RetrievalConfig
from engram.memory import Memory

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
USER = "maya"  # Maya runs "Ember & Oak", a small coffee roastery


def _at(days_ago: float, hour: int = 10) -> str:
    return (NOW - timedelta(days=days_ago)).replace(hour=hour, minute=0).isoformat()


ENTITIES: list[dict[str, Any]] = [
    {"entity_id": "customer:bluebird", "name": "Bluebird Bakery", "aliases": ["Bluebird"]},
    {"entity_id": "customer:acme", "name": "Acme Corporation", "aliases": ["Acme", "Acme Corp"]},
    {"entity_id": "customer:harbor", "name": "Harbor Hotel", "aliases": ["the Harbor"]},
    {"entity_id": "supplier:finca", "name": "Finca La Esperanza", "aliases": ["Finca", "La Esperanza"]},
]

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


def build(memory: Memory) -> int:
    for entity in ENTITIES:
        fields = dict(entity)
        memory.add_entity(fields.pop("entity_id"), user_id=USER, **fields)
    return len(memory.add_many({"user_id": USER, **item} for item in MEMORIES))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", default="engram-demo.db", help="where to write the sample store")
    args = parser.parse_args(argv)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(args.db + suffix):
            os.remove(args.db + suffix)
    with Memory(args.db) as memory:
        count = build(memory)
        print(f"Wrote {count} memories of {USER!r} to {args.db}\n")
        config = RetrievalConfig(top_k=5, max_tokens=600)
        for query in QUERIES:
            result = memory.retrieve(query, user_id=USER, now=NOW, config=config)
            print("=" * 100)
            print(f"QUERY: {query}")
            print("-" * 100)
            print(explain(result))
            print("-" * 100)
            print(result.to_prompt(style="augmentation"))
        print("=" * 100)
        redacted = memory.retrieve(
            "What is my accountant's e-mail?", user_id=USER, now=NOW,
            config=config.with_(redaction=RedactionConfig(enabled=True)),
        )
        print("Redaction on, seed 001 policy format:\n")
        print(redacted.to_prompt(style="policy"))


if __name__ == "__main__":
    main()
