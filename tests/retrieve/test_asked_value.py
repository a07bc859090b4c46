"""Questions that ask for a value of a visible shape (an e-mail address, a link, a phone number, an
identifier): what holds one gains as far as it is relevant, whatever its words."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram.config import RetrievalConfig
from engram.embedders.fake import FakeEmbedder
from engram.ext import Embedder
from engram.memory import Memory
from engram.model import MemoryRecord
from engram.retrieve.asked_value import asks_for_value, holds_asked_value
from engram.retrieve.understand import understand
from engram.text import query_terms

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("query", "shape"), [
    ("What's Alice's email?", "email"),
    ("What is Alice's e-mail address?", "email"),
    ("What's the webhook URL for Acme?", "link"),
    ("Give me the link to the docs", "link"),
    ("What's Dr. Patel's phone number?", "phone"),
    ("What number should I call for Acme?", "phone"),
    ("What's the number for Bright Smiles?", "phone"),
    ("What's my policy number?", "identifier"),
    ("What's Acme's PO number?", "identifier"),
    ("What is the order ID?", "identifier"),
    ("What's the RMA number?", "identifier"),
    ("What's Alice's number?", "phone"),
    ("What's Bob's cell?", "phone"),
    ("What's the zip code for the office?", "identifier"),
    ("What are Keisha's contact details?", "contact"),
    ("What is the contact info for Acme?", "contact"),
    ("Who is our contact at Globex?", None),  # a person, not a value
    ("What's the contact?", None),
    ("What's Keisha's contact number?", "phone"),
    # an amount: of money when the question names a price, a payment or a sum
    ("How many monitors did Acme order?", "amount"),
    ("What is the number of orders?", "amount"),
    ("How much did Theo weigh at birth?", "amount"),
    ("What score did Ben give the book?", "amount"),
    ("How long is my weekly sync with Priya?", "amount"),
    ("How many days a week can I train?", "amount"),
    ("How much did the oven cost?", "money"),
    ("How much is the pitch at the market?", "amount"),  # "is": a price, a dose, a weight...
    ("How much more rent is Dev paying?", "money"),
    ("What hourly wage did we offer Jess?", "money"),
    ("What do we charge for a sourdough loaf?", "money"),
    ("What was the bill for the van's MOT?", "money"),
    ("What did I buy at the store?", None),
    ("How many tickets did we buy for the concert?", "amount"),  # a count, which a price would not answer
    ("How much time do I spend on email?", "amount"),
    ("What's the refund policy?", None),  # the money word is not what is asked for
    ("What was Maya's budget app called?", None),
    ("Which bill was disputed?", None),
    ("What does the `pay()` method return?", None),
    ("What did we pay attention to in the review?", None),
    ("What's the AWS bill this month?", "money"),
    ("What did dinner come to?", "money"),
    ("How many times did I go to the gym this month?", None),  # each time is told, not a number
    ("How much should I put aside each month for retirement?", None),  # advice
    # a span between two moments is read from when things happened, not from a number said
    ("How many days before my half marathon is the operation?", None),
    ("How many days had passed between the purchase and the party?", None),
    ("How long ago did I start piano?", None),
    ("Did Bob call?", None),
    ("When is Leo's piano lesson?", "day"),
    # the shape's word is not what is asked for
    ("How many emails did I get?", "amount"),
    ("What did Alice say in her email?", None),
    ("Did Bob phone?", None),
    ("Where did I put my phone?", None),
    ("What's the link between Alice and Acme?", None),
    ("Which cell line did we use?", None),
    ("How is the mobile app doing?", None),
    ("Why is the endpoint slow?", None),
    ("What's the dress code?", None),
    ("Who wrote this code?", None),
    ("Did Alice say no?", None),
    # A picture shown: after the shapes above ("How many photos?" is a number, "the photo album's link" a link).
    ("What was Dad doing in the picture Mum took?", "image"),
    ("Who is in the photo?", "image"),
    ("What did Jo send a pic of?", "image"),
    ("How many photos did I take?", "amount"),
    ("What's the link to the photo album?", "link"),
    ("Can you picture that?", None),
    ("Did I send you photos of the cake?", "image"),
    ("What's the Docker image for the API?", None),  # an image of another kind
    ("What's our brand image strategy?", None),
    ("What's the big picture?", None),
    ("When is the next EBS snapshot?", "day"),  # a snapshot is no picture; "when" asks a day
    ("What time is the meeting?", "time"),
    ("At what time do competitors need to register?", "time"),
    ("What were the three coworkers' finishing times in the race?", "time"),
    ("What was Greta's time?", "time"),
    ("What time of year is best for Japan?", None),
    ("What time zone is the Tokyo office in?", None),
    ("How much time do I have left?", "amount"),
    ("What timezone is Bob in?", None),
    ("What timeline did we agree?", None),
    ("What times table is Leo learning?", None),
    ("What is the run time complexity?", None),
    ("What's the link to the race times?", "link"),  # the link is what is asked for
    ("Send me the photo of the finish times", "image"),
    ("Okay, what time is dinner?", "time"),
    ("By what time do I need to leave?", "time"),
    ("Remind me what time the train leaves", "time"),
    ("What's the pickup time?", "time"),
    # "When": a day, a date or a time of day.
    ("When did Felix get told his job was going?", "day"),
    ("So when's the party?", "day"),
    ("On which day did the rescue dog move in?", "day"),
    ("What date was the Hill House meeting?", "day"),
    ("When does Brightwater want deliveries?", "day"),
    ("When I asked about Acme, what did you say?", None),  # "when" opens a clause, not a question
    ("What day of the month is rent due?", None),
    ("When did I last buy something for Leo?", None),  # the newest of what fits answers (newest)
    ("When was Acme's most recent order?", None),
    ("When did we meet Bob last week?", "day"),  # "last week" is a time scope, not the newest
    ("When is the last day of school?", "day"),
    ("What day is the party?", "day"),
    ("What day trips did we plan?", None),
])
def test_the_shape_asked_for(query: str, shape: str | None) -> None:
    assert asks_for_value(query) == shape
    assert understand(query, now=NOW).value == shape


def _record(content: str) -> MemoryRecord:
    return MemoryRecord(id=content, user_id="u", content=content, kind="message", created_at=NOW, recorded_at=NOW,
                        content_hash=content)


@pytest.mark.parametrize(("shape", "held", "not_held"), [
    ("email", ["Contact alice@acme.io for invoices."], ["Alice handles the invoices.", "Meet at acme HQ.",
                                                        "Use icon@2x.png on retina screens."]),
    ("contact", ["Contact alice@acme.io for invoices.", "Bright Smiles, phone 503-555-0142."],
     ["Alice handles the invoices.", "Use icon@2x.png on retina screens.", "Invoice INV-1187.", "See logo@2x.PNG.",
      "Use photo@1.5x.avif here."]),
    ("link", ["Post to https://hooks.acme.io/v1/orders as JSON.", "See www.example.org/docs."],
     ["The hook posts orders.", "Version 2.3.1 broke it."]),
    ("phone", ["Bright Smiles, phone 503-555-0142.", "Call +44 20 7946 0958.", "Call +33 1 42 68 53 00."],
     ["Booked for 2026-11-02.", "Invoice INV-1187.", "Room 4, 3pm.", "Booked for 2026-11-02 10:30.",
      "Scores: 12 15 18 21.", "The router is 192.168.1.10.", "1200000 downloads."]),
    ("identifier", ["Policy HB-20931.", "RMA 88123-K opened.", "Bib number 4471.", "PO-5531 delivered.", "Ref 2031."],
     ["Back in 2026.", "A 27-inch monitor.", "Dec 22-26 in Porto.", "At 3pm on 2026-11-02.", "Paid $3,380.",
      "It was 100 degrees.", "300 people came.", "See page 345.", "From 1990-2000.", "Since COVID-19.",
      "A 1080p screen with 256GB.", "Windows 11 in the 2000s."]),
    ("money", ["£14,800 + VAT.", "Paid $3,380.", "Around 46k.", "€400 was paid in.", "It came to 220 EUR.",
               "That's 30 quid.", "EUR 400 deposit.", "It cost 1200 SEK.", "Forty bucks.", "I paid 40."],
     ["Oven's free after 1pm Sunday.", "300 people came.", "Back in 2026.", "Room 4.", "Taxi took 30m.",
      "We have 2M users.", "A 1080p screen.", "See you at 2 p.m.", "Bought 2 pounds of flour."]),
    ("amount", ["Let's do 80.", "Theo was 3.4kg.", "I'd give it 6/10.", "Two kids.", "It took 40 minutes.",
                "Image went to 186MB."],
     ["Sat 10 Oct.", "On 12 Nov.", "Oct 12th it is.", "Back in 2019.", "On 2026-11-02.", "I liked it.",
      "Meeting at 7:30.", "Call me at 3pm.", "Party on the 3rd.", "See you 10/12.", "Python 3.11 it is.",
      "Room 101.", "One of them said hi.", "Zone 2 training."]),
    ("time", ["done!!! 24:51 PB", "see u at 7pm", "meet at 9.30am", "28 mins, legs are jelly", "noon?",
              "back by 1h40", "Starts 18:00:00 sharp.", "7 o'clock", "half past 7", "see u at 7", "1h 40m"],
     ["costs 3.50", "ratio 3:1", "v2.30 is out", "Room 101.", "It was 20 degrees.", "on 12/11", "5 min read",
      "posted 10 mins ago", "rates at 3%", "bought them at 3.50 each"]),
    ("day", ["they told me yesterday", "I passed on Friday", "piano moved to Thursdays", "see you on the 11th",
             "the 4th of July", "completion Dec 18", "due 3 May", "on 2026-04-20", "two weeks ago we met",
             "this morning was rough", "last weekend in York", "a couple of weeks ago", "a couple weeks ago",
             "several weeks ago", "on the 20th — there was a queue", "exchange 11th Dec, completion 18th.",
             "İstanbul May 5", "İSTEDİM, İZİN May 5", "on 2026-04-20T10:00"],
     ["I love pizza", "we may 5 times", "march 3 miles", "Python 3.11", "the weekly sync", "one day maybe",
      "many years ago", "hundreds of years ago", "a birthday party", "remember 5 things", "option 1 may be better",
      "step 3 may fail", "a 3rd party library", "my 2nd attempt", "the 99th percentile", "İİİİİ may 5"]),
    ("image", ["nice [photo: a cat on a rug]", "Here it is [image: a horse in a field]", "[pic: the view]",
               "Done [image alt text: a bar chart]", "[file: IMG_2034.jpg]", "[image 1: a dog]", "[Photo]"],
     ["a photo of a cat", "I'll send pics later", "[link: example.org]", "arr[pic:1]", "[file: report.pdf]"]),
])

def test_what_holds_a_value_of_the_shape(shape: str, held: list[str], not_held: list[str]) -> None:
    records = [_record(text) for text in (*held, *not_held)]
    assert holds_asked_value(records, shape).tolist() == [1.0] * len(held) + [0.0] * len(not_held)


@pytest.mark.parametrize("shape", ["email", "link", "phone", "identifier", "contact", "money", "amount", "image",
                                   "time", "day"])
def test_a_long_text_is_read_in_bounded_time(shape: str) -> None:
    texts = ["7" * 200_000, "1- " * 70_000, "ACGT" * 50_000, "a-" * 100_000, "x@" * 100_000,
             "Total: 1" + " " * 5_000 + "x", "Line 1\n" + "\n" * 5_000, "1 Nov " * 1_000,
             "seq: " + "ACGT" * 240 + " sampled ages ago", "İ" * 900 + " May 5 " + "1st " * 2_000]
    started = time.perf_counter()
    holds_asked_value([_record(text) for text in texts], shape)
    assert time.perf_counter() - started < 1.0


def test_reading_a_day_does_not_retry_along_a_long_word() -> None:
    # A pattern that opened on a run of letters before "days ago" retried it from each letter: 4 ms a message.
    records = [_record(f"seq {n}: " + "ACGT" * 240 + " sampled ages ago") for n in range(200)]
    started = time.perf_counter()
    assert holds_asked_value(records, "day").sum() == 0
    assert time.perf_counter() - started < 0.3


def test_a_noun_s_number_is_not_a_keyword() -> None:
    # "number" matched "bib number 4471" for "What's my policy number?"; the policy is the subject.
    assert query_terms("What's my policy number?") == ["polici"]
    assert "number" in query_terms("What is the number of orders?")


def test_the_memory_holding_the_value_comes_first(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add_many([
            {"user_id": "u", "content": "Alice from Acme confirmed the new delivery address."},
            {"user_id": "u", "content": "Receipt for the refund sent to Alice at Acme."},
            {"user_id": "u", "content": "Acme's accounts-payable contact is Alice Moreau, alice@acme.io."},
        ])
        found = memory.retrieve("What's Alice's email?", user_id="u", now=NOW).memories
        assert found[0].content == "Acme's accounts-payable contact is Alice Moreau, alice@acme.io."
        assert found[0].signals["holds_value"] > 0
        assert "holds an e-mail address, as the query asks" in found[0].reasons
        # "Alice" names "Alice Moreau": the memory counts as naming the query's person.
        assert found[0].signals["entity_overlap"] == 1.0
        plain = memory.retrieve("What does Alice do?", user_id="u", now=NOW).memories
        assert all(m.signals.get("holds_value", 0.0) == 0.0 for m in plain)


# (the chat, the memory that answers, the question, its reason, a question on the same topic that asks no such value)
_TOLD_IN_CHAT = [
    pytest.param(
        [("Lena", "the competition registration form is so long omg"),
         ("Marc", "did u register for the comp yet? competitors need a membership number"),
         ("Priya", "registration for competitors is at the front desk on the day")],
        ("Lena", "competitors register from 7:30 at the desk"),
        "What time do competitors need to register?", "holds a time of day or a duration, as the query asks",
        "Where do competitors register?", id="time"),
    # Without the day's gain the new job's offer came first.
    pytest.param(
        [("Felix", "I've been busy getting a job in the games industry, which is very on-theme"),
         ("Felix", "G they offered me the job"),
         ("Greta", "Felix your job sounds awful, are they really letting people go?"),
         ("Felix", "she sat on my laptop during a job call, my manager saw everything")],
        ("Felix", "Paylark. they told me yesterday. 20 minute call with my manager and HR, whole team cut"),
        "When did Felix get told his job was going?", "holds a day or a date, as the query asks",
        "Why did Felix lose his job?", id="day"),
]


@pytest.mark.parametrize(("chat", "told", "query", "reason", "other"), _TOLD_IN_CHAT)
def test_the_message_telling_what_is_asked_comes_first(
    tmp_path: Path, embedder: Embedder, chat: list[tuple[str, str]], told: tuple[str, str], query: str, reason: str,
    other: str,
) -> None:
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add_many([{"user_id": "u", "role": who, "content": text} for who, text in (*chat, told)])
        found = memory.retrieve(query, user_id="u", now=NOW, config=RetrievalConfig(cache_ttl=0)).memories
        assert found[0].content == told[1]
        assert reason in found[0].reasons
        plain = memory.retrieve(other, user_id="u", now=NOW, config=RetrievalConfig(cache_ttl=0)).memories
        assert all(m.signals.get("holds_value", 0.0) == 0.0 for m in plain)


def test_the_memory_holding_the_price_comes_first(tmp_path: Path, embedder: Embedder) -> None:
    offer = "Offering Jess £12.60 an hour, Saturdays 7 till 3."
    with Memory(tmp_path / "m.db", embedder=embedder) as memory:
        memory.add_many([{"user_id": "u", "content": text} for text in (
            "I'll do both days. Could Jess cover Sunday with me?",
            "Interviewed Jess yesterday for the Saturday assistant role. Really good. I'd like to offer.",
            "Jess said yes to the Sunday market shift with Omar.", offer)])
        # Without the amount's gain the Sunday shift came first.
        found = memory.retrieve("How much does Jess get paid?", user_id="u", now=NOW).memories
        assert found[0].content == offer
        assert found[0].signals["holds_value"] > 0
        assert "holds an amount of money, as the query asks" in found[0].reasons
        assert all(m.signals.get("holds_value", 0.0) == 0.0 for m in found[1:])
        # Asked what she does, the price gains nothing.
        plain = memory.retrieve("What does Jess do on Sundays?", user_id="u", now=NOW).memories
        assert all(m.signals.get("holds_value", 0.0) == 0.0 for m in plain)


def test_a_first_name_stands_for_the_one_full_name_among_the_candidates(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", embedder=FakeEmbedder(64)) as memory:
        memory.add("Acme's contact is Alice Moreau.", user_id="u")
        memory.add("Alice Chen runs the warehouse.", user_id="two")
        memory.add("Alice Moreau runs accounts.", user_id="two")
        one = memory.retrieve("What does Alice do?", user_id="u", now=NOW).memories
        assert one[0].signals["entity_overlap"] == 1.0
        # Two Alices: the question's Alice is neither for sure.
        both = memory.retrieve("What does Alice do?", user_id="two", now=NOW).memories
        assert all(m.signals.get("entity_overlap", 0.0) == 0.0 for m in both)
