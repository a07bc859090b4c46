"""Standing instructions in long user-assistant chats: a set built on LongMemEval's haystacks.

Each case takes one LongMemEval haystack with every turn (assistant answers included: long, often
code or lists), adds one message in which the user states a standing instruction or preference
("From now on, whenever you write Python for me, use type hints ...") and asks a later request it
must shape ("Can you write a function that reads a CSV file ...?"). The request shares few words
and little meaning with the instruction, while many long answers share both with the request: the
shape on which a plain vector search used to beat the defaults. Every other case hides the
instruction inside a longer message of the user's own, before or after it.

The pairs are this project's own (below); the haystacks are read from the LongMemEval file, never
copied. Gold is the instruction's message; score it by recall_all like LongMemEval.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from datetime import timedelta

from engram.eval import EvalCase, EvalDoc, longmemeval

__all__ = ["PAIRS", "cases"]

#: (what the user once said, what they ask for later)
PAIRS: tuple[tuple[str, str], ...] = (
    ("From now on, whenever you write Python for me, use type hints on every function and keep lines under 100 "
     "characters.", "Can you write a function that reads a CSV file and returns the rows as dictionaries?"),
    ("Please always answer in British English spelling, I'm writing for a UK audience.",
     "Draft a short paragraph describing the colour palette of our new website."),
    ("I'm vegetarian, so please never suggest recipes with meat or fish.",
     "What could I cook for six people on Saturday night?"),
    ("When you explain a concept, give me one concrete example first and the theory after it.",
     "How does a hash map handle collisions?"),
    ("I use PostgreSQL 16 at work, so assume that whenever we talk about databases.",
     "How do I add an index without locking the table?"),
    ("Keep your answers short please, three or four sentences at most unless I ask for detail.",
     "Why is the sky blue?"),
    ("I prefer tabs over spaces and I want JavaScript examples to use async/await rather than .then chains.",
     "Show me how to fetch JSON from an API in the browser."),
    ("I'm allergic to peanuts and tree nuts, keep that in mind for any food ideas.",
     "Any ideas for a homemade energy bar I could take hiking?"),
    ("My team writes Go, not Java, so give me Go snippets when we discuss backend code.",
     "How would I implement a simple rate limiter for an HTTP handler?"),
    ("I travel with my dog everywhere, so any trip suggestion has to be pet friendly.",
     "Where should I go for a long weekend in October?"),
    ("Please format any table you give me as Markdown, I paste them straight into Obsidian.",
     "Compare the main cloud providers on price, regions and free tier."),
    ("I run Arch Linux on my laptop; assume pacman rather than apt in install instructions.",
     "How do I install and set up Docker?"),
    ("I'm training for a marathon and I avoid alcohol completely.",
     "Suggest a drink to order at my cousin's wedding reception."),
    ("Always cite the source or documentation page when you tell me a library's behaviour.",
     "Does pandas copy the dataframe when I select a column?"),
    ("I can't stand jargon. Explain finance things to me like I'm a smart twelve-year-old.",
     "What is a bond yield and why does it go down when prices go up?"),
    ("For anything about money, I'm in Canada, so use Canadian dollars and Canadian tax rules.",
     "How much should I put aside each month for retirement?"),
    ("I'm learning Spanish, so add the Spanish translation of key terms at the end of your answers.",
     "What are the parts of a flower?"),
    ("When you write SQL for me, use uppercase keywords and put each clause on its own line.",
     "Give me a query that counts orders per customer for last month."),
    ("My kids are 4 and 7, so family activities need to work for both ages.",
     "What can we do together on a rainy afternoon?"),
    ("I have a bad knee, so no running or jumping exercises in any workout plan.",
     "Put together a 30 minute routine I can do at home."),
    ("I prefer React with TypeScript and functional components, no class components.",
     "Build me a small to-do list component."),
    ("Please use metric units, I don't think in miles or pounds.",
     "How far is it from Boston to New York and how heavy is a typical carry-on allowance?"),
    ("Don't use emojis in anything you write for me; it's for formal business emails.",
     "Write a note thanking a supplier for delivering early."),
    ("I'm on a tight budget this year, keep gift suggestions under 30 dollars.",
     "What should I get my father for his birthday?"),
    ("For unit tests, I use pytest with fixtures, never unittest classes.",
     "How do I test a function that calls an external weather API?"),
    ("I'm colour-blind (red-green), so avoid red and green as the only distinction in charts.",
     "How should I style the lines in a plot comparing three sales regions?"),
    ("When I ask for a plan, give me numbered steps with a time estimate on each.",
     "How do I move my blog from WordPress to a static site?"),
    ("I'm a night-shift nurse, so I sleep from 9 am to 4 pm.",
     "When is the best time for me to go to the gym?"),
    ("Use Rust's standard library only in examples; our build can't pull in crates.",
     "How do I parse command-line arguments in a small tool?"),
    ("I write fiction in the first person and present tense; keep any sample prose that way.",
     "Write the opening lines of a story set on a night train."),
)


def cases(source: str | os.PathLike[str], *, seed: int = 7) -> Iterator[EvalCase]:
    """One case per pair, on the LongMemEval haystack of every third question of ``source``."""
    haystacks = list(longmemeval.cases(source))
    rng = random.Random(seed)
    for i, (instruction, request) in enumerate(PAIRS):
        base = haystacks[(i * 3) % len(haystacks)]
        docs = base.documents
        beside = docs[rng.randrange(len(docs) // 4, len(docs) * 3 // 4)]
        longer = [d for d in docs if d.role == "user" and len(d.content) > 200]
        text, qtype = instruction, "instruction"
        if i % 2 and longer:
            host = rng.choice(longer).content
            text = f"{host}\n\n{instruction}" if i % 4 == 1 else f"{instruction} {host}"
            qtype = "instruction-in-long-message"
        said = EvalDoc(f"instruction-{i}", beside.session_id, "user", text,
                       beside.created_at + timedelta(minutes=1))
        yield EvalCase(
            question_id=f"instruction-{i}", question_type=qtype, question=request, now=base.now,
            documents=(*docs, said), gold_turns=frozenset([said.doc_id]),
            gold_sessions=frozenset([beside.session_id]),
        )
