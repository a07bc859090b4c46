"""Questions that ask for a value of a shape a memory can be seen to hold ("What's Alice's email?",
"What's the webhook URL for Acme?", "What's Dr. Patel's phone number?", "What's my policy
number?"): the memory that answers holds an e-mail address, a link, a phone number or an
identifier, and seldom the question's word for it ("alice@acme.io", not "email"; "posted to
https://hooks.acme.io/v1/orders", not "webhook URL"), while other memories about the same person
or thing share the question's words. Such a memory gains in proportion to its own relevance
(:func:`holds_asked_value`), so a value in a memory about something else does not lift it.

Only a question that asks for the value counts: the shape's word is the thing asked for ("What's
Alice's email?", "Give me the link to the docs"), not a word of another question ("How many emails
did I get?", "Did Bob phone?", "Which cell line did we use?", "What's the dress code?").

Questions that ask how much or how many ask for money or a number the same way
(engram.retrieve.amounts).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.model import MemoryRecord
from engram.retrieve.amounts import asks_for_amount, holds_amount
from engram.retrieve.latest import SHORT_QUESTION
from engram.retrieve.newest import asks_for_the_newest
from engram.timeparts import WEEKDAY_NAMES

__all__ = ["VALUE_NAMES", "asks_for_value", "holds_asked_value"]

_I = re.IGNORECASE
# How a question asks for a thing: "What's ...", "Give me ...", "Do you have ...", "Remind me of ...".
_OPENING = r"^\W*(?:(?:so|and|ok|okay|hey|hi|please)\W+)*"  # "Okay, ...", "Hi, please ..."
_ASKING = re.compile(
    _OPENING + r"(?:what(?:['’]s|\s+is|\s+was|\s+are|\s+were)|which\s+is"
    r"|(?:can|could)\s+you\s+(?:give|send|tell|find|share)\s+me|give\s+me|send\s+me|tell\s+me|share|find"
    r"|get\s+me|do\s+(?:you|we|i)\s+have|i\s+need|where(?:['’]s|\s+is)|remind\s+me\s+of|look\s+up)\b", _I)
# The shape's word must be what is asked for: the head of its phrase, at the end or before "for", "of"...
_HEAD = r"(?=\s*(?:[?.!,]|$|\b(?:for|of|to|at|on|with|in|again|please|from)\b))"
# "What number should I call for Acme?", "Which number do I ring?"
_WHICH_NUMBER = re.compile(r"^\W*(?:what|which)\s+(?:phone\s+)?number\s+(?:should|do|can|could|shall)\s+(?:i|we)"
                           r"\s+(?:call|ring|text|dial)\b", _I)
#: What the question calls each shape, tried in order.
_ASKED: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("contact", re.compile(r"\bcontact\s+(?:details|info(?:rmation)?)" + _HEAD, _I)),
    ("email", re.compile(r"\be-?mail(?:\s+address)?" + _HEAD, _I)),
    ("link", re.compile(r"\b(?:url|link|website|web\s*site|web\s+address|webhook|endpoint|homepage)" + _HEAD, _I)),
    ("phone", re.compile(r"\b(?:(?:phone|telephone|mobile|cell)(?:\s+number)?|contact\s+number|[\w-]+['’]s\s+number"
                         r"|(?<=the\s)number(?=\s+for\b))" + _HEAD, _I)),
    # "policy number", "PO number", "order ID", "tracking code"; not "the number of monitors" (a
    # count), nor a code that is a rule ("dress code") or a program ("source code").
    ("identifier", re.compile(
        r"\b(?!the\b|a\b|my\b|our\b|your\b|their\b|total\b|any\b)[\w-]+\s+(?:number|id|reference)" + _HEAD
        + r"|\b(?:zip|postal|post|area|promo|discount|access|door|gate|confirmation|booking|tracking"
        r"|verification|coupon|voucher|product|error|reference|order)\s+code" + _HEAD, _I)),
)
#: How an explanation names each shape.
VALUE_NAMES = {"email": "an e-mail address", "link": "a link", "phone": "a phone number",
               "identifier": "a number or code", "contact": "an e-mail address or a phone number",
               "money": "an amount of money", "amount": "a number", "image": "an image",
               "time": "a time of day or a duration", "day": "a day or a date"}

#: How much of a memory's text is searched for a value: a pasted file is not scanned whole.
_READ = 4_000
# Not a file name with a scale in it ("icon@2x.png", "logo@1.5x.PNG") or an image's extension.
_EMAIL = re.compile(
    r"(?<![\w.+-])[\w.+-]{1,64}@(?!\d+(?:\.\d+)?x\.)[\w-]+(?:\.[\w-]+)*"
    r"\.(?!(?i:png|jpe?g|gif|svgz?|webp|avif|heic|ico|bmp|tiff?|pdf)\b)[A-Za-z]{2,}\b")
_LINK = re.compile(r"\bhttps?://\S+|\bwww\.[\w-]+\.\S+|(?<![\w@.-])[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}/[\w/.?=&%-]+")
# Digits in groups, starting at a word's start: "503-555-0142", "(503) 555 0142", "+44 20 7946 0958".
_PHONE = re.compile(r"(?<![\w.:/-])(?:\+|\()?\d[\d ().-]{5,18}\d(?![\w:/-])")
_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}")
# A token of letters and digits ("PO-5531", "HB-20931", "88123-K", "INV-1187"), starting at a word's start.
_CODE = re.compile(r"(?<![\w-])[A-Za-z0-9]{1,20}(?:-[A-Za-z0-9]{1,20}){0,4}(?![\w-])")
# A run of digits counts only after a word that names an identifier ("bib number 4471", "Ref 2031").
_NAMED_NUMBER = re.compile(
    r"\b(?:number|no\.?|#|id|ref(?:erence)?|code|policy|order|invoice|ticket|account|booking|confirmation"
    r"|tracking|case|pin|po|rma|bib|member(?:ship)?|customer)\b[^\w\n]{0,3}(?:is\s+|was\s+|arrived\s*:?\s*)?"
    r"#?\d{3,}\b", _I)
_UNIT_TAIL = re.compile(r"\d(?:[a-z]{1,3}|th|st|nd|rd)$")  # "1080p", "256gb", "2000s", "21st"


def asks_for_value(query: str) -> str | None:
    """The shape of value ``query`` asks for ("email", "link", "phone", "identifier", "contact": either
    of the first and third, "money", "amount": a number, "image": a picture shown, "time": a time of
    day or a duration, "day": a day or a date), or None."""
    if len(query) > SHORT_QUESTION:
        return None
    amount = asks_for_amount(query)
    if amount is not None:
        return amount
    if _WHICH_NUMBER.search(query):
        return "phone"
    if _ASKING.search(query) is not None:
        for shape, asked in _ASKED:
            if asked.search(query):
                return shape
    if _PICTURE.search(query):
        return "image"
    if _WHAT_TIME.search(query):
        return "time"
    return "day" if _WHEN.search(query) and asks_for_the_newest(query) is None else None


# "What time is the meeting?", "By what time ...", "Remind me what time ...", "What's the pickup time?",
# "What were their finishing times?", "What was Greta's time?"; not "What time of year / zone /
# frame ...", "What timeline ...", "What times table ...", and "How much time ...?" asks an amount.
_WHAT_TIME = re.compile(
    _OPENING + r"(?:(?:do\s+you\s+know|(?:can|could)\s+you\s+tell\s+me|tell\s+me"
    r"|remind\s+me)\s+)?(?:(?:at|by|until|till|from)\s+)?what\s+time\b(?![-\s]*(?:of|zones?|frames?|periods?|slots?"
    r"|tables?|lines?|signatures?|machines?|complexity)\b)"
    r"|\bwhat(?:['’]s|\s+is|\s+was|\s+are|\s+were)\s+the\s+(?:start(?:ing)?|kick-?off|departure|pick-?up|check-?in"
    r"|check-?out|arrival|finish(?:ing)?|closing|opening|meeting|booking|reservation|appointment)\s+times?\b"
    r"|\b(?:finish(?:ing)?|race|run|running|lap|marathon|5k|10k)\s+times?(?=\s*(?:[?.!,]|$|\b(?:in|at|for|of|on)\b))"
    r"|^\W*what\s+(?:was|were|is|are)\s+(?:\w+['’]s|their|his|her|my|our|your)\s+(?:best\s+)?times?\s*\??\s*$", _I)
# A time of day or a duration: "9:30", "7pm", "7.30pm", "noon", "7 o'clock", "half past 7", "at 7",
# "24:51", "28 mins", "1h40"; not "5 min read" or "10 mins ago", which tell no time asked for.
_CLOCK = re.compile(
    r"(?<![\d:.])\d{1,2}:\d{2}(?::\d{2})?(?![\d:])|\b\d{1,2}(?:[.:]\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?!\w)"
    r"|\b(?:noon|midday|midnight)\b|\b\d{1,2}\s*o['’]?clock\b|\b(?:half|quarter)\s+(?:past|to)\s+\d{1,2}\b"
    r"|\b(?:at|by|until|till)\s+\d{1,2}(?:ish)?\b(?![.,:/]?\d)(?!\s*(?:%|(?:percent|st|nd|rd|th)\b))"
    r"|\b\d+(?:\.\d+)?\s*(?:mins?|minutes|hrs?|hours|secs?|seconds)\b(?!\s+(?:ago|read)\b)"
    r"|\b\d{1,2}h\s?\d{2}m?\b", _I)


# "When did Felix get told ...?", "So when is the move?", "On which day did ...", "What date was ...", "What
# day is it on?"; not "What day of the month ...", "What day trips ...", nor the newest of something
# ("When did I last ...?", engram.retrieve.newest).
_AUXILIARY = r"(?:did|does|do|is|was|were|will|are|has|have|had|should|can|could|would|shall)\b"
_WHEN = re.compile(
    _OPENING + r"(?:when\s+" + _AUXILIARY + r"|when['’]s\b"
    r"|(?:on\s+)?(?:what|which)\s+(?:date|day)(?:\s+" + _AUXILIARY + r"|\s*\?))", _I)
# A day or date a message tells, read in its first DAY_READ characters, lowercased: "yesterday", "on
# Friday", "Tuesdays", "last weekend", "three days ago", "the 11th", "Dec 1", "1 December",
# "2026-04-20", "this morning". Words are found with ``str.find`` and each pattern starts with one
# character class, not a word boundary or a case-blind flag: the regular expression engine then skips
# ahead to where a match can start (80 long technical messages: ~2 ms against 12). No pattern repeats
# before what it must find: a long run of letters before "ago" cost a match attempt at each letter.
DAY_READ = 1_000
_DAY_NAMES = ("yesterday", "today", "tonight", "tomorrow", *WEEKDAY_NAMES)
_THIS_OR_THAT = re.compile(r"(?:last|this|next)\s+(?:night|morning|afternoon|evening|week(?:end)?|month|year)\b")
_AGO = re.compile(r"(?:days?|weeks?|months?|years?)\s+ago\b")
# The word before "days ago" that counts them ("a couple (of) weeks ago", "three days ago"; not "many years ago").
_AGO_COUNTS = frozenset(("a", "an", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                         "eleven", "twelve", "few", "couple", "several"))
_MONTHS = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
           r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
# "the 11th" (of a month: alone, or before "of", "at", "and", ..., not "the 3rd party", "the 99th
# percentile"), "1 December", "2026-04-20"
_AFTER_A_DAY = r"(?:of|at|and|or|to|till|until|through|from|for|in|is|was|when|then|but|so|i|we)\b"
_DATED = re.compile(r"[0-9](?:[0-9]?(?:(?:st|nd|rd|th)\b(?!\s+(?!" + _AFTER_A_DAY + r")[a-z])|\s+" + _MONTHS
                    + r"\b)|[0-9]{3}-[0-9]{2}-[0-9]{2}(?![0-9-]))")
_MONTH_DAY = re.compile(_MONTHS + r"\.?\s+[0-9]{1,2}\b(?![:0-9])")  # "dec 1", "december 12"
# "May 5", "5 March": those two months count only capitalised ("we may 5 times", "step 3 may fail",
# "march 3 miles"); read in the text as written.
_CAPITAL_MONTH = re.compile(r"\b(?:May|Mar|March)\.?\s+[0-9]{1,2}\b(?![:0-9])|\b[0-9]{1,2}\s+(?:May|Mar|March)\b")


def _tells_a_day(text: str) -> bool:
    low = text[:DAY_READ].lower()
    for name in _DAY_NAMES:
        at = low.find(name)
        while at >= 0:
            end = at + len(name) + (low.startswith("s", at + len(name)) and name.endswith("day"))  # "Tuesdays"
            if _starts_word(low, at) and (end == len(low) or not low[end].isalnum()):
                return True
            at = low.find(name, at + 1)
    if any(_starts_word(low, m.start()) for m in _THIS_OR_THAT.finditer(low)):
        return True
    if "ago" in low and any(_counted(low[max(0, m.start() - 24):m.start()].split()) for m in _AGO.finditer(low)):
        return True
    months = [m for m in (*_DATED.finditer(low), *_MONTH_DAY.finditer(low)) if _starts_word(low, m.start())]
    if any(not any(month in m.group() for month in ("may", "mar")) for m in months):
        return True
    return bool(months) and _CAPITAL_MONTH.search(text[:DAY_READ]) is not None


def _counted(before: list[str]) -> bool:
    """Whether the words ``before`` "days ago" count them: a number, "a", "three", "a couple of"."""
    word = before[-1] if before else ""
    if word == "of" and len(before) > 1:
        word = before[-2]
    return word.isdigit() or word in _AGO_COUNTS


def _starts_word(low: str, at: int) -> bool:
    return at == 0 or not low[at - 1].isalnum()


def holds_asked_value(records: Sequence[MemoryRecord], shape: str) -> npt.NDArray[np.float64]:
    """Per record, 1 if its text (its first 4,000 characters; DAY_READ for a day) holds a value of
    ``shape``, else 0."""
    return np.fromiter((_holds(record.content[:_READ], shape) for record in records), dtype=np.float64,
                       count=len(records))


# A question about a picture ("What was Dad doing in the picture Mum took?", "Who is in the photo?"),
# and a memory that shows one: an attachment's text as stored (engram.attachments: "[image: ...]")
# or as a chat writes it ("[photo: lena on the podium ...]").
_PICTURE = re.compile(
    r"\b(?:photos?|pics?|selfies?|screenshots?|pictures"
    r"|(?<!\byou )(?<!\bto )(?<!\bi )(?<!\bbig )picture"  # not "can you picture that?", "the big picture"
    r"|(?<!\bdocker )(?<!\bbase )(?<!\bcontainer )(?<!\bvm )(?<!\bdisk )(?<!\bos )(?<!\bsystem )(?<!\bbrand )"
    r"(?<!\bmachine )(?<!\bboot )(?<!\biso )(?<!\bpublic )images?)\b", _I)
# "[image: ...]" (engram.attachments), "[photo: ...]", "[image 1: ...]", "[Photo]", a picture's file
# ("[file: IMG_2034.jpg]"); not a slice in code ("arr[pic:1]").
_SHOWN = re.compile(
    r"(?<![\w\])])\[(?:(?:images?|photos?|pictures?|pics?|img|screenshots?|image alt text)(?:\s*\d+)?\s*[:\]](?!\d)"
    r"|file:\s*[^\]\n]*\.(?:jpe?g|png|gif|heic|heif|webp|avif|bmp|tiff?)\])", _I)


def _holds(text: str, shape: str) -> bool:
    if shape == "image":
        return _SHOWN.search(text) is not None
    if shape == "time":
        return _CLOCK.search(text) is not None
    if shape == "day":
        return _tells_a_day(text)
    if shape == "email":
        return _EMAIL.search(text) is not None
    if shape == "link":
        return _LINK.search(text) is not None
    if shape == "phone":
        return any(_is_phone(m.group()) for m in _PHONE.finditer(text))
    if shape in ("money", "amount"):
        return holds_amount(text, shape)
    if shape == "contact":
        return _holds(text, "email") or _holds(text, "phone")
    if shape == "identifier":
        return any(_is_code(m.group()) for m in _CODE.finditer(text)) or _NAMED_NUMBER.search(text) is not None
    return False


def _is_phone(found: str) -> bool:
    """Seven to fifteen digits in groups, one of at least three (or an international "+"), not a
    date, a time or an address on a network."""
    digits = sum(c.isdigit() for c in found)
    groups = re.findall(r"\d+", found)
    if not 7 <= digits <= 15 or len(groups) < 2 or _DATE.search(found) or found.count(".") > 1:
        return False
    return found.startswith("+") or max(len(g) for g in groups) >= 3


def _is_code(token: str) -> bool:
    """A code of capitals and digits ("PO-5531", "88123-K"), not a quantity with its unit ("1080p",
    "256GB", "2000s"), a year range or a name with a number ("COVID-19")."""
    digits = sum(c.isdigit() for c in token)
    letters = [c for c in token if c.isalpha()]
    if digits < 3 or not letters or (_UNIT_TAIL.search(token.lower()) and not any(c.isupper() for c in token)):
        return False
    if any(c.isupper() for c in letters) and digits >= 3:
        return not re.fullmatch(r"[A-Za-z]+-\d{1,2}", token) and not re.fullmatch(r"\d+[A-Z]{1,3}", token)
    return "-" in token
