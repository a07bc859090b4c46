# ruff: noqa: E501  (a data file: one memory a line reads better than wrapped strings)
"""A realistic agent memory and everyday questions over it, labelled by stable memory keys.

Three accounts, three months before ``NOW`` (Monday 23 November 2026, noon UTC):

- ``kestrel``: the assistant of Kestrel Office Tech, a six-person office-IT reseller in Portland.
  The team chat (speakers Maya, Bob, Priya, Tom, Lena: ``role`` is the speaker's name), the owner's
  direct chats with the assistant (``user``/``assistant``), facts the assistant keeps (some
  superseded by newer ones), episodes (orders, meetings, incidents), procedures and summaries.
- ``dana``: a personal assistant for Dana Whitfield: chats with her (``user``/``assistant``), a
  family group chat (Dana, Mark, Jess), facts, episodes, procedures and summaries.
- ``sam``: a backend developer and a coding assistant: long messages with pasted code, tracebacks
  and config, instructions said in passing, long answers sharing words with later requests.

Distractors are deliberate: other customers' orders, messages that share words with a question but
are about something else, restated older truths, near-duplicate paraphrases.

Every memory's key lands in ``metadata["key"]``. Questions name 1-3 gold keys. Categories:

- time: the question names a time range ("last week", "in October", "yesterday");
- preference: how someone likes things, stated outright or only implied;
- procedure: how to do something the agent has a procedure for;
- entity: about a named customer, supplier, person or thing, with untagged memories;
- speaker: what a named person said, where the name is only the message's ``role``;
- multihop: the answer needs two memories, the second found through the first;
- paraphrase: shares no content word with its gold (checked by the tests);
- update: current truth, where a newer fact superseded an older one;
- filter: a metadata/tag/kind filter that matches exactly one memory (checked by the tests);
- verbatim: the gold holds an e-mail, a URL, a version or abbreviations and prices, which must come
  back intact;
- technical: a long technical chat: a request that an instruction said in passing must shape, or a
  decision, error or fix inside a long message.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from engram.eval.scenarios import Scenario, ScenarioEntity, ScenarioMemory, ScenarioQuestion

__all__ = ["CATEGORIES", "INTACT", "NOW", "SCENARIO"]

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
K = "kestrel"
D = "dana"
S = "sam"

CATEGORIES = (
    "time", "preference", "procedure", "entity", "speaker", "multihop", "paraphrase", "update", "filter", "verbatim",
    "technical",
)

_MEMORIES: list[ScenarioMemory] = []


def _t(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def _add(key: str, user: str, when: str, content: str, kind: str = "message", **fields: Any) -> None:
    for name in ("tags", "entities"):
        if name in fields:
            fields[name] = tuple(fields[name])
    _MEMORIES.append(ScenarioMemory(key=key, user_id=user, content=content, created_at=_t(when), kind=kind, **fields))


def team(key: str, when: str, role: str, text: str, **fields: Any) -> None:
    """A message in Kestrel's team chat; one session per day."""
    _add(key, K, when, text, role=role, session_id=f"team-{when[:10]}", **fields)


def maya(key: str, when: str, role: str, text: str, **fields: Any) -> None:
    """Maya (the owner) and the assistant, one session per day."""
    _add(key, K, when, text, role=role, session_id=f"maya-{when[:10]}", **fields)


def dana(key: str, when: str, role: str, text: str, **fields: Any) -> None:
    """Dana and her assistant, one session per day."""
    _add(key, D, when, text, role=role, session_id=f"dana-{when[:10]}", **fields)


def family(key: str, when: str, role: str, text: str, **fields: Any) -> None:
    """The family group chat (Dana, Mark, Jess), one session per day."""
    _add(key, D, when, text, role=role, session_id=f"family-{when[:10]}", **fields)


def fact(key: str, user: str, when: str, text: str, subject: str | None = None, predicate: str | None = None,
         obj: str | None = None, **fields: Any) -> None:
    _add(key, user, when, text, kind="fact", subject=subject, predicate=predicate, object=obj, **fields)


def episode(key: str, user: str, when: str, text: str, **fields: Any) -> None:
    _add(key, user, when, text, kind="episode", **fields)


def procedure(key: str, user: str, when: str, trigger: str, action: str, **fields: Any) -> None:
    _add(key, user, when, f"When {trigger}: {action}", kind="procedure", trigger=trigger, action=action, **fields)


def summary(key: str, user: str, when: str, text: str, **fields: Any) -> None:
    _add(key, user, when, text, kind="summary", **fields)


# ==================================================================================================
# kestrel: standing facts, set up in the first week
# ==================================================================================================
fact("k_business", K, "2026-08-24 09:00",
     "Kestrel Office Tech is a six-person reseller of office IT hardware in Portland, Oregon: monitors, "
     "laptops, docking stations, printers and cabling for small offices.", importance=0.7)
fact("k_team", K, "2026-08-24 09:05",
     "Team: Maya Chen owns the business, Bob Martins runs sales, Priya Nair does operations and finance, "
     "Tom Becker runs the warehouse and deliveries, Lena Ortiz handles customer support.", importance=0.7)
fact("k_tools", K, "2026-08-24 09:10",
     "Tools we use: PayBridge for card payments, Pipedrive as the CRM, StockPilot for inventory and the "
     "packing-station scanners, QuickBooks for the books.")
fact("k_hours_old", K, "2026-08-24 09:15", "The warehouse closes at 6pm on weekdays.",
     "Kestrel warehouse", "closing time", "6pm")
fact("northwind_supplies", K, "2026-08-25 10:00",
     "Northwind Distribution is our supplier for Dell monitors; our rep there is Carla and lead time is "
     "5 business days.", "Northwind Distribution", "supplies", "Dell monitors")
fact("contoso_supplies", K, "2026-08-25 10:05",
     "Contoso Components supplies our docking stations and cables.",
     "Contoso Components", "supplies", "docking stations and cables")
fact("fabrikam_supplies", K, "2026-08-25 10:10",
     "Fabrikam Print supplies printers and toner; they take returns with a 10% restocking fee.",
     "Fabrikam Print", "supplies", "printers and toner")
fact("meridian_supplies", K, "2026-08-25 10:15",
     "Meridian Wholesale supplies our laptops (Lenovo ThinkPad and HP EliteBook).",
     "Meridian Wholesale", "supplies", "laptops")
fact("globex_contact_old", K, "2026-08-28 14:00", "Our contact at Globex is Raj Patel, their IT manager.",
     "Globex", "main contact", "Raj Patel")
fact("monitor_price_old", K, "2026-09-01 09:00", "We sell the Dell P2723QE 27-inch monitor at $489.",
     "Dell P2723QE", "retail price", "$489")
fact("acme_terms_net30", K, "2026-09-02 11:00", "Acme Corporation's payment terms are NET30.",
     "Acme Corporation", "payment terms", "NET30", entities=["customer:acme"])
fact("acme_carrier_old", K, "2026-09-03 11:00", "We ship Acme orders with UPS Ground.",
     "Acme Corporation", "shipping carrier", "UPS Ground")
fact("acme_address_old", K, "2026-09-04 11:00", "Acme's delivery address is 12 Harbor Street, Portland.",
     "Acme Corporation", "delivery address", "12 Harbor Street, Portland")
fact("acme_ap_email", K, "2026-09-05 10:30",
     "Acme's accounts-payable contact is Alice Moreau, alice@acme.io. Send invoices there as a PDF, not to "
     "their sales inbox.")
fact("globex_terms", K, "2026-09-30 10:00",
     "Globex pays NET15 since they paid two invoices late; no more NET30 for them.",
     "Globex", "payment terms", "NET15")
fact("brightwater_contact", K, "2026-10-01 15:00",
     "Brightwater Dental's office manager is Keisha Brown; she signs off every purchase.",
     "Brightwater Dental", "office manager", "Keisha Brown")
fact("priya_report_pref", K, "2026-09-10 16:00",
     "Priya wants the weekly sales report as a one-page PDF, sorted by margin rather than revenue.",
     "Priya Nair", "report format", "one-page PDF sorted by margin")
fact("ledgerly_price", K, "2026-10-19 10:30",
     "Ledgerly costs $39 a month for up to three users; the free trial runs until Nov 2.",
     "Ledgerly", "price", "$39 a month")
fact("pinecrest_plan", K, "2026-09-07 12:00",
     "Pinecrest Law is on our managed-laptop plan: we image, patch and swap their laptops for $45 per seat "
     "per month.")
fact("tom_leave", K, "2026-11-16 10:00", "Tom is on leave Dec 1-5; Bob covers deliveries that week.")

# ==================================================================================================
# kestrel: procedures
# ==================================================================================================
procedure("proc_refund", K, "2026-08-26 10:00", "a customer needs a refund",
          "open the order in PayBridge, click Refund, choose full or partial and pick a reason code. Then "
          "record it in QuickBooks under Refunds and e-mail the customer the PayBridge receipt. Refunds over "
          "$500 need Maya's approval first.")
procedure("proc_rush", K, "2026-08-26 10:10", "a customer asks for a rush order",
          "check stock in StockPilot first. If it is in the warehouse, Tom ships it the same day with UPS Next "
          "Day Air and we add the $45 rush fee. If it has to come from a supplier, call the supplier before "
          "promising any date.")
procedure("proc_new_customer", K, "2026-08-26 10:20", "a new business customer signs up",
          "run a credit check with Creditsafe, give NET30 only if the score is above 60 (otherwise prepaid), "
          "create the account in QuickBooks and Pipedrive, and send the welcome pack with the support e-mail.")
procedure("proc_damaged", K, "2026-08-26 10:30", "a delivery arrives damaged",
          "photograph the box and the item before unpacking further, open a claim with the carrier within "
          "48 hours, and ship a replacement from stock right away; never wait for the carrier's decision.")
procedure("proc_overdue", K, "2026-09-30 10:10", "an invoice is 10 days overdue",
          "send the polite reminder template from QuickBooks; at 20 days Priya phones the customer; at 30 days "
          "put new orders on hold until it is paid.")
procedure("proc_month_end", K, "2026-09-01 09:30", "closing the month",
          "reconcile the PayBridge payouts, chase unapplied payments, export the P&L as a PDF for Maya and "
          "lock the period in QuickBooks.")
procedure("proc_quote", K, "2026-08-27 11:00", "a customer asks for a quote",
          "use the quote template in Pipedrive, add 18% margin on hardware and 25% on accessories, and make it "
          "valid for 14 days.")
procedure("proc_stockpilot_rollback", K, "2026-11-11 09:00", "a StockPilot update breaks something",
          "reinstall the previous installer from the shared drive (Installers/StockPilot), switch off "
          "auto-update under Settings > Updates, and log an INC ticket with both version numbers.")
procedure("proc_warranty", K, "2026-09-14 14:00", "a customer reports a faulty device under warranty",
          "look up the serial in the vendor portal, open an RMA, and send a loaner if they are on the "
          "managed-laptop plan.")

# ==================================================================================================
# kestrel: late August and September
# ==================================================================================================
maya("maya_0824_1", "2026-08-24 08:40", "user",
     "Hi! I'm Maya, I run Kestrel Office Tech. I want you to keep track of customers, orders and who said what "
     "in the team chat.")
