"""Sentence splitting: Engram's rules (engram.retrieve.sentences) against pysbd, if installed.

Runs both over hand-written tricky texts with their expected sentences, then times them on those
texts and on long inputs. Accuracy is the share of texts split exactly as expected; a "false
split" is a boundary placed where none belongs, the error that changes meaning when clipping.

    python bench/sentence_split.py [--repeat 20] [--long-kb 200]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from engram.retrieve.sentences import split_sentences

Splitter = Callable[[str], list[str]]

# (text, expected sentences). The last two are real boundaries that the rules choose to miss.
CASES: list[tuple[str, list[str]]] = [
    ("Contact alice@acme.io for access. She replies fast.", ["Contact alice@acme.io for access.", "She replies fast."]),
    ("Email bob.smith@mail.acme.co.uk. He expects you.", ["Email bob.smith@mail.acme.co.uk.", "He expects you."]),
    (
        "The webhook is https://hooks.acme.io/x. It fires hourly.",
        ["The webhook is https://hooks.acme.io/x.", "It fires hourly."],
    ),
    (
        "Visit www.acme.io/docs?page=2 for details. Then sign up.",
        ["Visit www.acme.io/docs?page=2 for details.", "Then sign up."],
    ),
    (
        "Check acme.io and docs.acme.io before asking. Thanks.",
        ["Check acme.io and docs.acme.io before asking.", "Thanks."],
    ),
    ("We upgraded to version 2.3.1 today. Nothing broke.", ["We upgraded to version 2.3.1 today.", "Nothing broke."]),
    ("Use v1.2 or later. Older builds crash.", ["Use v1.2 or later.", "Older builds crash."]),
    ("Version 10.2.1-beta was tagged. QA starts Monday.", ["Version 10.2.1-beta was tagged.", "QA starts Monday."]),
    (
        "Dr. Smith from Acme Inc. approved the $18.50 refund. The customer was happy.",
        ["Dr. Smith from Acme Inc. approved the $18.50 refund.", "The customer was happy."],
    ),
    ("Inflation hit 3.5% in March. Rates rose.", ["Inflation hit 3.5% in March.", "Rates rose."]),
    ("The ratio was 3.14159 exactly. Good.", ["The ratio was 3.14159 exactly.", "Good."]),
    (
        "Paid $1,299.99 on 2024.01.05 for the license. Renewal is yearly.",
        ["Paid $1,299.99 on 2024.01.05 for the license.", "Renewal is yearly."],
    ),
    (
        "The server lives at 10.0.0.1 on the LAN. Ping it first.",
        ["The server lives at 10.0.0.1 on the LAN.", "Ping it first."],
    ),
    ("The file is report.final.pdf on the drive. Open it.", ["The file is report.final.pdf on the drive.", "Open it."]),
    ("Well... I guess that works. Let's try.", ["Well... I guess that works.", "Let's try."]),
    ("The meeting was… odd. We left early.", ["The meeting was… odd.", "We left early."]),
    ("J. R. R. Tolkien wrote it. He was British.", ["J. R. R. Tolkien wrote it.", "He was British."]),
    ("Mr. and Mrs. Lee moved to St. Louis. They love it.", ["Mr. and Mrs. Lee moved to St. Louis.", "They love it."]),
    ("Prof. Chen vs. Dr. Ortiz was close. Chen won.", ["Prof. Chen vs. Dr. Ortiz was close.", "Chen won."]),
    (
        "Ms. Park joined Globex Corp. last year. She leads QA.",
        ["Ms. Park joined Globex Corp. last year.", "She leads QA."],
    ),
    ("Ask Acme Co. about the refund. They owe us.", ["Ask Acme Co. about the refund.", "They owe us."]),
    ("Send it to Tom Reed Jr. at the office. He signs.", ["Send it to Tom Reed Jr. at the office.", "He signs."]),
    ("Meet me at 9 a.m. on Monday. Bring coffee.", ["Meet me at 9 a.m. on Monday.", "Bring coffee."]),
    ("She moved to the U.S. in 2019 for work.", ["She moved to the U.S. in 2019 for work."]),
    ("Use a flag, e.g. Verbose, for output. It helps.", ["Use a flag, e.g. Verbose, for output.", "It helps."]),
    ("I prefer tea, i.e. green tea. Coffee is fine too.", ["I prefer tea, i.e. green tea.", "Coffee is fine too."]),
    ("See Fig. 3 for the plot. It shows the trend.", ["See Fig. 3 for the plot.", "It shows the trend."]),
    ("Item No. 42 is out of stock. Order another.", ["Item No. 42 is out of stock.", "Order another."]),
    ("It costs approx. 40 dollars. Cheap!", ["It costs approx. 40 dollars.", "Cheap!"]),
    ("The launch moved to Jan. 15 next year. Plan ahead.", ["The launch moved to Jan. 15 next year.", "Plan ahead."]),
    ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
    ('"Is it ready?" she asked. It was.', ['"Is it ready?" she asked.', "It was."]),
    ("(See the appendix.) Results follow.", ["(See the appendix.)", "Results follow."]),
    ("Really?! That is great. Thanks!", ["Really?!", "That is great.", "Thanks!"]),
    ("你好。我很好！你呢？", ["你好。", "我很好！", "你呢？"]),
    ("会议在下午三点。请准时到达。", ["会议在下午三点。", "请准时到达。"]),
    ("Привет. Как дела?", ["Привет.", "Как дела?"]),
    ("Shopping list:\n- eggs\n- milk\n- bread", ["Shopping list:", "- eggs", "- milk", "- bread"]),
    ("First paragraph here\n\nSecond paragraph here", ["First paragraph here", "Second paragraph here"]),
    ("Steps:\n1. Install the tool.\n2. Run it.", ["Steps:", "1. Install the tool.", "2. Run it."]),
    ("Call me. I am home", ["Call me.", "I am home"]),
    ("no punctuation here at all", ["no punctuation here at all"]),
    ("One. Two! Three? Four.", ["One.", "Two!", "Three?", "Four."]),
    # Genuine boundaries after an abbreviation: the rules keep these joined rather than risk a cut.
    ("It was 5 p.m. The shop had closed.", ["It was 5 p.m.", "The shop had closed."]),
    ("We bought pens, paper, etc. Then we went home.", ["We bought pens, paper, etc.", "Then we went home."]),
]

PROSE = (
    "Dr. Smith from Acme Inc. approved the $18.50 refund on Jan. 5 at 9 a.m. and e-mailed alice@acme.io. "
    "The webhook at https://hooks.acme.io/x fired twice. Version 2.3.1 fixed it! Was it the cache? "
    "Nobody knows... Maybe. "
)


def boundaries(text: str, sentences: list[str]) -> set[int]:
    """End offsets of all but the last sentence, located in ``text`` in order."""
    ends: set[int] = set()
    pos = 0
    for sentence in sentences[:-1]:
        found = text.find(sentence.strip(), pos)
        if found < 0:
            continue  # the splitter rewrote the text; the boundary cannot be placed
        pos = found + len(sentence.strip())
        ends.add(pos)
    return ends


def is_prefix_safe(text: str, sentences: list[str]) -> bool:
    """Whether every sentence is a verbatim slice of ``text``, in order."""
    pos = 0
    for sentence in sentences:
        found = text.find(sentence.strip(), pos)
        if found < 0:
            return False
        pos = found + len(sentence.strip())
    return True


def accuracy(name: str, split: Splitter) -> dict[str, float]:
    exact = false_splits = missed = unsafe = 0
    for text, expected in CASES:
        got = [s.strip() for s in split(text) if s.strip()]
        if got == expected:
            exact += 1
        else:
            print(f"  {name} differs on {text!r}: {got!r}")
        want, have = boundaries(text, expected), boundaries(text, got)
        false_splits += len(have - want)
        missed += len(want - have)
        unsafe += not is_prefix_safe(text, got)
    return {"exact": exact / len(CASES), "false": false_splits, "missed": missed, "unsafe": unsafe}


def per_call_us(split: Splitter, texts: list[str], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        for text in texts:
            split(text)
    return (time.perf_counter() - start) / (repeat * len(texts)) * 1e6


def long_inputs(kb: int) -> dict[str, str]:
    size = kb * 1024
    return {
        "prose": (PROSE * (size // len(PROSE) + 1))[:size],
        "dots": ("." * 997 + " a ") * (size // 1000),
        "mixed punctuation": ("a.!?. " * (size // 6)),
        "no terminator": "word " * (size // 5),
    }


def pysbd_splitter() -> Splitter | None:
    try:
        import pysbd  # type: ignore[import-not-found]
    except ImportError:
        return None
    segmenter = pysbd.Segmenter(language="en", clean=False)

    def split(text: str) -> list[str]:
        return [str(s) for s in segmenter.segment(text)]

    return split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20, help="passes over the tricky texts for timing")
    parser.add_argument("--long-kb", type=int, default=200, help="size of each long input for the rules")
    parser.add_argument("--pysbd-long-kb", type=int, default=20, help="size of each long input for pysbd (slower)")
    args = parser.parse_args()

    splitters: dict[str, tuple[Splitter, int]] = {"rules": (split_sentences, args.long_kb)}
    pysbd_split = pysbd_splitter()
    if pysbd_split is None:
        print("pysbd is not installed; measuring the rules only (pip install pysbd to compare)\n")
    else:
        splitters["pysbd"] = (pysbd_split, args.pysbd_long_kb)

    texts = [text for text, _ in CASES]
    rows: list[str] = []
    for name, (split, kb) in splitters.items():
        acc = accuracy(name, split)
        us = per_call_us(split, texts, args.repeat)
        longs = []
        for label, text in long_inputs(kb).items():
            start = time.perf_counter()
            split(text)
            longs.append(f"{label} {(time.perf_counter() - start) * 1e3:.0f} ms")
        rows.append(
            f"{name:6} exact {acc['exact']:6.1%} ({len(CASES)} texts)  false splits {acc['false']:3.0f}  "
            f"missed {acc['missed']:3.0f}  rewritten {acc['unsafe']:2.0f}  {us:8.1f} µs/text  "
            f"{kb} KB: " + ", ".join(longs)
        )
    print()
    print("\n".join(rows))


if __name__ == "__main__":
    main()
