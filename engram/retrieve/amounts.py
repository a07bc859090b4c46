"""Questions that ask how much or how many ("How much did the oven cost?", "What hourly wage did we
offer Jess?", "How many buns do we bake on Saturdays?", "How much did Theo weigh at birth?"): the
memory that answers holds the amount ("£14,800", "£12.60 an hour", "Let's do 80", "3.4kg"), while
others about the oven or Jess share the question's words without it ("Oven's free after 1pm
Sunday"). Such a question asks for money when it names a price, a payment or a sum it asks the
amount of, and for a number otherwise.

Not an amount: advice ("How much should I put aside each month?"); a span between two moments
("How many days before the race is the operation?", "How long ago did I start?"), read from when
things happened; a count of events ("How many times did I go to the gym?"), whose answers tell of
each time without a number; a price word that is not what is asked for ("What's the refund
policy?", "What was Maya's budget app called?", "Which bill was disputed?").

What holds money: a currency sign or code beside digits ("$21.60", "EUR 400", "1200 SEK"), a number
of dollars, euros, quid... ("forty bucks", "30 quid"; not "pounds", a weight as often), thousands ("46k"), or a number
after a word of paying ("paid 40", "came to 12.99"). What holds a number: digits or a number word
from two up that are not a year, a date, a time of day, an ordinal or a version ("80", "3.4kg",
"6/10", "twelve"; not "2026", "12 Nov", "10/12", "7:30", "3pm", "the 3rd", "Python 3.11").
"""

from __future__ import annotations

import re

from engram.timeparts import MONTH_WORDS

__all__ = ["asks_for_amount", "holds_amount"]

_I = re.IGNORECASE

# "How much/many/long/old/far/big ...", "What size/weight/score ...", "the number of ...".
_HOW_MUCH = re.compile(
    r"\bhow\s+(?:much|many|long|old|far|big|large|heavy|tall|high|fast|expensive|cheap)\b"
    r"|^\W*(?:what|which)\b[^?]{0,40}?\b(?:size|weight|height|length|distance|score|rating|speed|dose|dosage"
    r"|temperature|percentage|count|amount|quantity|capacity|number\s+of)\b", _I)
# A count of events or a frequency: the answers tell of each time, not of a number.
_HOW_OFTEN = re.compile(r"\bhow\s+many\s+(?:\w+\s+)?times\b", _I)
# "How many days before the race is the operation?", "How long ago did I start?", "How much time
# passed between ...": a span between two moments, read from when things happened, not a number said.
_SPAN = re.compile(
    r"\bhow\s+(?:many|much)\s+(?:\w+\s+)?(?:days?|weeks?|months?|years?|hours?|minutes?|time)\b"
    r"(?!\s+(?:a|per|each|every|off)\b)(?=[^?]{0,80}\b(?:before|after|between|since|until|till|ago|passed"
    r"|elapsed|apart|earlier|later|away|from|when)\b)"
    r"|\bhow\s+long\s+(?:ago|before|after|between|since|until|till)\b", _I)
# "How much should I put aside for retirement?", "How many sets would you recommend?": advice asked
# for, which a standing instruction or preference shapes, not an amount said before.
_ADVICE = re.compile(r"\b(?:should|shall|ought\s+to|(?:would|do)\s+you\s+(?:recommend|suggest|advise|think))\b", _I)
# "How much" with a verb or noun of money: "How much did the oven cost?", "How much more rent is
# Dev paying?", "How much did we refund Vinkel?". Only after "how much": "How many tickets did we
# buy?" asks for a count, which a price would not answer.
_MONEY_VERB = re.compile(
    r"\bhow\s+much\b(?!\s+(?:time|effort|energy|attention|longer|more\s+time)\b)(?=[^?]{0,80}\b(?:cost(?:s|ing)?|pa(?:y|id|ying|ys)|spen[dt]|spending|charge[ds]?|owe[ds]?"
    r"|owing|price[ds]?|worth|earn(?:s|ed|ing)?|salary|wages?|income|rent|fees?|bills?|budget|refund(?:s|ed)?"
    r"|deposit|fare|tip(?:ped)?|donat(?:e|ed|ion)|money|compensation|invoiced?|afford|lent|lend|loan"
    r"|borrow(?:ed)?|sell|sold|buy|bought|quote[ds]?|discount|expensive|cheap)\b)", _I)