maya("maya_0824_2", "2026-08-24 08:41", "assistant",
     "Happy to. I'll remember customers, orders, supplier details and the team's decisions, and you can ask me "
     "about any of it later.")
maya("maya_after_hours", "2026-08-24 08:45", "user",
     "One thing: don't ring me after 7pm unless something is actually on fire. A text is fine, I'll see it "
     "in the morning.")
team("team_0824_hello", "2026-08-24 09:30", "Maya",
     "Everyone, say hi to our new assistant. It reads this channel, so keep decisions in writing here.")
team("team_0824_tom", "2026-08-24 09:34", "Tom", "Hi bot. Please don't order me around.")
team("team_0825_coffee", "2026-08-25 08:15", "Lena", "The coffee machine is leaking again, I put a towel under it.")
team("bob_leads_pref", "2026-08-25 11:20", "Bob",
     "If a lead comes in, put it in Pipedrive, not here. I lose things in this channel.")
team("team_0826_parking", "2026-08-26 08:05", "Priya", "Whoever parked in front of the loading bay: Tom needs it at 9.")
team("team_0827_stock", "2026-08-27 16:40", "Tom",
     "Stock count done: 14 monitors, 22 docks, 9 laptops, 3 printers. Counts are in StockPilot.")
episode("acme_first_call", K, "2026-08-28 15:00",
        "First call with Acme Corporation: they are opening a second office floor and want a single vendor for "
        "monitors and docks. Bob is the account owner.")
team("team_0831_monday", "2026-08-31 09:00", "Maya", "Monday standup notes are in the drive. Short week for me, I'm out Thursday.")
team("team_0901_lena", "2026-09-01 10:12", "Lena", "Printer driver tickets are piling up, mostly the Fabrikam models.")
maya("maya_0902_terms", "2026-09-02 10:50", "user", "Acme signed. They're on NET30 like everyone else.")
maya("maya_0902_terms_a", "2026-09-02 10:51", "assistant", "Noted: Acme Corporation is on NET30 payment terms.")
team("team_0903_ups", "2026-09-03 11:30", "Tom", "UPS pickup moved to 3pm from now on, so pack before 2:30.")
team("team_0904_lunch", "2026-09-04 12:10", "Bob", "Pizza in the break room, Pinecrest sent it as a thank-you.")
episode("acme_order_docks", K, "2026-09-08 13:00",
        "Acme ordered 12 Dell WD19S docking stations for their finance team; delivered Sep 11.")
team("team_0908_docks", "2026-09-08 13:20", "Bob", "Acme's first order is in: 12 docks. Tom, can they go out Thursday?")
team("team_0908_docks_tom", "2026-09-08 13:25", "Tom", "Thursday works.")
team("team_0909_heat", "2026-09-09 15:00", "Priya", "Warehouse AC is broken again, I called the landlord.")
team("priya_report_first", "2026-09-10 15:40", "Priya",
     "For the weekly numbers: one page, PDF, sorted by margin please. Revenue alone tells me nothing.")
team("team_0911_friday", "2026-09-11 16:30", "Maya", "Good week, everyone. Acme's docks went out on time.")
episode("globex_order_laptops", K, "2026-09-15 10:00",
        "Globex ordered 15 Lenovo ThinkPad T14 laptops, invoice INV-1142, $18,735 total.",
        metadata={"invoice": "INV-1142"})
team("team_0915_globex", "2026-09-15 10:30", "Bob", "Big one: Globex wants 15 ThinkPads. Meridian says 4 days.")
team("team_0916_lena", "2026-09-16 09:45", "Lena", "Reminder that I'm at the dentist Thursday morning.")
team("team_0917_tom_labels", "2026-09-17 14:10", "Tom",
     "Can everyone put the PO number on the outside of each box? I keep opening cartons just to find out whose "
     "they are.")
team("team_0918_scan", "2026-09-18 11:00", "Tom", "Scanner at the packing station is fine again after the reboot.")
episode("initech_order_printers", K, "2026-09-21 11:00",
        "Initech ordered 4 HP LaserJet Pro printers for their new branch office.")
team("team_0921_initech", "2026-09-21 11:15", "Bob", "Initech placed the printer order, 4 LaserJets from Fabrikam.")
team("team_0922_wifi", "2026-09-22 08:30", "Priya", "Office wifi password changed, it's on the whiteboard.")
team("team_0923_bob_q", "2026-09-23 10:05", "Bob", "Does anyone know if Contoso still does the 3-year warranty on docks?")
team("team_0923_priya_a", "2026-09-23 10:20", "Priya", "They do, but only if we register the serials within 30 days.")
team("team_0924_lena", "2026-09-24 13:00", "Lena", "Pinecrest asked for two spare chargers, I sent them from stock.")
episode("globex_late_sep", K, "2026-09-29 09:00",
        "Globex paid INV-1142 nineteen days late after three reminders; Priya flagged them as a slow payer.")
team("team_0929_priya", "2026-09-29 09:10", "Priya", "Globex finally paid. Nineteen days late. I'm moving them to NET15.")
summary("summary_sep", K, "2026-09-30 18:00",
        "September: Acme became a customer (12 docks), Globex bought 15 laptops but paid late and moved to NET15, "
        "Initech ordered 4 printers, warehouse AC broke twice.", tags=["monthly-summary", "september"])

# ==================================================================================================
# kestrel: October
# ==================================================================================================
episode("brightwater_onboard", K, "2026-10-01 14:30",
        "Signed Brightwater Dental as a new customer: 3 front-desk PCs and a receipt printer, prepaid terms "
        "until the credit check clears.")
team("brightwater_delivery_pref", "2026-10-02 09:20", "Lena",
     "Brightwater's front desk asked that we only deliver before 8:30am, before the first patients arrive.")
team("team_1002_tom", "2026-10-02 09:25", "Tom", "Then their drop goes first on the route.")
team("lena_backlog", "2026-10-05 10:40", "Lena",
     "The queue is at 31 open tickets, mostly printer drivers. I need someone to cover Friday afternoons.")
team("priya_spreadsheet_rant", "2026-10-05 11:02", "Priya",
     "Please, no more 40-tab spreadsheets on Monday mornings. If it doesn't fit on one page I won't read it.")
episode("initech_cancel", K, "2026-10-06 15:00",
        "Initech cancelled their printer order: the branch opening slipped to spring. Fabrikam took the printers "
        "back with a 10% restocking fee.")
team("team_1006_bob", "2026-10-06 15:10", "Bob", "Bad news, Initech pulled the printer order. Branch is delayed.")
episode("pinecrest_rush", K, "2026-10-09 10:00",
        "Pinecrest Law needed 6 laptops by Friday for new associates; we rushed them through Meridian.",
        metadata={"po": "PO-5602"})
team("team_1009_rush", "2026-10-09 10:15", "Bob", "Pinecrest needs 6 laptops by Friday. Can we do it?")
team("team_1009_rush_tom", "2026-10-09 10:20", "Tom", "If Meridian ships today, yes. Barely.")
team("rush_stress", "2026-10-12 09:00", "Tom",
     "Rush orders are stressful, last time we paid $240 in overnight shipping and still missed the deadline by "
     "a day.")
team("team_1012_maya", "2026-10-12 09:10", "Maya", "Agreed. Rush fee stays, and we only promise dates after the supplier confirms.")
team("bob_ask_monitors_oct", "2026-10-13 11:30", "Bob", "Do we still have any 27-inch monitors in stock? Acme might want a lot of them.")
team("pinecrest_complaint", "2026-10-13 14:00", "Lena",
     "Pinecrest Law complained: the rushed laptops arrived a day late and two had the wrong keyboard layout.")
episode("acme_order_monitors", K, "2026-10-14 10:00",
        "Acme ordered 30 monitors (Dell P2723QE, 27-inch) for their new office floor, PO-5531, delivery by Nov 2.")
team("team_1014_bob", "2026-10-14 10:20", "Bob", "Huge week: 30 monitors for the new floor, PO-5531. Ordering from Northwind now.")
team("team_1014_tom", "2026-10-14 10:45", "Tom", "I'll need the whole left aisle for those. Moving the toner.")
fact("acme_webhook", K, "2026-10-15 16:00",
     "Acme wants order confirmations posted to https://hooks.acme.io/v1/orders as JSON. Use the key stored in "
     "1Password under 'Acme hooks'.")
team("team_1016_friday", "2026-10-16 17:00", "Maya", "Drinks at Deschutes at 5:30, first round is on me.")
maya("maya_1019_trial", "2026-10-19 10:00", "user",
     "Priya is fed up with QuickBooks reconciliation. Start a Ledgerly trial for her and remind me before it ends.")
maya("maya_1019_trial_a", "2026-10-19 10:01", "assistant",
     "Started the Ledgerly trial for Priya today; it ends Nov 2. I'll remind you on Oct 30.")
globex_new = "Raj Patel has left Globex; our new contact there is Sofia Lindqvist, head of IT."
fact("globex_contact_new", K, "2026-10-20 09:30", globex_new, "Globex", "main contact", "Sofia Lindqvist")
team("team_1020_raj", "2026-10-20 09:40", "Bob", "Raj from Globex is gone, new person is Sofia. Seems sharp.")
team("team_1021_lena", "2026-10-21 12:00", "Lena", "Someone took my stapler again.")
team("team_1022_priya", "2026-10-22 16:00", "Priya", "Quarter-end is close, please get me receipts by Friday.")
episode("k_tax_filed", K, "2026-10-23 15:00",
        "Q3 sales and use tax return filed with the state; $2,140 paid from the operating account.", tags=["tax"])
team("team_1023_tom", "2026-10-23 16:30", "Tom", "Van is due for its oil change, booking it for next week.")
episode("acme_address_move", K, "2026-10-26 09:00",
        "Acme moved offices over the weekend; Alice confirmed the new delivery address.")
fact("acme_address_new", K, "2026-10-26 09:05",
     "Acme's delivery address is now 400 Lake Avenue, Suite 9, Portland.",
     "Acme Corporation", "delivery address", "400 Lake Avenue, Suite 9, Portland")
team("acme_ask_45", "2026-10-28 11:00", "Bob",
     "Acme asked whether we could stretch their payment window to 45 days now that they order monthly.")
team("team_1028_priya", "2026-10-28 11:10", "Priya", "Fine by me if they keep paying on time. Maya's call.")
maya("maya_1030_reminder", "2026-10-30 09:00", "assistant",
     "Reminder: the Ledgerly trial ends Nov 2. Priya should decide whether we keep it.")
episode("acme_monitors_delivered", K, "2026-10-30 15:00",
        "All 30 Dell monitors for PO-5531 were delivered to Acme's new office; one HDMI cable was damaged in "
        "transit.")
team("team_1030_tom", "2026-10-30 15:20", "Tom", "Acme drop done. One cable came crushed, I left a spare.")
summary("summary_oct", K, "2026-10-31 18:00",
        "October: Acme ordered 30 monitors and moved offices, Initech cancelled its printers, Pinecrest's rush "
        "order arrived late, Brightwater Dental signed up, Globex's contact changed to Sofia Lindqvist.",
        tags=["monthly-summary", "october"])

