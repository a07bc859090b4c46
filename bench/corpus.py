"""A synthetic but realistic-looking corpus for benchmarks: an assistant's notes about a business.

Vectors come from the hashing FakeEmbedder so building 100k memories takes seconds and the store,
not the embedder, is what gets measured.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

NOW = datetime(2026, 3, 20, 9, 0, tzinfo=UTC)
CUSTOMERS = [f"{a} {b}" for a in ("Acme", "Bluebird", "Harbor", "Cedar", "Maple", "Orbit", "Summit", "Willow",
                                  "Lumen", "Nova", "Atlas", "Pine") for b in ("Bakery", "Hotel", "Cafe", "Corp",
                                                                             "Studio", "Market")]
PRODUCTS = ["house espresso", "decaf", "Ethiopian natural", "Huila single origin", "cold brew concentrate",
            "green coffee", "oat milk", "paper filters", "grinder burrs", "gift boxes"]
TEMPLATES = [
    "{c} ordered {n} kg of {p} for delivery on {d}.",
    "{c} asked about the price of {p} and wants a quote by Friday.",
    "Invoice for {c} covering {n} kg of {p} is overdue by {m} days.",
    "Remember that {c} prefers {p} in {n} kg bags.",
    "Called {c} about a late shipment of {p}; they were understanding.",
    "Roasted {n} kg of {p} today; the batch for {c} tasted bright and sweet.",
    "{c} complained that the {p} arrived stale; offered a {m}% discount.",
    "Met the owner of {c} at the market, talked about {p} and seasonal menus.",
]
KINDS = ["message"] * 6 + ["fact", "episode", "procedure", "summary"]


def memories(n: int, user_id: str = "bench", seed: int = 7) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    for i in range(n):
        c, p = rng.choice(CUSTOMERS), rng.choice(PRODUCTS)
        text = rng.choice(TEMPLATES).format(c=c, p=p, n=rng.randint(1, 60), m=rng.randint(2, 45),
                                            d=f"day {rng.randint(1, 28)}")
        yield {
            "user_id": user_id,
            "content": f"{text} (note {i})",
            "kind": rng.choice(KINDS),
            "created_at": NOW - timedelta(minutes=rng.randint(0, 60 * 24 * 365)),
            "importance": round(rng.random(), 2),
            "entities": [f"customer:{c.lower().replace(' ', '-')}"],
        }


QUERIES = [
    "What did Acme Corp order last month?",
    "How do I usually handle rush orders?",
    "Tell me about my customers",
    "Why are sales down this quarter?",
    "Which invoices are overdue?",
    "What does Bluebird Bakery prefer?",
    "Any complaints about stale decaf recently?",
    "cold brew concentrate price quote",
    "Who did I meet at the market?",
    "Harbor Hotel shipments in the past 2 weeks",
]
