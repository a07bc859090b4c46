"""How much relevance each form of question lets a memory gain on top of its own, beside the
reasons for each figure: the measurements that set it.

Meaning and keywords find what a query says. These gains find what it asks for in words it cannot
know: the turn next to the one that matches, the memory a top result leads to, whatever was asked,
the user's standing instructions, the last conversation, what says who someone is.
"""

from __future__ import annotations

__all__ = [
    "AHEAD_GAIN", "ANSWER_GAIN",
    "ASK_GAIN", "BRIDGE_GAIN", "BRIDGE_MENTION", "CONTEXT_GAIN", "CONVERSATION_GAIN", "DESCRIBES_GAIN", "LATEST_GAIN",
    "LATEST_WORDS",
    "NEWEST_GAIN", "PASSING", "PAST_CURRENT", "PAST_GAIN", "STANDING_GAIN", "TYPE_GAIN", "VALUE_GAIN", "VOICE_GAIN",
]

#: How much of the best neighbouring turn's relevance a message gains: an answer is found through
#: the question just before it ("What did you research?" / "Adoption agencies."). LoCoMo dev
#: evidence recall@10 +4 points. In a chat with an assistant only a reply gains, and a share of
#: it (engram.retrieve.episodes.REPLY_SHARE).
CONTEXT_GAIN = 0.3
#: ... and a user's answer to the assistant's short question gains this much of the question's
#: relevance, when it is closer to the question in meaning than unrelated texts are (the bottom of
#: the embedder's similarity range; "Shall I remind you on Tuesday?" / "I bought milk." is a turn
#: that ignored it and gains CONTEXT_GAIN): the answer ("Four of us, two adults and two kids.") is
#: what was learnt, the question ("How many people will be travelling?") what matches. With
#: CONTEXT_GAIN the question ranked first in six onboarding exchanges out of six, the answer 2nd-4th;
#: with 0.9 the answer is first in four. The probe sets (tests/quality/probes) recall@5 0.651 ->
#: 0.670, hit@1 0.385 -> 0.408, recall@10 0.813 -> 0.802 (two lists lost a member at 10 to lifted
#: answers); 0.6: 0.657 / 0.391 / 0.812. No dev set moved: none holds such exchanges.
ANSWER_GAIN = 0.9
#: How much of its conversation's support (engram.retrieve.episodes: the relevance the best three
#: turns of a conversation between people lend it, its own left out, over three) a turn gains: the
#: answer to "How does Jon feel about the opening night?" is his reply two turns after the match.
#: LoCoMo dev evidence recall@5/10 0.669/0.774 -> 0.720/0.810 (0.3: 0.801, 0.5: 0.810, 0.6: 0.800
#: at 10); LongMemEval, the instructions and everyday sets unchanged (no such conversation there).
CONVERSATION_GAIN = 0.4
#: How much relevance a question gains when the query asks what was asked ("What did Bob ask last
#: week?"): the answer is whatever Bob asked, in words the query cannot know, so its own meaning
#: and keywords say little. Only the asker's questions gain, when the query names who asked.
ASK_GAIN = 0.5
#: How much relevance a message gains when the query asks for its speaker's words ("What did Priya
#: think of the trial?"): her verdict need not name the trial, while messages about her trial do.
VOICE_GAIN = 0.15
#: How much of a top result's relevance a memory gains by naming an entity that result names and
#: the query does not (the second hop, engram.retrieve.hop).
BRIDGE_GAIN = 0.15
#: The entity overlap of a memory reached by the second hop, when the query names entities: it names
#: them at one remove, as a mention of a speaker counts half (SPEAKER_MENTION). Without it, every
#: memory naming the query's entity (a colleague in 27 of 77 candidates) outranks the answer the
#: first result points to. With hop.COMMON_MIN 10: scenario multihop R@10 0.81 -> 0.94, LoCoMo dev
#: @10/@25 +0.2/+0.4 (multi-hop +1.2), LongMemEval unchanged; flat from 0.3 to 0.5, 1.0 cost
#: LongMemEval -1.2 at 5.
BRIDGE_MENTION = 0.5
#: How much of its own meaning a standing instruction or stated preference gains when the query is a
#: request (engram.retrieve.standing): "Write a CSV reader" must bring back "always use type hints".
STANDING_GAIN = 0.5
#: What the user's standing statements whose closest sentence is closest to a request gain, by their
#: place among the user's (the standing source's order): the first RULE_GAIN, the next RULE_SHARE of
#: that, and so to the RULE_KEEP-th. A long chat's user messages nearly all state something that
#: holds, and their sentences' cosines to a request differ by hundredths, so a share of meaning
#: told them apart less than which is closest: "Redo the start of the antagonist's warehouse chapter"
#: is governed by "Baird's chapters are close third person, past tense", the closest of the user's
#: 14 rules, which ranked nowhere. A blind probe file of long assistant chats R@10 0.655 -> 0.675
#: (its requests 0.53 -> 0.62, dense 0.57), the long technical chats file R@5 0.836 -> 0.856,
#: instructions set R@5 0.500 -> 0.533, scenarios 0.94 -> 0.96; with unrelated turns mixed in R@5
#: 0.785 -> 0.775, probe files' hit@1 0.430 -> 0.413 (a rule now before the answer); 0.4 cost
#: those two more and another probe file R@10 0.845 -> 0.839.
RULE_GAIN = 0.3
RULE_SHARE = 0.5
RULE_KEEP = 3
#: The share of it a passing statement of the user's about themselves gains when the query asks what
#: is known of the user (``QueryPlan.profile``): what holds comes first.
PASSING = 0.5
#: How much relevance a memory gains by naming an entity of a type the query asks about as a whole
#: ("Tell me about my customers"): the answer is whatever is said about each customer, in words
#: the query cannot know (their names), as with ASK_GAIN.
TYPE_GAIN = 0.3
#: How much relevance a memory of the last conversation gains when the query asks about it ("What
#: did we talk about last time?", engram.retrieve.latest): half of it for the one before, a quarter
#: for the one before that.
LATEST_GAIN = 1.0
#: How much relevance a memory that says who someone is gains when the query asks who they are
#: ("Who is Priya?" against "Priya Nair does operations and finance", engram.retrieve.identity):
#: her own chat messages name her as often and share more of the question's words.
DESCRIBES_GAIN = 1.0
#: The share of its own relevance a memory keeps in such a query: the question's words ("talk",
#: "leave off") are in memories by chance.
LATEST_WORDS = 0.5
#: How much relevance a memory gains by being the newest of what fits a question about the newest of
#: something ("When did Acme last order?", engram.retrieve.newest): 0.7 of it for the one before,
#: and so on. Meaning and keywords rank Acme's first order as high as its last.
NEWEST_GAIN = 1.0
#: The share of its own relevance (up to a full match) a memory gains by holding the kind of value
#: the query asks for ("What's Alice's email?" of "alice@acme.io", engram.retrieve.asked_value).
VALUE_GAIN = 0.5
#: The share of its own relevance (up to a full match) a superseded memory gains when the query asks
#: about what held before ("What was my old gym?", engram.retrieve.past): its newer version shares
#: every word of it.
PAST_GAIN = 1.0
#: The share of its relevance the current version of such a fact keeps: what replaced the answer
#: ("Sofia" in "Who was our contact before Sofia?") follows it.
PAST_CURRENT = 0.5
#: How much relevance a memory gains by naming a day inside a time scope that reaches past now ("What
#: do I have next week?" of "Dana's appointment with Dr. Patel is on Dec 1", engram.retrieve.mentioned):
#: the question's words say nothing of the answer, and nothing said in that week is stored yet.
AHEAD_GAIN = 0.5