# ==================================================================================================
# kestrel: November
# ==================================================================================================
fact("k_hours_new", K, "2026-11-02 08:00", "Winter hours: the warehouse now closes at 5:30pm on weekdays.",
     "Kestrel warehouse", "closing time", "5:30pm")
team("team_1102_hours", "2026-11-02 08:10", "Maya", "Reminder: winter hours start today.")
team("priya_trial_opinion", "2026-11-03 09:30", "Priya",
     "Honestly it's the first tool that reconciles the PayBridge payouts without me fixing half of them by hand. "
     "Let's keep Ledgerly.")
team("bob_trial_opinion", "2026-11-03 09:41", "Bob",
     "I haven't noticed any difference with Ledgerly, to be fair I only use it to look up invoices.")
team("lena_trial_opinion", "2026-11-03 09:50", "Lena", "The Ledgerly login kept timing out on my laptop during the trial.")
team("bob_ask_support_cover", "2026-11-03 10:05", "Bob", "Who's covering support while Lena is out on Friday?")
fact("acme_terms_net45", K, "2026-11-04 14:00",
     "Acme Corporation's payment terms are now NET45, agreed with their finance team.",
     "Acme Corporation", "payment terms", "NET45", entities=["customer:acme"])
team("team_1104_terms", "2026-11-04 14:10", "Maya", "Gave Acme the 45 days. They've earned it.")
team("acme_net30_stale", "2026-11-05 10:00", "Lena",
     "Acme called about an invoice: the old PDF still says NET30 at the bottom, can someone fix the template?")
fact("acme_carrier_new", K, "2026-11-06 10:00",
     "Acme orders now ship with DHL Express; DHL gave us a better rate for their area.",
     "Acme Corporation", "shipping carrier", "DHL Express")
fact("monitor_price_new", K, "2026-11-09 09:00",
     "The Dell P2723QE now sells at $459 after Northwind's price cut.",
     "Dell P2723QE", "retail price", "$459")
team("bob_ask_bulk_docks", "2026-11-09 11:00", "Bob", "Can we do a bulk price for 40 docks? Globex is asking.")
episode("brightwater_order_tablets", K, "2026-11-10 08:00",
        "Brightwater Dental ordered 5 Samsung Galaxy Tab A9 tablets for patient check-in forms.")
episode("stockpilot_incident", K, "2026-11-10 14:00",
        "StockPilot auto-updated overnight and the packing-station barcode scanner stopped working; orders were "
        "packed by hand for half a day until Tom rolled it back.", metadata={"ticket": "INC-2207"})
team("tom_231", "2026-11-10 13:30", "Tom",
     "StockPilot version 2.3.1 broke the scanner on the packing station. I rolled back to 2.2.8. Nobody click "
     "update until they fix it.")
episode("globex_order_docks", K, "2026-11-11 10:00",
        "Globex ordered 20 Contoso USB-C docks, invoice INV-1187, $3,380.", metadata={"invoice": "INV-1187"})
episode("acme_refund_approved", K, "2026-11-12 11:00",
        "Dr. Smith from Acme Inc. approved the $18.50 refund. It covers the HDMI cable damaged in the monitor "
        "delivery.")
team("team_1112_lena", "2026-11-12 11:10", "Lena", "Refund for Acme's cable is through PayBridge, receipt sent to Alice.")
team("priya_books_closed", "2026-11-11 15:00", "Priya", "October's books are reconciled and locked. Numbers look good.")
team("team_1113_bob", "2026-11-13 16:00", "Bob", "Pinecrest wants to talk renewal next week.")
summary("summary_wk46", K, "2026-11-15 18:00",
        "Week of Nov 9: StockPilot 2.3.1 broke the scanner (rolled back), Brightwater ordered tablets, Globex "
        "ordered 20 docks, Acme's cable refund approved.", tags=["weekly-summary"])
team("team_1116_standup", "2026-11-16 09:00", "Maya", "Standup: focus this week is the Pinecrest renewal and clearing the ticket queue.")
team("bob_ask_globex_paid", "2026-11-17 10:30", "Bob",
     "Has Globex paid INV-1187 yet? They want another 10 laptops and I don't want to ship while they're overdue.")
team("priya_answer_globex", "2026-11-17 10:45", "Priya", "Not yet, it's 6 days past due. Send the reminder first.")
team("bob_pinecrest_renewal", "2026-11-18 15:00", "Bob", "Closed the Pinecrest renewal: 8 seats on the managed-laptop plan for another year.")
team("priya_ask_note", "2026-11-18 15:30", "Priya", "Can someone send me the Brightwater delivery note?")
episode("van_breakdown", K, "2026-11-19 09:40",
        "The delivery van broke down on I-84; Tom finished the Brightwater drop with a rental.")
team("tom_ask_aisle", "2026-11-19 16:00", "Tom", "Who left the dock boxes in aisle 3?")
episode("meeting_holiday", K, "2026-11-20 15:00",
        "Friday meeting: we agreed to close from Dec 24 to Jan 2, with Tom on call for urgent shipments on "
        "Dec 29-30.")
team("maya_no_price_increase", "2026-11-20 15:30", "Maya",
     "Also from the meeting: no price increases until February, whatever the suppliers do.")
team("team_1120_bob", "2026-11-20 15:40", "Bob", "Good. I was not looking forward to telling Acme.")
episode("acme_flicker_warranty", K, "2026-11-21 10:00",
        "Acme reported one P2723QE flickering; warranty claim opened with Dell, RMA 88123-K.", tags=["warranty"])
summary("summary_wk47", K, "2026-11-22 18:00",
        "Week of Nov 16: Pinecrest renewed 8 seats, Globex's INV-1187 is overdue, the van broke down, holiday "
        "closure agreed (Dec 24 - Jan 2).", tags=["weekly-summary"])
team("lena_morning", "2026-11-23 09:12", "Lena",
     "Morning! Working through the weekend tickets: 4 password resets, one flickering monitor at Acme, and "
     "Brightwater asking about tablet cases.")
maya("maya_1123_q", "2026-11-23 09:30", "user", "Anything urgent from the weekend?")
maya("maya_1123_a", "2026-11-23 09:31", "assistant",
     "Nothing urgent: Acme's flickering monitor is under warranty (RMA 88123-K) and Globex's INV-1187 is still "
     "unpaid.")

# ==================================================================================================
# dana: facts and preferences
# ==================================================================================================
fact("dana_family", D, "2026-08-24 19:00",
     "Dana lives in Portland with her partner Mark and their son Leo (9). Her sister Jess lives abroad; her mum "
     "Linda lives in Eugene.", importance=0.7)
fact("jess_lives_porto", D, "2026-08-24 19:05", "Jess lives in Porto, Portugal, with her husband Tiago.",
     "Jess", "lives in", "Porto")
fact("dana_vegetarian", D, "2026-08-24 19:10", "Dana is vegetarian; fish is fine only in an emergency, never meat.",
     "Dana", "diet", "vegetarian")
fact("dana_peanut", D, "2026-08-24 19:12",
     "Dana has a severe peanut allergy and carries an EpiPen.", "Dana", "allergy", "peanuts", importance=0.9)
dana("dana_coffee", "2026-08-25 08:00", "user",
     "If you ever order coffee for me: oat flat white, no sugar. Anything else and I'll drink it, but sadly.")
fact("gym_old", D, "2026-08-25 20:00", "Dana's gym is FitLab on Alberta Street.", "Dana", "gym", "FitLab")
fact("piano_tuesday", D, "2026-08-26 18:00", "Leo's piano lesson is on Tuesdays at 4pm with Mrs. Okafor.",
     "Leo", "piano lesson", "Tuesdays 4pm")
fact("insurance_old", D, "2026-08-27 12:00", "Dana's car insurance is with Verity Mutual, policy VM-448812.",
     "Dana", "car insurance", "Verity Mutual")
fact("leo_dentist", D, "2026-08-28 09:00", "Leo sees the same dentist as Dana, Dr. Patel.",
     "Leo", "dentist", "Dr. Patel")
fact("patel_phone", D, "2026-08-28 09:05", "Dr. Patel's practice is Bright Smiles on Hawthorne, phone 503-555-0142.",
     "Dr. Patel", "phone", "503-555-0142")
fact("dana_passport", D, "2026-09-02 10:00", "Dana's passport expires in March 2027; renew before any trip after "
     "December.", tags=["passport"])
fact("mom_birthday", D, "2026-08-29 11:00", "Mum (Linda) turns 70 on December 12.", "Linda", "birthday", "December 12")
dana("dana_seat_window", "2026-09-14 21:00", "user",
     "Stuck by the window again on the way back from Denver, had to climb over two strangers to get out. Never "
     "again.")
dana("dana_seat_window_a", "2026-09-14 21:01", "assistant", "Noted: aisle from now on, never the middle.")
fact("dana_hotel_pref", D, "2026-09-20 10:00",
     "For hotels Dana wants a quiet room on a high floor, away from the lift.", "Dana", "hotel preference",
     "quiet room, high floor")
dana("dana_music", "2026-09-21 09:00", "user", "For focus playlists: lo-fi or piano, nothing with lyrics.")
dana("dana_focus_dup", "2026-10-12 09:00", "user", "Put on something without words please, lyrics kill my focus.")

# ==================================================================================================
# dana: procedures
# ==================================================================================================
procedure("proc_restaurant", D, "2026-08-30 12:00", "booking a restaurant for Dana",
          "pick a place with real vegetarian mains, tell them about the severe peanut allergy when booking, ask "
          "for 7:30pm, and avoid Fridays (Leo's swim practice).")
procedure("proc_flight_delay", D, "2026-09-05 12:00", "one of Dana's flights is delayed",
          "tell Mark, check whether school pickup needs moving, rebook on the next direct flight if the delay is "
          "over 3 hours, and file the compensation claim the same day.")
procedure("proc_school_pickup", D, "2026-09-05 12:10", "Dana is away on a school day",
          "Mark picks Leo up at 3:15; if Mark can't, ask Ruth next door, never leave it to the after-school club.")
procedure("proc_bills", D, "2026-09-06 12:00", "a household bill arrives",
          "check it against last month, pay it from the joint account if it is within 10%, otherwise ask Dana "
          "first.")

# ==================================================================================================
# dana: August to October
# ==================================================================================================
dana("dana_0824_hi", "2026-08-24 18:50", "user",
     "Hi, I'm Dana. I need help with the family calendar, bookings and remembering things.")