# "What's the final budget?", "What was the bill for the MOT?", "What hourly wage did we offer Jess?":
# the money word heads what is asked for (not "the refund policy", "Maya's budget app"; "Which bill
# was disputed?" asks which one).
_WHAT_SUM = re.compile(
    r"^\W*what(?:['’]s|\s+is|\s+was|\s+are|\s+were)?\s+(?:(?:the|my|our|your|his|her|their|this|that"
    r"|[\w-]+['’]s)\s+)?(?:[\w-]+\s+){0,2}?(?:prices?|costs?|fees?|rent|bills?|budget|salary|wages?|fares?"
    r"|deposit|refund|balance|total|rates?)"
    r"(?=\s*(?:[?.!,]|$|\b(?:for|of|on|to|at|with|in|from|after|before|per|now|again|please|did|do|does|is|was"
    r"|will|would|we|they|he|she|i|you|this|last|next)\b))"
    # "What did the oven cost?", "What do we charge for a loaf?", "What did dinner come to?"
    r"|^\W*what\s+(?:did|does|do|will|would|should)\s+[^?]{1,40}?\b(?:cost|charge|pay|quote|come\s+to|sell\s+for"
    r"|go\s+for)\b(?=\s*(?:[?.!,]|$|\b(?:for|to|on|in|at|us|me|them|him|her|you|each|per|a|an|the)\b))", _I)

_CURRENCY = r"[$£€¥₹]"
_ISO = r"(?:usd|eur|gbp|chf|cad|aud|nzd|sek|nok|dkk|pln|czk|huf|jpy|cny|inr|brl|mxn|zar|sgd|hkd)"
_CODE = rf"(?:{_ISO}|dollars?|bucks|quid|euros?|yen|rupees?|francs?|pence|cents?|grand)"
_WORD_NUMBER = (r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty"
                r"|fifty|sixty|seventy|eighty|ninety|hundred|thousand)")
_MONEY = re.compile(
    rf"{_CURRENCY}\s?\d"
    rf"|\b(?:{_ISO}|rs\.?)\s?\d"  # "EUR 400", "Rs 500"
    rf"|(?<![\w,.])\d(?:[\d,.]*\d)?\s?(?:{_CURRENCY}|k\b|bn\b|{_CODE}\b)"  # "400€", "46k", "1200 SEK"
    rf"|\b{_WORD_NUMBER}(?:[\s-]\w+)?\s+(?:dollars?|bucks|quid|euros?|pounds|grand)\b"  # "forty bucks"
    r"|\b(?:paid|pay|pays|paying|cost|costs|costing|charged?|charges|priced\s+at|came\s+to|comes\s+to"
    r"|total(?:led)?(?:\s+of)?|worth)\s*:?\s*\d", _I)

# A number in digits ("80", "3.4", "6/10", "1,200") or words ("twelve"), each read on its own.
_NUMBER = re.compile(rf"(?<![\w/:.,-])\d+(?:[.,/:]\d+)*|\b{_WORD_NUMBER}\b|\bdozens?\b", _I)
_MONTH = r"(?:" + MONTH_WORDS + r")\b"
# Just after the number: a month ("12 Nov", "3rd of May"), a time of day ("3pm", "7 a.m."), an
# ordinal ("the 3rd"). Bounded runs of blanks: a long run is not read again at every split.
_AFTER = re.compile(rf"(?:st|nd|rd|th)\b|\s{{0,3}}(?:of\s{{1,3}})?{_MONTH}|\s{{0,3}}(?:[ap]\.?m\.?)(?!\w)", _I)
# Just before the number: a month ("Nov 12"), a version ("Python 3.11", "v2"), a name of a day.
_BEFORE = re.compile(rf"(?:\b{_MONTH}\.?|\b(?:version|python|node|java|ios|android|windows|room|rm|zone|level"
                     r"|step|chapter|page|line|no\.?|number)\b|#)\s{0,3}$", _I)


def asks_for_amount(query: str) -> str | None:
    """"money" or "amount" when ``query`` asks how much or how many (see above), else None."""
    if _HOW_OFTEN.search(query) or _SPAN.search(query) or _ADVICE.search(query):
        return None
    if _MONEY_VERB.search(query) or _WHAT_SUM.search(query):
        return "money"
    return "amount" if _HOW_MUCH.search(query) else None


def holds_amount(text: str, shape: str) -> bool:
    """Whether ``text`` holds money (``shape`` "money") or a number that is no date, time, ordinal or
    version ("amount")."""
    if shape == "money":
        return _MONEY.search(text) is not None
    return any(_is_amount(text, found) for found in _NUMBER.finditer(text))


def _is_amount(text: str, found: re.Match[str]) -> bool:
    number = found.group()
    if not number[0].isdigit():
        return True
    if len(number) == 4 and number[:2] in ("19", "20"):  # a year
        return False
    if ":" in number or number.count(".") > 1:  # "7:30", "3.11.2"
        return False
    if "/" in number:  # "6/10" is a score, "10/12" a date
        top, _, bottom = number.partition("/")
        return bottom in ("5", "10", "20", "100") or not (top.isdigit() and bottom.isdigit())
    if _AFTER.match(text, found.end()):
        return False
    return _BEFORE.search(text, max(0, found.start() - 12), found.start()) is None