dana("dana_0824_hi_a", "2026-08-24 18:51", "assistant", "Nice to meet you, Dana. Tell me what matters and I'll keep it.")
dana("dana_0901_dentist", "2026-09-01 17:00", "user", "Book Leo's dentist check-up for October, after school.")
episode("leo_dentist_oct", D, "2026-10-08 15:45", "Leo's dentist check-up at Bright Smiles: no cavities, next visit in April.")
dana("dana_0903_groceries", "2026-09-03 18:30", "user", "Add oat milk, lentils and dish soap to the list.")
family("family_0906_jess", "2026-09-06 10:00", "Jess", "Tiago got the job in Braga! We're staying in Porto though.")
family("family_0906_dana", "2026-09-06 10:05", "Dana", "That's amazing!! Congrats to him.")
dana("dana_0910_denver", "2026-09-10 07:00", "user", "Flying to Denver Thursday for the client workshop, back Sunday.")
episode("dana_denver_trip", D, "2026-09-13 20:00", "Dana's Denver workshop trip: the return flight was 2 hours late; "
        "Mark did school pickup all week.")
dana("dana_0915_car", "2026-09-15 12:00", "user", "The car is making a grinding noise when I brake.")
episode("dana_car_service", D, "2026-09-18 16:00", "Car serviced at Alder Auto: front brake pads replaced, $310.")
family("family_0920_mark", "2026-09-20 19:00", "Mark", "Leo says he wants to quit piano. I said we'd talk after the recital.")
dana("dana_0922_book", "2026-09-22 21:00", "user", "Remind me to return the library book, 'The Overstory', by the 30th.")
episode("dana_running_shoes", D, "2026-10-03 14:00", "Bought new running shoes (Brooks Ghost 16), $140.")
dana("dana_1003_run", "2026-10-03 15:00", "user", "Signed up for the Turkey Trot 10k on Thanksgiving morning.")
episode("dana_lisbon_conf", D, "2026-10-07 09:00",
        "Dana was at the Lisbon design conference Oct 7-10; the talk on adaptive reuse was the highlight.")
dana("dana_1011_back", "2026-10-11 18:00", "user", "Back from Lisbon. Jet lag is brutal, no meetings before 10 tomorrow.")
family("family_1013_jess", "2026-10-13 20:00", "Jess",
       "Mum's 70th is coming up. Let's get her a pottery class voucher instead of another scarf.")
family("family_1013_mark", "2026-10-13 20:05", "Mark", "She did mention the studio on Pearl Street.")
family("family_1013_dana", "2026-10-13 20:10", "Dana", "Love it. I'll book it.")
fact("gym_new", D, "2026-10-15 09:00", "Dana switched gyms: she now trains at Iron Temple on Division Street.",
     "Dana", "gym", "Iron Temple")
dana("dana_1015_gym", "2026-10-15 09:05", "user", "Cancelled FitLab. Iron Temple has the morning classes I want.")
episode("dana_air_fryer", D, "2026-10-18 13:00", "Bought an air fryer (Ninja AF101) for the kitchen, $99.")
dana("dana_1020_leo_coat", "2026-10-20 19:00", "user", "Leo has outgrown his winter coat, find something warm under $80.")
episode("dana_leo_coat", D, "2026-10-25 11:00", "Bought Leo a winter coat at REI, size 10, $74.")
fact("piano_thursday", D, "2026-10-26 18:00", "Leo's piano lesson moved to Thursdays at 5pm (same teacher).",
     "Leo", "piano lesson", "Thursdays 5pm")
family("family_1026_mark", "2026-10-26 18:10", "Mark", "I can do Thursday drop-offs for piano, it's on my way back.")
episode("dana_pottery_booked", D, "2026-10-28 12:00", "Booked a pottery class voucher at Pearl Street Clay for Mum's 70th, $120.")
summary("dana_summary_oct", D, "2026-10-31 20:00",
        "October: Lisbon conference, new gym (Iron Temple), Leo's piano moved to Thursdays, bought running shoes, "
        "an air fryer and Leo's coat, pottery voucher booked for Mum.", tags=["monthly-summary"])

# ==================================================================================================
# dana: November
# ==================================================================================================
fact("insurance_new", D, "2026-11-02 10:00", "Dana moved her car insurance to Harbor Insurance, policy HB-20931.",
     "Dana", "car insurance", "Harbor Insurance")
dana("dana_1102_ins", "2026-11-02 10:05", "user", "Harbor was $220 cheaper a year. Cancel Verity when the new one starts.")
episode("leo_field_trip", D, "2026-11-04 16:00",
        "Leo's class goes to the science museum (OMSI) on Dec 4; the permission slip and $12 are due Nov 27.")
dana("dana_1105_netflix", "2026-11-05 09:00", "user", "Netflix went up again. Downgrade us to the basic plan.")
dana("dana_1106_flights", "2026-11-06 20:00", "user", "Look for flights to Porto around Dec 22 for the three of us.")
episode("dana_flight_porto", D, "2026-11-09 19:00",
        "Booked flights for Dana, Mark and Leo: Portland to Porto on Dec 22 (TAP via Newark), back Jan 3.")
family("mark_hotel_noise", "2026-11-10 21:00", "Mark",
       "The Ribeira Douro photos look nice but the reviews say the street is loud until 2am. Not with Leo.")
family("family_1110_jess", "2026-11-10 21:05", "Jess", "Stay with us! The sofa bed is better than it looks.")
episode("dana_hotel_booking", D, "2026-11-11 10:00",
        "Booked Casa do Jardim in Porto for Dec 22-26: Rua da Boavista 210, quiet side street, room on the 4th "
        "floor.")
dana("dana_1112_dentist", "2026-11-12 08:30", "user", "Book me in with Dr. Patel, the filling on the left feels off.")
episode("dana_dentist_appt", D, "2026-11-13 09:00", "Dana's appointment with Dr. Patel is on Dec 1 at 8:15am.")
dana("dana_1116_present", "2026-11-16 19:00", "user", "Leo wants a telescope for Christmas. Budget $200.")
family("family_1118_jess", "2026-11-18 20:00", "Jess", "Tiago's parents will come for Christmas Eve too, hope that's ok.")
episode("dana_hike", D, "2026-11-21 16:00", "Saturday hike with Leo in Forest Park, Wildwood Trail to Pittock Mansion.")
family("family_1122_call", "2026-11-22 18:00", "Jess", "Great call! So it's decided then.")
dana("dana_decision_xmas", "2026-11-22 19:00", "user",
     "Family call done. We decided Christmas is at Jess's place in Porto this year; I'm bringing dessert and Mark "
     "sorts the rental car.")
dana("dana_1122_a", "2026-11-22 19:01", "assistant", "Got it. I'll remind you about the dessert and Mark about the car.")
dana("dana_apples", "2026-11-02 19:00", "user",
     "Last weekend we took the kids apple picking on Sauvie Island; Leo ate more than he picked.")
dana("dana_tooth", "2026-11-23 08:10", "user", "Leo lost his first tooth yesterday at Grandma Linda's, he's so proud.")
team("tom_install_told", "2026-11-16 09:05", "Tom", "Friday's install at Brightwater went fine, Keisha signed off on all 5 tablets.")
summary("dana_summary_wk47", D, "2026-11-22 20:00",
        "This week: telescope idea for Leo, hike in Forest Park, Christmas plan settled with the family.",
        tags=["weekly-summary"])
dana("dana_1123_today", "2026-11-23 08:00", "user", "Remind me to send Leo's permission slip today.")

# ==================================================================================================
# Filler: ordinary chatter that makes the haystack realistic (shares words with questions on purpose)
# ==================================================================================================
_FILLER_K = [
    ("2026-08-28 10:00", "Bob", "Cold-called three dental practices this morning, one wants a quote."),
    ("2026-09-02 14:00", "Tom", "Monitor arms are back in stock, 12 of them."),
    ("2026-09-07 09:05", "Priya", "Reminder: expense receipts in the shared folder by Wednesday."),
    ("2026-09-14 09:00", "Maya", "Standup: Globex follow-up, Acme docks invoice, AC repair."),
    ("2026-09-16 14:00", "Bob", "Lost the Summit Realty bid, they went with a cheaper reseller."),
    ("2026-09-25 16:00", "Tom", "Toner delivery from Fabrikam is short by two cartons."),
    ("2026-09-28 09:00", "Maya", "Standup: push accessories, they have the best margin."),
    ("2026-10-01 11:00", "Priya", "New card reader for PayBridge arrived, it's on my desk."),
    ("2026-10-07 13:00", "Lena", "Initech called asking how to set up scan-to-email on their old printer."),
    ("2026-10-08 10:00", "Tom", "Forklift inspection passed."),
    ("2026-10-15 11:00", "Bob", "Summit Realty is back, their cheap reseller flaked. Sending a quote."),
    ("2026-10-19 09:00", "Maya", "Standup: Acme delivery prep, Brightwater setup, Ledgerly trial for Priya."),
    ("2026-10-20 15:00", "Tom", "The rented pallet jack goes back Friday."),
    ("2026-10-22 10:00", "Lena", "Printer driver fix for the Fabrikam models is on the wiki now."),
    ("2026-10-26 09:30", "Maya", "Standup: Acme moved offices, update the address everywhere."),
    ("2026-10-27 14:00", "Bob", "Initech might come back in spring for the printers, I'll keep in touch."),
    ("2026-10-29 11:00", "Priya", "Who ordered 200 zip ties? Not complaining, just curious."),
    ("2026-11-02 09:00", "Bob", "Summit Realty signed: 10 monitors and 10 docks, delivery next week."),
    ("2026-11-04 16:00", "Tom", "Summit's order is packed and labelled."),
    ("2026-11-06 12:00", "Lena", "Brightwater's new receipt printer is paired and printing."),
    ("2026-11-09 09:00", "Maya", "Standup: Globex docks, Brightwater tablets, StockPilot update tonight."),
    ("2026-11-12 16:00", "Tom", "Monitor stock after Acme and Summit: 4 left."),
    ("2026-11-16 11:00", "Lena", "Ticket queue is down to 12, the driver fix helped."),
    ("2026-11-17 14:00", "Tom", "Ordered 20 more monitors from Northwind for stock."),
    ("2026-11-18 10:00", "Maya", "Someone please water the plant by the door, it's dying."),
    ("2026-11-19 12:00", "Bob", "Lunch order going in, Thai place, last call."),
    ("2026-11-20 09:00", "Lena", "I'm off this afternoon, Bob has the support phone."),
    ("2026-11-21 11:00", "Tom", "Rental van back, ours is at the shop until Tuesday."),
    ("2026-08-31 15:00", "Lena", "New hire checklist for the support inbox is in the drive."),
    ("2026-09-10 10:00", "Tom", "Dock boxes from Contoso came in damaged on one corner, items are fine."),
    ("2026-09-21 16:00", "Priya", "QuickBooks sync failed overnight, fixed by reconnecting the bank feed."),
    ("2026-10-05 15:00", "Bob", "Brightwater wants a quote for tablets later this year."),
    ("2026-10-14 16:00", "Priya", "Northwind invoice for the monitors is in, 30 units at $395."),
    ("2026-10-28 15:00", "Lena", "Acme's new office wifi is flaky, told them to call their ISP."),
    ("2026-11-05 15:00", "Tom", "Cables restocked: 50 HDMI, 40 USB-C, 30 DisplayPort."),
    ("2026-11-13 10:00", "Lena", "Globex asked how to reset BIOS passwords on the ThinkPads."),
]
for _i, (_when, _role, _text) in enumerate(_FILLER_K):
    team(f"k_filler_{_i:02d}", _when, _role, _text)

_FILLER_KD = [
    ("2026-09-04 09:00", "user", "What's on my calendar for next week?"),
    ("2026-09-04 09:01", "assistant", "Monday: Globex follow-up. Wednesday: supplier call with Northwind. Friday: payroll."),
    ("2026-09-21 17:00", "user", "Draft a thank-you note to Pinecrest for the pizza."),
    ("2026-10-05 08:00", "user", "Summarize last week's sales for me."),
    ("2026-10-05 08:01", "assistant", "Last week: 9 orders, $24,300 revenue, best margin on docks and cables."),
    ("2026-10-13 19:00", "user", "I need a break. Block Friday afternoon."),
    ("2026-11-02 08:30", "user", "Draft the winter-hours notice for the website."),
    ("2026-11-16 08:30", "user", "What's happening this week?"),
    ("2026-11-16 08:31", "assistant", "Pinecrest renewal talk, Globex's INV-1187 falls due, and Friday's planning meeting."),
]
for _i, (_when, _role, _text) in enumerate(_FILLER_KD):
    maya(f"k_dm_filler_{_i:02d}", _when, _role, _text)

_FILLER_D = [
    ("2026-08-27 19:00", "user", "Leo's soccer practice is cancelled this week."),
    ("2026-08-31 08:00", "user", "What's the weather for the weekend?"),
    ("2026-09-08 20:00", "user", "Order more printer paper for the home office."),
    ("2026-09-12 10:00", "user", "Find a plumber for the kitchen tap, it drips all night."),
    ("2026-09-17 18:00", "user", "Leo needs new swim goggles before Friday practice."),
    ("2026-09-24 07:30", "user", "Remind me to call Mum on Sunday."),
    ("2026-09-29 12:00", "user", "Can you find a good vegetarian lasagna recipe?"),
    ("2026-10-02 18:00", "user", "Book the car for its winter tyres in November."),
    ("2026-10-16 19:00", "user", "Mark's birthday dinner: somewhere with a nice bar, any night but Friday."),
    ("2026-10-22 09:00", "user", "Pay the water bill, it came in today."),
    ("2026-10-29 18:00", "user", "Halloween: Leo is going as an astronaut. Need a helmet."),
    ("2026-11-03 08:00", "user", "Cancel my 2pm, I'm stuck at the school."),
    ("2026-11-08 11:00", "user", "Mark wants to repaint the hallway. Find paint samples in sage green."),
    ("2026-11-14 09:00", "user", "Turkey Trot bib number arrived: 4471."),
    ("2026-11-19 20:00", "user", "What should I get Mark for Christmas? He's been eyeing a new espresso grinder."),
    ("2026-11-20 18:00", "user", "Leo's parent-teacher conference went well, he's ahead in maths."),
]
for _i, (_when, _role, _text) in enumerate(_FILLER_D):
    dana(f"d_filler_{_i:02d}", _when, _role, _text)

_FILLER_FAM = [
    ("2026-09-06 10:10", "Mark", "Tell Tiago congrats from me too."),
    ("2026-09-27 12:00", "Jess", "Mum sent the photo of her garden, the tomatoes are huge."),
    ("2026-10-04 18:00", "Mark", "Who's taking Leo to the birthday party on Saturday?"),
    ("2026-10-04 18:05", "Dana", "Me, you have golf."),
    ("2026-10-30 19:00", "Jess", "Do you want to come for Christmas? No pressure."),
    ("2026-11-01 10:00", "Mark", "Leo got his costume photos, sending them."),
    ("2026-11-15 12:00", "Mark", "The flights are booked, right? Leo keeps asking."),
    ("2026-11-15 12:05", "Dana", "Yes, Dec 22."),
]
for _i, (_when, _role, _text) in enumerate(_FILLER_FAM):
    family(f"fam_filler_{_i:02d}", _when, _role, _text)

# Distractors that share words with questions but are about something else, and near duplicates.
episode("summit_order", K, "2026-10-21 11:00", "Summit Realty ordered 10 Dell monitors and 10 docks; delivery in November.")
episode("pinecrest_keyboards", K, "2026-10-16 10:00",
        "Pinecrest Law ordered 2 replacement laptops with US keyboards to fix the layout mix-up.")
team("rush_hour", "2026-10-20 09:20", "Tom", "Stuck in rush hour on the Marquam bridge, I'll be 20 minutes late.")
episode("paybridge_overcharge", K, "2026-09-30 12:00",
        "PayBridge refunded our $29 overcharge on the card reader subscription after Priya complained.")
team("lena_pipedrive_trial", "2026-09-09 11:00", "Lena",
     "The Pipedrive helpdesk add-on trial ended. Not worth it, our inbox works fine.")
team("bob_ask_reference", "2026-10-07 10:00", "Bob", "Should I ask Acme for a reference letter now that they're happy?")
team("bob_ask_van", "2026-11-02 13:00", "Bob", "Can I borrow the van on Thursday for the Summit drop?")
maya("maya_acme_dup", "2026-10-14 18:00", "user", "Acme just placed a big one: thirty 27-inch Dells for their new floor!")
maya("maya_acme_dup_a", "2026-10-14 18:01", "assistant", "Great news. I've noted the order (PO-5531) and the Nov 2 delivery date.")
team("priya_terms_other", "2026-11-05 11:00", "Priya", "Summit Realty is on NET30, standard terms, credit check came back at 72.")
team("tom_scanner_ok", "2026-11-12 09:00", "Tom", "Scanner works again on 2.2.8. Still not updating.")
team("lena_holiday_q", "2026-11-18 09:00", "Lena", "Are we open between Christmas and New Year? Customers are asking.")
maya("maya_price_dup", "2026-11-20 16:00", "user", "Note for later: we hold prices until February even if Northwind raises theirs.")
dana("dana_peanut_dup", "2026-09-29 12:05", "user", "And no satay or peanut sauce anywhere near me, obviously.")
dana("dana_gym_old_msg", "2026-09-02 07:00", "user", "FitLab was packed this morning, couldn't get a rack.")
dana("dana_coffee_dup", "2026-10-06 08:00", "user", "The cafe got my flat white right today: oat milk, no sugar.")
family("family_1020_jess_porto", "2026-10-20 19:00", "Jess", "Porto is all rain this week, bring boots if you come.")
dana("dana_piano_old_msg", "2026-09-08 16:00", "user", "Leo has piano at 4 today, Mark is taking him.")
dana("dana_mark_flight", "2026-11-09 19:05", "user", "Mark wanted the window seat on the long leg, give it to him.")
episode("dana_gift_telescope", D, "2026-11-19 21:00", "Ordered a Celestron telescope for Leo's Christmas present, $179.")
dana("dana_restaurant_done", "2026-10-17 10:00", "user", "Booked Mark's birthday dinner at Ava Gene's, Saturday 7:30.")
dana("dana_leo_school_msg", "2026-11-04 16:10", "user", "Leo's teacher emailed about a field trip, can you handle the slip?")
dana("dana_weekend_plans", "2026-11-13 18:00", "user", "This weekend: groceries Saturday, Mark's parents for lunch Sunday.")

# ==================================================================================================
# sam: a backend developer and a coding assistant. Long messages: pasted code, tracebacks and
# config, with instructions said in passing; long answers that share words with later requests.
# ==================================================================================================
def dev(key: str, when: str, role: str, text: str, **fields: Any) -> None:
    """Sam and the coding assistant, one session per day."""
    _add(key, S, when, text, role=role, session_id=f"dev-{when[:10]}", **fields)


dev("dev_intro", "2026-10-05 09:00", "user",
    "I'm building a small invoicing service for our team: FastAPI in front, PostgreSQL 16 behind it, and a worker "
    "that renders the invoice PDFs. Current layout:\n\n```\ninvoicing/\n  api/\n    routes.py\n    deps.py\n  worker/\n"
    "    render.py\n    jobs.py\n  tests/\n    conftest.py\n```\n\nThe worker polls a jobs table every two seconds, "
    "which feels hacky, and the PDFs sometimes come out twice. One more thing before we start: in this codebase we "
    "use httpx, never requests, and every function gets type hints. Can you look at the worker first?")
dev("dev_intro_a", "2026-10-05 09:01", "assistant",
    "Let's start with why PDFs come out twice. Two workers can read the same pending row before either marks it "
    "done, so both render it. The fix is to claim a job atomically:\n\n```python\nCLAIM = (\n    \"UPDATE jobs SET "
    "status = 'running', started_at = now() \"\n    \"WHERE id = (SELECT id FROM jobs WHERE status = 'pending' \"\n"
    "    \"ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED) \"\n    \"RETURNING id, invoice_id\"\n)\n```\n\n"
    "With SKIP LOCKED each worker takes a different row and never waits on another. Keep the polling for now; we "
    "can add LISTEN/NOTIFY later so the worker wakes up the moment a job is inserted instead of every two seconds.")
dev("dev_queue_compare", "2026-10-06 10:00", "user",
    "Should we move the jobs to a real queue? A colleague keeps saying Redis with RQ, or Celery.")
dev("dev_queue_decision", "2026-10-06 10:02", "assistant",
    "For this service I'd stay on PostgreSQL and not add Redis or Celery. You already run Postgres and back it up; "
    "a job row can be inserted in the same transaction as the invoice, so a job never exists for an invoice that "
    "was rolled back; and at a few hundred PDFs an hour a SKIP LOCKED table is nowhere near its limits. Celery "
    "brings a broker, a result backend and its own retry semantics; RQ needs Redis, which is one more thing to "
    "monitor and to secure. Revisit it if you need scheduled jobs at scale or fan-out to many consumers. Next "
    "step: add an `attempts` column and a `run_after` timestamp so failed renders back off instead of spinning.")
dev("dev_queue_ok", "2026-10-06 10:10", "user",
    "Makes sense, let's keep the SKIP LOCKED table then. Redis is one more thing to babysit.")
dev("dev_retry_generic", "2026-10-08 15:00", "assistant",
    "Here is a generic retry pattern you can adapt to any HTTP call:\n\n```python\nimport time\nimport requests\n\n"
    "def get_with_retry(url, attempts=3, backoff=0.5):\n    for attempt in range(attempts):\n        try:\n"
    "            response = requests.get(url, timeout=5)\n            response.raise_for_status()\n"
    "            return response.json()\n        except requests.RequestException:\n            if attempt == "
    "attempts - 1:\n                raise\n            time.sleep(backoff * 2 ** attempt)\n```\n\nRetry only on "
    "timeouts, connection errors and 5xx responses: a 4xx means the request itself is wrong and retrying it "
    "just repeats the failure. For production code, libraries like tenacity give you jitter and logging for free.")
dev("dev_traceback", "2026-10-13 17:40", "user",
    "The staging deploy blew up on the new migration:\n\n```\nINFO  [alembic.runtime.migration] Running upgrade "
    "3f2a -> 9c1d, index invoices by customer\nTraceback (most recent call last):\n  File \"/app/.venv/lib/python3.12/"
    "site-packages/sqlalchemy/engine/base.py\", line 1967, in _exec_single_context\n    self.dialect.do_execute(\n"
    "psycopg.errors.LockNotAvailable: canceling statement due to lock timeout\nCONTEXT: while creating index "
    "invoices_customer_idx\n```\n\nIt ran fine on my laptop. The invoices table on staging has about two million "
    "rows and the API was serving traffic at the time. Any ideas?")
dev("dev_traceback_a", "2026-10-13 17:45", "assistant",
    "A plain CREATE INDEX takes a lock that blocks writes to the table for as long as the build runs; on two "
    "million rows with the API writing, your lock_timeout fired first. Build it without blocking writes:\n\n"
    "```python\ndef upgrade() -> None:\n    with op.get_context().autocommit_block():\n        op.create_index(\n"
    "            'invoices_customer_idx', 'invoices', ['customer_id'],\n            postgresql_concurrently=True,\n"
    "        )\n```\n\nCONCURRENTLY cannot run inside a transaction, hence the autocommit block. If it fails halfway "
    "it leaves an INVALID index behind: drop it and run the migration again.")
dev("dev_review_rule", "2026-10-20 11:00", "user",
    "Quick context for the next few weeks, then a question. The API is internet-facing and stores customers' bank "
    "details for direct debit, and we have an audit in January. When you review my code, point out security "
    "problems first, then correctness, and skip style nitpicks entirely. Anyway, the question: is it fine to keep "
    "the IBAN in the same table as the customer's name and e-mail, or should it live somewhere separate?")
dev("dev_review_rule_a", "2026-10-20 11:03", "assistant",
    "Keep it in a separate table with its own, narrower permissions: the API role that lists customers should not "
    "be able to read IBANs at all. Encrypt the column with a key the database does not hold (application-side "
    "encryption, or pgcrypto with the key passed per session), store only the last four digits in clear for "
    "display, and log every read of the full value. That also shrinks what the January audit has to look at.")
dev("dev_flaky", "2026-10-27 09:30", "user",
    "test_due_dates fails on the 31st of every month and passes on every other day. It's driving me nuts.")
dev("dev_flaky_a", "2026-10-27 09:34", "assistant",
    "The test builds 'next month' by adding 30 days to today, so on the 31st it lands on the 30th of the next "
    "month, or skips February entirely. Two changes fix it: compute the date with "
    "`dateutil.relativedelta(months=1)`, which clamps to the last day of a shorter month, and freeze the clock in "
    "the test with time-machine (`@time_machine.travel('2026-01-31')`) so it checks the month-end case on every "
    "run instead of once a month.")
dev("dev_pytest", "2026-11-02 14:00", "user",
    "Pasting my conftest so you can see how the tests are set up:\n\n```python\nimport pytest\nimport psycopg\n\n"
    "@pytest.fixture(scope='session')\ndef dsn(postgresql_proc):\n    return postgresql_proc.dsn()\n\n@pytest.fixture\n"
    "def db(dsn):\n    with psycopg.connect(dsn) as conn:\n        yield conn\n        conn.rollback()\n```\n\n"
    "I use pytest with plain fixtures like these, no unittest classes, and no mocks of the database: we run "
    "against a real Postgres in CI. The render tests take 40 seconds though, is that the PDF library?")
dev("dev_pytest_a", "2026-11-02 14:05", "assistant",
    "Most of the 40 seconds is WeasyPrint loading fonts for every test. Build one renderer per session in a "
    "fixture and reuse it, and mark the two tests that render full multi-page invoices as slow so the default "
    "run skips them. That should bring the suite under ten seconds.")
dev("dev_pyproject", "2026-11-09 10:00", "user",
    "Here's the pyproject for the Docker image:\n\n```toml\n[project]\nname = \"invoicing\"\nversion = \"0.4.0\"\n"
    "requires-python = \">=3.12\"\ndependencies = [\n  \"fastapi>=0.115\",\n  \"httpx>=0.27\",\n  "
    "\"psycopg[binary]>=3.2\",\n  \"weasyprint>=62\",\n]\n```\n\nDoes this look right, and which base image "
    "should I use?")
dev("dev_docker_a", "2026-11-09 10:04", "assistant",
    "The pyproject looks fine. For the image, `python:3.12-slim` matches your requires-python; WeasyPrint needs "
    "Pango, so install `libpango-1.0-0 libpangoft2-1.0-0` with apt in the same layer and clean the apt lists. "
    "Copy pyproject and the lock file first and install dependencies before copying the code, so a code change "
    "does not reinstall everything.")
dev("dev_logging", "2026-11-10 16:20", "user",
    "For logging, use structlog with JSON output everywhere; plain print statements get lost in the container logs.")
dev("dev_logging_generic", "2026-11-10 16:22", "assistant",
    "Python's logging module can do a lot on its own: `logging.basicConfig(level=logging.INFO, format='%(asctime)s "
    "%(levelname)s %(name)s %(message)s')` at startup, then `log = logging.getLogger(__name__)` in each module and "
    "`log.info('rendered %s', invoice_id)` where it matters. Log at INFO what an operator needs to follow a job, "
    "at DEBUG what you need to debug one, and never log secrets or full bank details.")
dev("dev_regex", "2026-11-12 11:00", "user", "What's a regex for an invoice number like INV-2026-00042?")
dev("dev_regex_a", "2026-11-12 11:01", "assistant",
    "`^INV-\\d{4}-\\d{5}$` matches exactly that shape: the prefix, a four-digit year and a five-digit counter.")
dev("dev_git", "2026-11-16 18:00", "user",
    "I committed the .env file by accident two commits ago and already pushed. How bad is this and how do I undo it?")
dev("dev_git_a", "2026-11-16 18:03", "assistant",
    "Treat every secret in it as leaked: rotate the database password and the API keys first, that matters more "
    "than the history. Then remove the file from the history with git filter-repo, force-push, and add .env to "
    ".gitignore so it cannot happen again.")
dev("dev_render_slow", "2026-11-18 09:15", "user",
    "The PDF render step takes 3 seconds per invoice in production and I have no idea where the time goes.")

# Sam's other days: questions and answers that share words with the requests above, none their answer.
_FILLER_DEV = [
    ("How do I make a CSS grid with three equal columns that wraps on phones?",
     "`grid-template-columns: repeat(auto-fit, minmax(220px, 1fr))` gives as many equal columns as fit, down to one on a phone."),
    ("What's the difference between a LEFT JOIN and an INNER JOIN again?",
     "INNER JOIN keeps only rows with a match on both sides; LEFT JOIN keeps every row of the left table and fills the right side with NULLs where nothing matches."),
    ("Why does my Docker build reinstall every package when I change one line of code?",
     "Because the COPY of the code comes before the install: copy the dependency files first, install, then copy the rest, so the install layer stays cached."),
    ("Is HTTP 422 or 400 the right status for a validation error in a JSON body?",
     "FastAPI answers 422 for a body that parses but fails validation and 400 for one that does not parse; either is defensible, but be consistent across the API."),
    ("How do I retry a flaky GitHub Actions step without rerunning the whole job?",
     "There is no built-in retry for a single step; wrap the command in a small loop, or use a retry action, and fix the flakiness rather than hiding it."),
    ("Our message queue at my last job was RabbitMQ, is that still a good choice for small teams?",
     "RabbitMQ is mature and fine, but it is another server to run; for a small team with one database, a table-based queue or a managed service is usually less work."),
    ("What does 'idempotent' mean for an API endpoint?",
     "Calling it twice with the same input has the same effect as calling it once: PUT and DELETE should be, POST usually is not unless you add an idempotency key."),
    ("Can you explain Python's GIL in two sentences?",
     "The global interpreter lock lets only one thread run Python bytecode at a time, so threads help with I/O but not with CPU-bound work. Use processes, or native code that releases the lock, for parallel CPU work."),
    ("How should I name database migrations so they sort in order?",
     "Prefix them with a timestamp or a zero-padded number and a short description, like 20261014_add_invoice_status; most tools then apply them in file-name order."),
    ("Is there a quick way to see which tests are slowest in pytest?",
     "Run `pytest --durations=10` and it prints the ten slowest setup, call and teardown phases at the end of the run."),
    ("What's a sensible timeout for calls to a third-party API?",
     "Set a connect timeout of a few seconds and a read timeout matched to the API's documented latency, often 10 to 30 seconds; never leave it unbounded."),
    ("How do I log the request id in every log line of a FastAPI app?",
     "Set it in a contextvar in a middleware and add a logging filter, or a structlog processor, that copies the contextvar into every record."),
    ("Which version of PostgreSQL added MERGE?",
     "MERGE arrived in PostgreSQL 15; version 17 extended it with RETURNING and more actions."),
    ("How do I review a pull request efficiently when it's 2,000 lines?",
     "Ask for it to be split; if it cannot be, read the tests and the interfaces first, then the riskiest modules, and leave mechanical changes for last."),
    ("What's the cleanest way to read environment variables with defaults in Python?",
     "`os.environ.get('NAME', 'default')` for one or two; for more, a settings class (pydantic-settings) that validates types in one place."),
    ("My laptop fan spins up whenever the tests run, is that normal?",
     "Probably: the test database and the PDF rendering both use the CPU hard. Running pytest with `-n auto` would make it worse, not better, for the fan."),
    ("How do I find which commit broke a test?",
     "git bisect: mark a good and a bad commit, run the test at each step (or `git bisect run pytest path::test`) and git finds the first bad commit."),
    ("Should invoice amounts be floats or decimals?",
     "Decimals, always: store them as NUMERIC in PostgreSQL or as integer cents, and use Python's Decimal for arithmetic so rounding is exact."),
    ("What does the Python version in a Dockerfile's FROM line actually pin?",
     "`python:3.12-slim` follows the latest 3.12 patch release; pin a digest or a full tag like 3.12.7-slim-bookworm if you need reproducible builds."),
    ("How do I stop a long-running SQL query in psql?",
     "Press Ctrl-C in the session running it, or from another session call `SELECT pg_cancel_backend(pid)` with the pid from pg_stat_activity."),
    ("Any tips for writing commit messages my team will actually read?",
     "A short summary line in the imperative, a blank line, then why the change was needed; what changed is already in the diff."),
    ("What's the difference between a process and a thread, briefly?",
     "A process has its own memory; threads share their process's memory. Threads are cheaper to start but need care with shared state."),
    ("How do I format a date as 2026-11-23 in Python?",
     "`date.isoformat()` or `value.strftime('%Y-%m-%d')`."),
    ("Is it worth adding type checking to a small codebase?",
     "Yes if you already write annotations: mypy in CI catches whole classes of bugs for little effort, and strict mode can be adopted module by module."),
    ("How can I see what queries SQLAlchemy is sending?",
     "Create the engine with `echo=True`, or set the sqlalchemy.engine logger to INFO, and every statement is logged with its parameters."),
    ("What's the best way to store uploaded PDFs, in the database or on disk?",
     "In object storage (S3 or compatible), with the key and a checksum in the database; large binary blobs make database backups slow."),
    ("My pre-commit hooks take forever, can I speed them up?",
     "Run the slow ones (like mypy) only in CI or on push, and keep fast formatters and linters on commit."),
    ("How do I test code that sends e-mails without sending real ones?",
     "Point the mailer at a local catcher like MailHog in tests, or inject the mailer and assert on what it was asked to send."),
]
for _i, (_question, _answer) in enumerate(_FILLER_DEV):
    _day = f"2026-{9 + _i // 10:02d}-{1 + (_i % 10) * 2:02d}"
    dev(f"dev_filler_{_i:02d}", f"{_day} 08:00", "user", _question)
    dev(f"dev_filler_{_i:02d}_a", f"{_day} 08:01", "assistant", _answer)

# Conversations between people, told over several turns: the turn that answers comes a few turns
# after the one the question's words match, and shares none of them.
team("desks_ask", "2026-11-04 09:00", "Bob", "Initech wants a quote for 20 standing desks for the new branch. Can we even source those?")
team("desks_priya", "2026-11-04 09:04", "Priya", "Northwind doesn't carry furniture, I checked last year.")
team("desks_lena", "2026-11-04 09:06", "Lena", "My cousin's shop in Beaverton does office furniture wholesale.")
team("desks_maya", "2026-11-04 09:10", "Maya",
     "Let's pass. Furniture isn't our business. Bob, refer them to Lena's cousin and keep the IT side for us.")
team("desks_bob", "2026-11-04 09:12", "Bob", "Will do.")
family("play_jess", "2026-11-07 19:00", "Jess", "How did Leo's school play go on Thursday? Sorry I missed the stream!")
family("play_mark", "2026-11-07 19:02", "Mark", "He was the narrator in the school play! Forgot one line but covered it like a pro.")
family("play_jess_2", "2026-11-07 19:03", "Jess", "Aww, so proud. Was he nervous beforehand?")
family("play_dana", "2026-11-07 19:05", "Dana",
       "Terrified all week. But afterwards he told us he's signing up for the spring one too.")
family("play_mark_2", "2026-11-07 19:06", "Mark", "I'll put the video on the shared drive tonight.")

ENTITIES = (
    ScenarioEntity(K, "customer:acme", "customer", "Acme Corporation", ("Acme", "Acme Inc.", "Acme Corp")),
    ScenarioEntity(K, "customer:globex", "customer", "Globex", ("Globex Corporation",)),
    ScenarioEntity(K, "customer:initech", "customer", "Initech"),
    ScenarioEntity(K, "supplier:northwind", "supplier", "Northwind Distribution", ("Northwind",)),
)

# ==================================================================================================
# Questions
# ==================================================================================================
_Q: list[ScenarioQuestion] = []


def q(qid: str, user: str, category: str, text: str, *gold: str, filters: dict[str, Any] | None = None,
      note: str = "") -> None:
    _Q.append(ScenarioQuestion(qid, user, category, text, tuple(gold), filters, note))


# -- time ------------------------------------------------------------------------------------------
q("bob_last_week", K, "time", "What did Bob ask last week?", "bob_ask_globex_paid",
  note="issue example: Bob's message inside last week (Nov 16-22) must be found")
q("acme_october", K, "time", "What happened with Acme in October?",
  "acme_order_monitors", "acme_address_move", "acme_monitors_delivered")
q("friday_meeting", K, "time", "What did we agree at Friday's meeting?", "meeting_holiday")
q("two_weeks_orders", K, "time", "Which orders came in two weeks ago?", "brightwater_order_tablets", "globex_order_docks")
q("recent_problems", K, "time", "What problems came up recently?", "van_breakdown", "acme_flicker_warranty")
q("lena_this_morning", K, "time", "What is Lena working on this morning?", "lena_morning")
q("globex_september", K, "time", "What happened with Globex in September?", "globex_order_laptops", "globex_late_sep")
q("decided_yesterday", D, "time", "What did we decide yesterday?", "dana_decision_xmas")
q("bought_last_month", D, "time", "What did I buy last month?", "dana_running_shoes", "dana_air_fryer", "dana_leo_coat")
q("last_weekend", D, "time", "What did I do last weekend?", "dana_hike", "dana_decision_xmas")
q("told_sunday", D, "time", "What happened with Leo on Sunday?", "dana_tooth",
  note="told the next morning ('yesterday'): said on Monday, about Sunday")
q("told_friday", K, "time", "What did Tom do on November 13?", "tom_install_told",
  note="told on Monday of 'Friday': said on Nov 16, about Nov 13")
q("told_october", D, "time", "What did we do on October 31?", "dana_apples",
  note="'last weekend', said on Monday Nov 2, is Oct 31 - Nov 1")
q("buy_early_october", D, "time", "What did I buy in early October?", "dana_running_shoes",
  note="early October is Oct 1-10: the shoes (Oct 3), not the air fryer (Oct 18) or the coat (Oct 25)")
q("buy_mid_october", D, "time", "What did I buy in mid-October?", "dana_air_fryer")
q("buy_late_october", D, "time", "What did I buy in late October?", "dana_leo_coat")
q("bob_week_of_nov_11", K, "time", "What did Bob ask the week of November 11?", "bob_ask_bulk_docks",
  note="the week of Nov 11 is Mon Nov 9 - Sun Nov 15, not Nov 11 alone")
q("bob_fortnight_ago", K, "time", "What did Bob ask a fortnight ago?", "bob_ask_bulk_docks")
q("bob_first_week_november", K, "time", "What did Bob ask in the first week of November?", "bob_ask_van",
  "bob_ask_support_cover")
q("bob_end_of_october", K, "time", "What did Bob ask at the end of October?", "acme_ask_45")
q("last_time", S, "time", "What did we talk about last time?", "dev_render_slow",
  note="the last conversation: no word or meaning of the question is in it")
q("left_off", K, "time", "Where did we leave off?", "maya_1123_q", "maya_1123_a",
  note="the owner's last chat with the assistant, not the team chat's newer messages")
q("last_asked", D, "time", "What was the last thing I asked you?", "dana_1123_today",
  note="Dana's own last request, not a newer or older question of the family chat's")
q("acme_last_order", K, "time", "When did Acme last order?", "acme_order_monitors",
  note="the newest of Acme's orders (October's monitors), not its first (September's docks)")
q("bob_last_said", K, "time", "What was the last thing Bob said?", "team_1120_bob")
q("tom_last_message", K, "time", "What was Tom's last message?", "k_filler_27")
q("pinecrest_latest", K, "time", "What's the latest on Pinecrest?", "bob_pinecrest_renewal")
q("globex_latest", K, "time", "What's the latest with Globex?", "maya_1123_a",
  note="INV-1187 still unpaid on Nov 23, not the standups that name Globex")
q("leo_last_bought", D, "time", "When did I last buy something for Leo?", "dana_gift_telescope")
q("jess_latest", D, "time", "What did Jess say most recently?", "family_1122_call")
q("mark_last_message", D, "time", "When did Mark last message the family chat?", "fam_filler_06",
  note="Mark's own newest message; 'family chat' is where, not what, and none of his messages says it")
q("xmas_latest", D, "time", "What's the latest on the Christmas plans?", "dana_decision_xmas")
q("warranty_newest", K, "time", "What's the newest warranty claim?", "acme_flicker_warranty")
q("priya_last_post", K, "time", "When did Priya last post in the team chat?", "priya_ask_note")
q("lena_last", K, "time", "What did Lena say last?", "lena_morning")
q("next_week", D, "time", "What do I have next week?", "dana_dentist_appt", "leo_field_trip",
  note="said before the week they are about: 'on Dec 1', 'on Dec 4'")
q("this_week_due", D, "time", "What's due this week?", "leo_field_trip")
q("next_month", K, "time", "What's happening next month?", "meeting_holiday")
q("tax_for_q3", K, "time", "How much did we pay in sales tax for Q3?", "k_tax_filed",
  note="filed in October: Q3 is what the tax is for, not when it was paid")
q("december_ahead", D, "time", "What's coming up in December?", "dana_dentist_appt", "leo_field_trip",
  "mom_birthday", note="asked in November: the coming December, not the last one")

# -- preference ------------------------------------------------------------------------------------
q("priya_reports", K, "preference", "How does Priya like her reports?", "priya_report_pref", "priya_spreadsheet_rant")
q("maya_after_hours", K, "preference", "Can I phone Maya in the evening?", "maya_after_hours")
q("tom_boxes", K, "preference", "How does Tom want boxes labelled?", "team_0917_tom_labels")
q("bob_leads", K, "preference", "Where does Bob want new leads?", "bob_leads_pref")
q("priya_spreadsheet", K, "preference", "Can I send Priya the weekly numbers as a spreadsheet?",
  "priya_report_first", "priya_spreadsheet_rant", note="a permission question: her own rules answer it")
q("bob_leads_here", K, "preference", "Should I post new leads here for Bob?", "bob_leads_pref")
q("tom_todo", K, "preference", "Would Tom mind if I gave him a to-do list for the week?", "team_0824_tom",
  note="'Please don't order me around', said in passing on the first day")
q("brightwater_delivery", K, "preference", "When does Brightwater Dental want deliveries?", "brightwater_delivery_pref")
q("dana_coffee", D, "preference", "How do I take my coffee?", "dana_coffee")
q("dana_diet", D, "preference", "What should a restaurant know about my diet?", "dana_vegetarian", "dana_peanut")
q("dana_seat", D, "preference", "Which seat should you book for me on a plane?", "dana_seat_window",
  note="stated only indirectly: a complaint about the window seat")
q("dana_hotel", D, "preference", "What kind of hotel room do I like?", "dana_hotel_pref")
q("dana_about_me", D, "preference", "What do you know about me?", "dana_family", "dana_vegetarian", "dana_peanut",
  note="the question of Mem0's quickstart: what holds of the user, said in no word of it")

# -- procedure -------------------------------------------------------------------------------------
q("refund", K, "procedure", "How do I issue a refund?", "proc_refund")
q("rush_order", K, "procedure", "What's the process for a rush order?", "proc_rush")
q("new_customer", K, "procedure", "How do we onboard a new business customer?", "proc_new_customer")
q("damaged_delivery", K, "procedure", "What should I do when a delivery arrives damaged?", "proc_damaged")
q("stockpilot_rollback", K, "procedure", "How do I roll back a bad StockPilot update?", "proc_stockpilot_rollback")
q("overdue_invoice", K, "procedure", "How do we handle an overdue invoice?", "proc_overdue")
q("month_end", K, "procedure", "What are the steps to close the month?", "proc_month_end")
q("book_restaurant", D, "procedure", "How should you book a restaurant for me?", "proc_restaurant")
q("flight_delayed", D, "procedure", "What do you do if my flight is delayed?", "proc_flight_delay")

# -- entity ----------------------------------------------------------------------------------------
q("acme_last_month", K, "entity", "What did Acme Corporation order last month?", "acme_order_monitors",
  note="issue example: must rank above 'Initech cancelled their printer order' and 'Rush orders are stressful'")
q("initech_order", K, "entity", "What happened to Initech's order?", "initech_cancel", "initech_order_printers")
q("brightwater_bought", K, "entity", "What has Brightwater Dental bought from us?",
  "brightwater_onboard", "brightwater_order_tablets")
q("globex_orders", K, "entity", "What has Globex ordered?", "globex_order_laptops", "globex_order_docks")
q("northwind", K, "entity", "What does Northwind Distribution supply?", "northwind_supplies")
q("pinecrest", K, "entity", "Where do we stand with Pinecrest Law?", "bob_pinecrest_renewal", "pinecrest_plan")
q("keisha", K, "entity", "Who is Keisha Brown?", "brightwater_contact")
q("who_priya", K, "entity", "Who is Priya?", "k_team",
  note="what she does is said once, under her full name; her own chat messages name her far more often")
q("who_tiago", D, "entity", "Who is Tiago?", "jess_lives_porto", note="'her husband Tiago'")
q("who_alice", K, "entity", "Who's Alice?", "acme_ap_email", note="'Acme's accounts-payable contact is Alice Moreau'")
q("leo_trip", D, "entity", "When is Leo's field trip to OMSI?", "leo_field_trip")
q("dr_patel", D, "entity", "When am I seeing Dr. Patel?", "dana_dentist_appt")

# -- speaker ---------------------------------------------------------------------------------------
q("priya_trial", K, "speaker", "What did Priya think of the trial?", "priya_trial_opinion",
  note="issue example: Priya is only the speaker (role), her name is not in the text")
q("tom_rush", K, "speaker", "What did Tom say about rush orders?", "rush_stress")
q("lena_trial", K, "speaker", "What did Lena say about the Ledgerly trial?", "lena_trial_opinion")
q("bob_trial", K, "speaker", "What was Bob's take on Ledgerly?", "bob_trial_opinion")
q("maya_prices", K, "speaker", "What did Maya say about price increases?", "maya_no_price_increase")
q("lena_backlog", K, "speaker", "What did Lena say about the ticket queue in October?", "lena_backlog")
q("tom_asked", K, "speaker", "What did Tom ask last week?", "tom_ask_aisle")
q("priya_asked", K, "speaker", "What did Priya ask for last week?", "priya_ask_note")
q("lena_questions", K, "speaker", "Which questions did Lena bring up last week?", "lena_holiday_q")
q("mark_hotel", D, "speaker", "What did Mark say about the Porto hotel?", "mark_hotel_noise")
q("jess_gift", D, "speaker", "What did Jess suggest for Mum's birthday?", "family_1013_jess")

# -- multihop --------------------------------------------------------------------------------------
q("acme_monitor_supplier", K, "multihop", "Which supplier do the monitors Acme ordered come from?",
  "acme_order_monitors", "northwind_supplies")
q("monitor_customer_email", K, "multihop", "What is the invoice e-mail of the customer that ordered 30 monitors?",
  "acme_order_monitors", "acme_ap_email")
q("laptop_customer_terms", K, "multihop", "What payment terms does the customer who bought 15 laptops have?",
  "globex_order_laptops", "globex_terms")
q("early_clinic_signoff", K, "multihop", "Who signs off purchases at the clinic that wants deliveries before 8:30?",
  "brightwater_delivery_pref", "brightwater_contact")
q("priya_tool_price", K, "multihop", "How much does the accounting tool Priya liked cost?",
  "priya_trial_opinion", "ledgerly_price")
q("initech_desks_decision", K, "speaker", "What did Maya decide about the standing desks Initech asked for?",
  "desks_maya", note="her answer comes three turns after Bob's question and names neither desks nor Initech")
q("leo_another_play", D, "multihop", "Does Leo want to be in another school play?", "play_dana",
  note="told two turns after the message about the play: 'the spring one', not 'play'")
q("late_laptops_renewal", K, "multihop", "What did the law firm whose laptops arrived late renew?",
  "pinecrest_complaint", "bob_pinecrest_renewal")
q("fly_to_sister", D, "multihop", "When do I fly to the city my sister lives in?", "jess_lives_porto",
  "dana_flight_porto")
q("leo_dentist_phone", D, "multihop", "What's the phone number of Leo's dentist?", "leo_dentist", "patel_phone")

# -- paraphrase (no content word shared with the gold) ---------------------------------------------
q("para_festive", K, "paraphrase", "Are we shut over the festive break?", "meeting_holiday")
q("para_truck", K, "paraphrase", "Did our truck have trouble on the highway?", "van_breakdown")
q("para_slow_payers", K, "paraphrase", "What's our routine for chasing clients who pay late?", "proc_overdue")
q("para_bookkeeping", K, "paraphrase", "Which month's accounting got wrapped up?", "priya_books_closed")
q("para_tax", K, "paraphrase", "Did we settle what the government wanted for the summer quarter?", "k_tax_filed")
q("para_sit", D, "paraphrase", "Where do I like to sit when flying?", "dana_seat_window_a")
q("para_meat", D, "paraphrase", "Do I eat beef or chicken?", "dana_vegetarian")
q("para_lesson", D, "paraphrase", "Which weekday are my son's keyboard classes?", "piano_thursday")
q("para_sister_home", D, "paraphrase", "Which town is my sibling based in?", "jess_lives_porto")

# -- update (current truth) ------------------------------------------------------------------------
q("acme_terms", K, "update", "What are Acme's payment terms?", "acme_terms_net45")
q("acme_carrier", K, "update", "Which carrier do we use for Acme shipments?", "acme_carrier_new")
q("globex_contact", K, "update", "Who is our contact at Globex?", "globex_contact_new")
q("warehouse_hours", K, "update", "What time does the warehouse close?", "k_hours_new")
q("monitor_price", K, "update", "How much do we charge for the Dell P2723QE?", "monitor_price_new")
q("acme_address", K, "update", "Where do Acme deliveries go?", "acme_address_new")
q("dana_gym", D, "update", "Which gym do I go to?", "gym_new")
q("leo_piano", D, "update", "When is Leo's piano lesson?", "piano_thursday")
q("car_insurance", D, "update", "Who is my car insured with?", "insurance_new")
q("past_gym", D, "update", "What was my old gym?", "gym_old",
  note="a question about what no longer holds: the superseded fact answers it")
q("past_insurance", D, "update", "Who was my car insured with before?", "insurance_old")
q("past_carrier", K, "update", "Which carrier did we use for Acme before DHL?", "acme_carrier_old")
q("past_address", K, "update", "What was Acme's old address?", "acme_address_old")
q("past_contact", K, "update", "Who was our contact at Globex before Sofia?", "globex_contact_old")
q("past_piano", D, "update", "Which day was Leo's piano lesson before it moved?", "piano_tuesday")
q("past_hours", K, "update", "What time did the warehouse close before the winter hours?", "k_hours_old")
q("past_price", K, "update", "What did we charge for the P2723QE before the price cut?", "monitor_price_old")
q("past_terms", K, "update", "What were Acme's payment terms originally?", "acme_terms_net30")
q("gym_in_september", D, "update", "Which gym did I go to in September?", "gym_old",
  note="what held in a past month: superseded since, and the question says no 'old'")
q("carrier_in_october", K, "update", "Which carrier did we use for Acme in October?", "acme_carrier_old")
q("gym_on_october_28", D, "update", "Which gym did I go to on October 28?", "gym_new",
  note="what held then still holds: the current fact, not a message of that day")
q("price_in_october", K, "update", "What was the Dell P2723QE's price in October?", "monitor_price_old")

# -- filter (exactly one memory matches) -----------------------------------------------------------
q("filter_ticket", K, "filter", "What happened?", "stockpilot_incident", filters={"metadata": {"ticket": "INC-2207"}})
q("filter_warranty", K, "filter", "Which claim is open?", "acme_flicker_warranty", filters={"tags_all": ["warranty"]})
q("filter_summary_oct", K, "filter", "How did the month go?", "summary_oct",
  filters={"kinds": ["summary"], "tags_all": ["october"]})
q("filter_tax", K, "filter", "How much did we pay?", "k_tax_filed", filters={"tags_any": ["tax"]})
q("filter_po", K, "filter", "Was it on time?", "pinecrest_rush", filters={"metadata": {"po": "PO-5602"}})
q("filter_passport", D, "filter", "When does it expire?", "dana_passport", filters={"tags_all": ["passport"]})

# -- verbatim (stored text must come back intact) --------------------------------------------------
q("acme_invoice_email", K, "verbatim", "Where should Acme invoices be e-mailed?", "acme_ap_email")
q("acme_webhook_url", K, "verbatim", "Where do we post Acme's order confirmations?", "acme_webhook")
q("stockpilot_version", K, "verbatim", "Which StockPilot version broke the scanner?", "tom_231")
q("refund_approver", K, "verbatim", "Who approved the refund for Acme's damaged cable?", "acme_refund_approved")
q("value_webhook", K, "verbatim", "What's the webhook URL for Acme?", "acme_webhook",
  note="the memory says 'hooks', not 'webhook': the URL it holds is what is asked for")
q("value_alice_email", K, "verbatim", "What's Alice's email?", "acme_ap_email")
q("value_po", K, "verbatim", "What's Acme's PO number?", "acme_order_monitors")
q("value_rma", K, "verbatim", "What's the RMA number?", "acme_flicker_warranty")
q("value_policy", D, "verbatim", "What's my policy number?", "insurance_new")
q("value_patel_phone", D, "verbatim", "What's Dr. Patel's phone number?", "patel_phone")

# -- technical (a long user-assistant technical chat) ----------------------------------------------
q("tech_retry", S, "technical", "Write a helper that retries a failed HTTP call to the tax API.", "dev_intro",
  note="the instruction (httpx, type hints) is one sentence of a long message about the worker")
q("tech_queue", S, "technical", "Which job queue did we settle on for the PDF worker, and why?",
  "dev_queue_decision", "dev_queue_ok")
q("tech_migration_error", S, "technical", "What error did the index migration hit on staging?", "dev_traceback")
q("tech_review", S, "technical",
  "Review this handler for me: @app.post('/customers') async def create(body: dict) -> dict: "
  "return await db.insert('customers', body)", "dev_review_rule")
q("tech_flaky", S, "technical", "How did we fix the test that failed at the end of the month?",
  "dev_flaky_a", "dev_flaky")
q("tech_test_request", S, "technical", "Write a test for the invoice total calculation.", "dev_pytest")
q("tech_review_first", S, "technical", "What should you check first when reviewing my code?", "dev_review_rule",
  note="the instruction is a clause of a long message: 'point out security problems first ... skip style nitpicks'")
q("tech_python", S, "technical", "Which Python version does the invoicing service need?",
  "dev_pyproject", "dev_docker_a")
q("tech_logging", S, "technical", "Add logging to the PDF render step.", "dev_logging")

#: Question id -> strings the gold memory's returned content must contain unchanged.
INTACT: dict[str, tuple[str, ...]] = {
    "acme_invoice_email": ("alice@acme.io",),
    "acme_webhook_url": ("https://hooks.acme.io/v1/orders",),
    "stockpilot_version": ("version 2.3.1",),
    "refund_approver": ("Dr. Smith from Acme Inc. approved the $18.50 refund.",),
}

SCENARIO = Scenario(
    now=NOW,
    memories=tuple(_MEMORIES),
    questions=tuple(_Q),
    entities=ENTITIES,
    categories=CATEGORIES,
)
