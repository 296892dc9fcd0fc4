"""Write the demo workspace of Context Studio: Northwind Support, a home-appliance retailer's desk.

Run ``python profiles/demo/build_demo.py`` to rewrite ``workspace.yaml`` next to this file, or
``--stdout`` to print it instead. The output is a pure function of this file: no clock, no
randomness, so the committed workspace.yaml must equal a fresh run byte for byte.

Dates are written for the demo's fixed "now" (2026-11-29): some material is fresh, some is
stale under the profiles' currentness limits, and some is undated, so that currentness matters.
"""

import sys
import textwrap
from pathlib import Path

import yaml

OUTPUT = Path(__file__).with_name("workspace.yaml")


def prose(text: str) -> str:
    """Return ``text`` unwrapped: lines joined by spaces, paragraphs by one blank line."""
    paragraphs = textwrap.dedent(text).strip().split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


def item(path: str, title: str, body: str, **metadata) -> dict:
    """Return one workspace item; metadata keys whose value is None are left out."""
    return {
        "path": path,
        "title": title,
        "body": prose(body),
        "metadata": {k: v for k, v in metadata.items() if v is not None},
    }


# --------------------------------------------------------------------------------------------
# Consumers: who reads the context.

CONSUMERS = [
    {
        "key": "support-assistant",
        "name": "Customer support assistant",
        "render": {"format": "markdown", "includeCurrentness": False},
    },
    {
        "key": "qa-reviewer",
        "name": "QA reviewer",
        "render": {"format": "xml", "includeCurrentness": True},
    },
    {
        "key": "ops-agent",
        "name": "Internal ops agent",
        "render": {"format": "markdown", "includeCurrentness": True},
    },
    {
        "key": "ticket-summarizer",
        "name": "Ticket summarizer",
        "render": {"format": "markdown", "includeCurrentness": False},
    },
]

# --------------------------------------------------------------------------------------------
# Policies: the rules agents and assistants must follow. A few are past their review date.

POLICIES = [
    item(
        "refunds/original-payment.md",
        "Refunds go back to the original payment method",
        """
        Approved refunds are always issued to the payment method used for the order. We cannot
        send a card refund to a different card, a bank account or a gift card, even when the
        customer asks for it.

        Card refunds leave Northwind within 2 business days of approval; the customer's bank
        then takes 5 to 10 business days to post them. PayPal refunds post within 24 hours.
        Orders paid with store credit are refunded as store credit, immediately.

        If the original card has expired or been cancelled, the bank forwards the refund to the
        replacement card. Never promise a date earlier than the bank's window.
        """,
        updated="2026-09-02",
        summary="Refunds go to the original payment method; card refunds take 5–10 business "
        "days after approval, PayPal 24 hours, store credit immediately.",
    ),
    item(
        "refunds/when-approved.md",
        "When a refund is approved",
        """
        A return refund is approved when the warehouse scans the returned parcel, usually 1 to 3
        business days after it reaches us. The customer receives an email titled "Your refund is
        on its way" at that moment.

        Damaged-on-arrival and lost-parcel refunds are approved by the agent directly, without
        waiting for a return. Record the approval reason in the ticket.

        If a return was delivered to us more than 5 business days ago and no refund is
        approved, the parcel is probably stuck at intake: escalate to the Returns team
        (tier 2) instead of asking the customer to wait longer.
        """,
        updated="2026-08-18",
    ),
    item(
        "refunds/partial-refunds.md",
        "Partial refunds and restocking fees",
        """
        Returns of unopened items are refunded in full, including the original shipping cost
        when the return is our fault (wrong item, damage, defect).

        Opened items that are returned in resellable condition are refunded in full. Items
        returned with missing parts or accessories are refunded minus the price of the missing
        part, listed on the product's spare-parts page. We never charge a percentage
        restocking fee.
        """,
        updated="2026-03-10",
    ),
    item(
        "returns/standard-window.md",
        "30-day return window",
        """
        Customers can return any item within 30 days of delivery for a full refund, no reason
        needed. The window starts on the delivery date shown in tracking, not the order date.

        Return labels are free for orders over $35; below that a $6.95 label fee is deducted
        from the refund. Large items (over 30 kg) are collected by a freight carrier: book the
        pickup from the admin order page.
        """,
        updated="2026-07-01",
        summary="Any item can be returned within 30 days of delivery; free label over $35.",
    ),
    item(
        "returns/plus-window.md",
        "Northwind Plus: 60-day returns",
        """
        Northwind Plus members get a 60-day return window and free return labels on every
        order, whatever its value.

        The extended window applies to orders placed while the membership was active. A
        customer who cancelled Plus keeps the 60-day window for orders placed before the
        cancellation date.
        """,
        updated="2026-07-01",
    ),
    item(
        "returns/opened-appliances.md",
        "Returning opened small appliances",
        """
        Opened small appliances (espresso machines, grinders, mixers, air fryers, kettles) can
        be returned within the normal window. Ask the customer to descale or clean the
        appliance and to pack it in any sturdy box; the original box is not required.

        Appliances that show heavy use or limescale damage are not refunded: offer a warranty
        repair instead. Our warehouse decides, not the agent; never promise the outcome of an
        inspection.
        """,
        updated="2026-10-05",
    ),
    item(
        "returns/gift-returns.md",
        "Gift returns",
        """
        A gift can be returned by its recipient with the gift receipt or the order number. The
        refund is issued as store credit to the recipient; the buyer is not told.

        Without a gift receipt or order number, we can only offer store credit at the item's
        lowest price of the last 60 days.
        """,
        updated="2024-12-02",
    ),
    item(
        "returns/holiday-extension.md",
        "Holiday return extension",
        """
        Orders placed between 1 November and 24 December can be returned until 31 January of
        the following year, whatever the standard window.

        The extension is applied automatically to the return portal; no code is needed.
        """,
        updated="2025-10-20",
    ),
    item(
        "shipping/delivery-times.md",
        "Delivery times and cut-off",
        """
        Orders placed before 2 pm Eastern on a business day leave our warehouse the same day.
        Standard delivery takes 3 to 5 business days, Express 1 to 2 business days.

        Large items are delivered by appointment: the freight carrier calls the customer within
        2 business days of dispatch to book a slot.
        """,
        updated="2026-06-15",
    ),
    item(
        "shipping/lost-parcels.md",
        "Lost parcels",
        """
        A parcel is considered lost when its tracking has shown no movement for 7 calendar days,
        or when the carrier marks it as lost.

        For a lost parcel, offer the customer the choice between an immediate reshipment and a
        full refund. Do not make them wait for the carrier's investigation: we claim from the
        carrier ourselves.
        """,
        updated="2026-09-20",
        summary="After 7 days without tracking movement a parcel is lost: reship or refund "
        "at once, the customer's choice.",
    ),
    item(
        "shipping/damaged-on-arrival.md",
        "Damaged on arrival",
        """
        When an item arrives damaged, ask for two photos: the damaged item and the outer box
        with its shipping label. Photos sent within 14 days of delivery are enough; we do not
        need the item back unless it is worth more than $300.

        Offer a replacement first, a refund second. Replacements ship Express at no cost.
        """,
        updated="2026-05-12",
    ),
    item(
        "warranty/standard.md",
        "Two-year warranty",
        """
        Every appliance sold by Northwind carries a two-year warranty from the delivery date,
        covering defects in materials and workmanship. Wear parts (gaskets, filters, brushes,
        burrs) are covered for six months.

        Damage from limescale, drops or use with the wrong voltage is not covered.
        """,
        updated="2026-02-01",
    ),
    item(
        "warranty/espresso-machines.md",
        "Espresso machines and grinders: warranty repairs",
        """
        Espresso machines and grinders under warranty are repaired, not replaced, unless the
        same fault returns after a repair. We send a prepaid box; the repair takes 10 business
        days in the workshop.

        Customers with Northwind Plus get a loan machine during the repair.
        """,
        updated="2026-04-22",
    ),
    item(
        "pricing/price-adjustment.md",
        "Price adjustments within 14 days",
        """
        If the price of an item drops within 14 days of delivery, the customer can ask for the
        difference back as a refund to the original payment method. Flash sales and
        clearance prices are excluded.
        """,
        updated="2025-03-14",
    ),
    item(
        "billing/plus-subscription.md",
        "Northwind Plus billing",
        """
        Northwind Plus costs $9 a month or $89 a year and renews automatically on the same day
        of the month (or year) it started. Members can cancel at any time; the membership runs
        until the end of the paid period and is not refunded pro rata.

        A renewal charged within 48 hours of a cancellation is refunded in full on request.
        """,
        updated="2026-10-28",
    ),
    item(
        "billing/duplicate-charges.md",
        "Duplicate charges and authorisation holds",
        """
        A second charge for the same amount is often an authorisation hold that the bank has
        not yet released. Holds disappear by themselves within 7 days; check the payments tab
        before promising anything.

        If the payments tab shows two captured charges, refund the duplicate at once and tell
        the customer both the refund date and the bank's 5 to 10 business day window.
        """,
        updated="2026-11-03",
        summary="Check whether a duplicate is an authorisation hold (gone within 7 days) or "
        "a second captured charge (refund it at once).",
    ),
    item(
        "billing/chargebacks.md",
        "Chargebacks",
        """
        When a customer opens a chargeback with their bank, the order is frozen: no refund,
        replacement or return label may be issued until the bank closes the dispute. A refund
        during a dispute would pay the customer twice.

        Tell the customer that we are answering their bank and that the bank will inform them
        of the outcome. If they want the dispute withdrawn to get a faster refund, they must
        ask their bank, not us.
        """,
        updated="2026-08-30",
    ),
    item(
        "accounts/identity-verification.md",
        "Verifying identity before account changes",
        """
        Before changing an email address, a delivery address of an order in progress or a
        payment method, verify the customer's identity: a code sent to the email on file, or
        the last four digits of the card together with the billing postcode.

        Never read out personal data that the customer has not given first.
        """,
        updated="2026-06-30",
    ),
    item(
        "accounts/lockouts.md",
        "Account lockouts",
        """
        An account locks for 30 minutes after five failed sign-in attempts. Agents cannot
        unlock it earlier; they can send a password reset link once the identity is verified.

        Accounts locked by the fraud team show a red banner in the admin. Do not discuss the
        reason with the customer: hand the ticket to Trust & Safety.
        """,
        updated="2026-01-15",
    ),
    item(
        "privacy/data-requests.md",
        "Data access and deletion requests",
        """
        Customers may request a copy of their data or the deletion of their account. Log the
        request with the "privacy" tag; the privacy team answers within 30 days.

        Orders of the last 7 years are kept for tax purposes even after deletion.
        """,
        updated="2025-06-01",
    ),
    item(
        "escalation/complaints.md",
        "Formal complaints and escalation",
        """
        A customer who says "complaint", asks for a manager, or has contacted us three times
        about the same problem gets a tier-2 agent. Tier 2 answers within one business day.

        Business accounts with a dedicated account manager are always escalated to that
        manager, copied on the ticket.
        """,
        updated="2026-09-09",
    ),
    item(
        "communication/tone.md",
        "How we write to customers",
        """
        Write like a helpful neighbour: plain words, short sentences, the customer's name once.
        Say what we will do and when, then what the customer needs to do, if anything.

        Never blame the carrier or the bank; explain how long their part takes.
        """,
    ),
    item(
        "business/invoicing.md",
        "Business accounts: invoices and Net 30",
        """
        Business accounts pay by invoice with 30-day terms (Net 30). Invoices are emailed to
        the account's billing contact when the order ships, and credit notes when a return is
        approved.

        Business orders are credited, not paid back: the credit note reduces the next
        invoice, or is settled by bank transfer if the customer asks.
        """,
        updated="2026-04-01",
    ),
]

# --------------------------------------------------------------------------------------------
# Customers: one profile each; the itemFilter on customer_id keeps every request to one customer.

CUSTOMERS = [
    (
        "C-1001",
        "Dana Reyes",
        """
        Northwind Plus member since April 2023 (annual plan). Lives in Portland, Oregon.
        Prefers email and usually answers within a day.

        Loyal customer, 11 orders, 3 returns, never a dispute. Mentioned in September that she
        buys gifts for her coffee-loving family every December.
        """,
        dict(plan="plus-annual", since="2023-04-12", channel="email", updated="2026-11-27"),
    ),
    (
        "C-1002",
        "Lee Park",
        """
        Free account since 2025. Lives in Austin, Texas. Prefers chat.

        Has an open chargeback with their bank on order NW-57790 since 2026-11-20: the order
        is frozen until the bank decides.
        """,
        dict(plan="free", since="2025-02-08", channel="chat", updated="2026-11-22"),
    ),
    (
        "C-1003",
        "Priya Natarajan (Brightside Cafés)",
        """
        Business account: Brightside Cafés, 14 coffee shops in the Chicago area. Priya is the
        operations lead and the billing contact. Pays by invoice, Net 30.

        Dedicated account manager: Owen Blake (tier 2). Any escalation is copied to him.
        High volume of grinder and milk-frother orders; prefers phone for urgent problems.
        """,
        dict(plan="business", since="2022-09-01", channel="phone", updated="2026-11-26"),
    ),
    (
        "C-1004",
        "Marcus Webb",
        """
        Free account since 2021. Lives in Columbus, Ohio. Prefers email.

        Last contact in June 2025 about an air fryer basket; the replacement basket was
        shipped then.
        """,
        dict(plan="free", since="2021-03-30", channel="email", updated="2025-06-18"),
    ),
    (
        "C-1005",
        "Sofia Lindqvist",
        """
        Signed up on 2026-11-24; no order yet. Lives in Minneapolis, Minnesota. Prefers chat.
        Asked about Northwind Plus before her first purchase.
        """,
        dict(plan="free", since="2026-11-24", channel="chat", updated="2026-11-28"),
    ),
    (
        "C-1006",
        "Tomás Herrera",
        """
        Northwind Plus member since January 2026 (monthly plan). Lives in Phoenix, Arizona.
        Prefers chat, Spanish or English.

        Bought a stand mixer for a bakery class; the bowl arrived cracked.
        """,
        dict(plan="plus-monthly", since="2026-01-09", channel="chat", updated="2026-11-25"),
    ),
    (
        "C-1007",
        "Aiko Tanaka",
        """
        Free account since 2019, customer of the old store before the 2024 helpdesk migration.
        Lives in San Jose, California. Prefers email.

        Owns a Barista Pro espresso machine and a Conical grinder; the grinder is in warranty
        repair.
        """,
        dict(plan="free", since="2019-06-02", channel="email", updated="2026-11-24"),
    ),
    (
        "C-1008",
        "Grace Okafor",
        """
        Northwind Plus member since 2024 (monthly plan). Lives in Atlanta, Georgia. Prefers
        email; phone only in the evening.

        Several billing questions this year. Says she was charged twice for the November Plus
        renewal.
        """,
        dict(plan="plus-monthly", since="2024-05-03", channel="email", updated="2026-11-21"),
    ),
    (
        "C-1009",
        "Henrik Olsen",
        """
        Free account since 2023. Lives in Seattle, Washington. Prefers phone.

        Locked out of his account after several password attempts; his email address on file
        is an old work address he can no longer read.
        """,
        dict(plan="free", since="2023-08-19", channel="phone", updated="2026-11-26"),
    ),
    (
        "C-1010",
        "Fatima Zahra Benali",
        """
        Northwind Plus member since 2025 (annual plan). Lives in Denver, Colorado. Prefers
        email.

        Waiting for an air purifier whose tracking has not moved since 2026-11-20.
        """,
        dict(plan="plus-annual", since="2025-07-14", channel="email", updated="2026-11-28"),
    ),
    (
        "C-1011",
        "Noah Fischer",
        """
        Free account since 2024. Lives in Boston, Massachusetts. Prefers email.

        Bought a blender on 2026-11-13; its price dropped by $40 on Black Friday.
        """,
        dict(plan="free", since="2024-01-22", channel="email", updated="2026-11-28"),
    ),
    (
        "C-1012",
        "Isabella Conti",
        """
        Free account since 2026. Lives in Providence, Rhode Island. Prefers chat.

        Received a knife block as a birthday gift and would like to exchange it; she has no
        gift receipt.
        """,
        dict(plan="free", since="2026-10-30", channel="chat", updated="2026-11-23"),
    ),
]

# --------------------------------------------------------------------------------------------
# Tickets: (id, customer, updated or None for tickets migrated without a date, status, channel,
# title, body). Ticket ids grow with time; the legacy ones come from the 2024 migration.

TICKETS = [
    # Dana Reyes — a returned espresso machine whose refund has not arrived.
    (
        "T-20931",
        "C-1001",
        "2026-11-27",
        "open",
        "email",
        "Refund for returned espresso machine not received",
        """
        Customer: "I sent the Barista Pro back on November 10th and got the email saying the
        refund was approved on the 18th. It's been 9 days and nothing on my Visa. Can you check
        where my refund is?"

        Agent note: refund of $649.00 approved 2026-11-18 on order NW-58213, captured by the
        payment processor on 2026-11-19.
        """,
    ),
    (
        "T-20544",
        "C-1001",
        "2026-11-08",
        "solved",
        "email",
        "Return label for the espresso machine",
        """
        Customer asked for a return label for the Barista Pro (order NW-58213): "It's lovely
        but too big for our kitchen." Plus member, label sent free of charge; drop-off at any
        UPS point.
        """,
    ),
    (
        "T-19876",
        "C-1001",
        "2026-09-21",
        "solved",
        "chat",
        "Kettle lid rattles when boiling",
        """
        Gooseneck kettle from order NW-57102 rattles at the boil. Explained that the lid vents
        steam by design; customer satisfied, no return.
        """,
    ),
    (
        "T-17310",
        "C-1001",
        "2026-03-30",
        "solved",
        "email",
        "Napkins colour differs from the photo",
        """
        Linen napkins (order NW-51877) are more grey than sage. Offered a return; customer kept
        them with a $10 goodwill credit.
        """,
    ),
    (
        "T-09102",
        "C-1001",
        None,
        "solved",
        "email",
        "Dutch oven delivered to the neighbour",
        """
        Migrated from the old helpdesk. Parcel left with the neighbour at number 14 without a
        note; customer found it the next day.
        """,
    ),
    # Lee Park — chargeback on a returned vacuum.
    (
        "T-20812",
        "C-1002",
        "2026-11-22",
        "pending",
        "chat",
        "Charged for a vacuum I returned",
        """
        Customer: "I returned the Halo robot vacuum a month ago and still don't have my money,
        so I called my bank." A chargeback was opened on 2026-11-20 on order NW-57790; the
        return had been scanned at the warehouse on 2026-11-19.

        Agent note: order frozen by the dispute. Waiting for the bank.
        """,
    ),
    (
        "T-20388",
        "C-1002",
        "2026-10-30",
        "solved",
        "chat",
        "Start a return for the Halo vacuum",
        """
        Vacuum gets stuck under the sofa. Return started in the portal, label sent. Customer
        asked how long the refund takes; told 5 to 10 business days after we receive it.
        """,
    ),
    (
        "T-18007",
        "C-1002",
        "2026-05-14",
        "solved",
        "chat",
        "Promo code not applied",
        """
        Code SPRING15 did not apply to a sale item. Explained that codes exclude sale prices.
        """,
    ),
    # Priya Natarajan, Brightside Cafés — a long business history.
    (
        "T-20901",
        "C-1003",
        "2026-11-26",
        "open",
        "phone",
        "Escalation: six grinders failing across three cafés",
        """
        Call with Priya Natarajan, operations lead at Brightside Cafés, copied to Owen Blake
        (account manager). Six Conical Commercial grinders from order NW-56120, delivered in
        August to the Wicker Park, Logan Square and Evanston cafés, stopped grinding within the
        same week. All six show the same symptom: the motor hums, the burrs do not turn, and
        the thermal cut-out trips after about ten seconds. Baristas have switched to the two
        spare grinders and to pre-ground coffee, which Priya says is hurting their morning
        trade.

        Priya's requests, in her order: loan grinders for the three cafés before Saturday;
        an engineer visit rather than shipping six commercial grinders back; a written
        explanation of the fault, because she is deciding whether to standardise the other
        eleven cafés on the same model; and a credit for the lost sales, which she estimates
        at $4,200 over the week.

        What we know: the workshop has seen two similar failures this month from the same
        production batch (serial numbers starting CC24-33). Engineering suspects a faulty
        motor capacitor supplied in July. No recall has been decided. The warranty covers
        the repair and, for business accounts, a loan unit within 3 business days; it does not
        cover lost revenue. Owen can offer a goodwill credit of up to 10% of the order value
        without approval.

        Next steps agreed on the call: Owen to confirm the loan units by Friday noon; ops to
        check stock of loan grinders in the Chicago depot (three listed, one reserved); the
        workshop to send the batch analysis to Owen by Tuesday; Priya to send photos of the
        serial plates of all six grinders. Priya asked to be called, not emailed, with the
        loan-unit confirmation. Tone on the call was calm but firm; she mentioned that a
        competitor has offered to replace all their grinders at cost.

        Follow-up: photos of four serial plates received at 4:10 pm, all CC24-33. Two cafés
        still to send theirs. Priya repeated that Saturday is their busiest day.
        """,
    ),
    (
        "T-20655",
        "C-1003",
        "2026-11-14",
        "solved",
        "email",
        "Invoice INV-88410 shows the wrong PO number",
        """
        Invoice for order NW-57930 referenced PO 4471 instead of 4417. Credit note and
        corrected invoice issued.
        """,
    ),
    (
        "T-20310",
        "C-1003",
        "2026-10-22",
        "solved",
        "phone",
        "Milk frothers delivered to the wrong café",
        """
        Twelve milk frothers for Evanston were delivered to Logan Square. Freight carrier
        moved them the next morning at our cost.
        """,
    ),
    (
        "T-19744",
        "C-1003",
        "2026-09-12",
        "solved",
        "email",
        "Request for a tax-exempt certificate on file",
        """
        Priya sent the updated Illinois resale certificate. Uploaded to the account; future
        invoices exclude sales tax.
        """,
    ),
    (
        "T-19102",
        "C-1003",
        "2026-08-19",
        "solved",
        "phone",
        "Delivery appointment for 14 grinders",
        """
        Booked staggered freight deliveries for order NW-56120 across three cafés before 9 am
        to avoid service hours.
        """,
    ),
    (
        "T-18420",
        "C-1003",
        "2026-06-05",
        "solved",
        "email",
        "Volume pricing for espresso cups",
        """
        Asked for a quote on 600 espresso cups. Quote sent at the business tier price; order
        placed as NW-54402.
        """,
    ),
    (
        "T-17201",
        "C-1003",
        "2026-03-18",
        "solved",
        "email",
        "Late payment reminder sent by mistake",
        """
        Automatic reminder sent on an invoice paid on time; the payment had been matched to the
        wrong account. Corrected and apologised.
        """,
    ),
    (
        "T-15877",
        "C-1003",
        "2026-01-08",
        "solved",
        "phone",
        "Knock boxes cracked in transit",
        """
        Four of twenty knock boxes cracked. Photos received, replacements sent Express.
        """,
    ),
    (
        "T-12460",
        "C-1003",
        "2025-08-27",
        "solved",
        "email",
        "Onboarding two new cafés",
        """
        Added the Evanston and Oak Park delivery addresses to the business account.
        """,
    ),
    # Marcus Webb — returning after more than a year.
    (
        "T-12044",
        "C-1004",
        "2025-06-18",
        "solved",
        "email",
        "Replacement air fryer basket shipped",
        """
        Replacement basket for the AirCrisp 5L (order NW-47730) shipped under warranty.
        Customer asked whether the new basket uses the same coating; told it does.
        """,
    ),
    (
        "T-11890",
        "C-1004",
        "2025-06-02",
        "solved",
        "email",
        "Air fryer basket coating peeling",
        """
        Customer: "The non-stick coating is coming off the basket after four months." Photos
        received; warranty replacement approved.
        """,
    ),
    (
        "T-10455",
        "C-1004",
        "2025-02-11",
        "solved",
        "chat",
        "How to pair the air fryer with the app",
        """
        Walked the customer through pairing over 2.4 GHz Wi-Fi.
        """,
    ),
    (
        "T-09311",
        "C-1004",
        None,
        "solved",
        "email",
        "Order confirmation never received",
        """
        Migrated from the old helpdesk. Confirmation email went to spam; resent.
        """,
    ),
    # Sofia Lindqvist — a brand-new customer.
    (
        "T-20940",
        "C-1005",
        "2026-11-28",
        "open",
        "chat",
        "Does Plus cover furniture delivery?",
        """
        Customer: "Before I order a dining table, does Northwind Plus include free delivery
        for big items, and can I return it if it doesn't fit?"
        """,
    ),
    # Tomás Herrera — a stand mixer with a cracked bowl.
    (
        "T-20902",
        "C-1006",
        "2026-11-25",
        "open",
        "chat",
        "Stand mixer bowl arrived cracked",
        """
        Customer: "The Aster mixer came today and the steel bowl has a crack along the rim. I
        have a class on Saturday." Photos of the bowl and the box received the same day.
        """,
    ),
    (
        "T-19530",
        "C-1006",
        "2026-09-03",
        "solved",
        "chat",
        "Which mixer attachment for pasta?",
        """
        Recommended the pasta roller attachment; customer ordered it (NW-57011).
        """,
    ),
    (
        "T-16002",
        "C-1006",
        "2026-01-20",
        "solved",
        "chat",
        "Plus membership charged in pesos?",
        """
        Bank showed a foreign transaction fee. Explained that Northwind charges in USD only;
        the fee came from the card's currency setting.
        """,
    ),
    # Aiko Tanaka — a grinder in warranty repair, with a legacy ticket from before 2024.
    (
        "T-20877",
        "C-1007",
        "2026-11-24",
        "pending",
        "email",
        "When will my grinder come back from repair?",
        """
        Customer: "You received the grinder on the 12th. The email said ten business days.
        Do you have an update?" Workshop status: motor replaced, final test on 2026-11-30.
        """,
    ),
    (
        "T-20415",
        "C-1007",
        "2026-11-02",
        "solved",
        "email",
        "Grinder stopped mid-grind",
        """
        Conical grinder (order NW-55318) stops after a few seconds. Warranty repair opened;
        prepaid box sent.
        """,
    ),
    (
        "T-19020",
        "C-1007",
        "2026-08-14",
        "solved",
        "email",
        "How often should I descale?",
        """
        Sent the descaling guide: every 2 months with hard water, every 4 with soft water.
        """,
    ),
    (
        "T-08215",
        "C-1007",
        None,
        "solved",
        "email",
        "Burr size question before buying",
        """
        Migrated from the old helpdesk. Asked whether the Conical grinder's 40 mm burrs suit
        pour-over as well as espresso; answered yes, with the recommended settings.
        """,
    ),
    # Grace Okafor — a double charge, after a year of billing questions.
    (
        "T-20790",
        "C-1008",
        "2026-11-21",
        "open",
        "email",
        "Charged twice for Plus in November",
        """
        Customer: "My statement shows two $9.00 charges from Northwind on November 1st. I only
        have one account. Please refund the second one." Payments tab: one captured charge,
        one authorisation hold from a failed first attempt.
        """,
    ),
    (
        "T-20133",
        "C-1008",
        "2026-10-11",
        "solved",
        "email",
        "Switch Plus from monthly to annual?",
        """
        Explained that switching takes effect at the next renewal and that the annual plan
        saves $19 a year. Customer chose to stay monthly for now.
        """,
    ),
    (
        "T-19688",
        "C-1008",
        "2026-09-08",
        "solved",
        "phone",
        "Card declined on a toaster order",
        """
        Bank declined the payment for order NW-57340 as suspected fraud. Customer approved it
        in her banking app; order went through on the second try.
        """,
    ),
    (
        "T-19012",
        "C-1008",
        "2026-08-12",
        "solved",
        "email",
        "Refund for returned toaster oven",
        """
        Refund of $129.00 approved 2026-08-05 on order NW-56488; arrived on her card on
        2026-08-12. Customer thanked us.
        """,
    ),
    (
        "T-18511",
        "C-1008",
        "2026-06-10",
        "solved",
        "email",
        "Invoice for a work purchase",
        """
        Asked for an invoice with her employer's name for the coffee maker (order NW-54990).
        Invoice regenerated with the company name.
        """,
    ),
    (
        "T-17790",
        "C-1008",
        "2026-04-22",
        "solved",
        "email",
        "Plus renewal reminder not sent",
        """
        Customer expected a reminder before the monthly renewal. Explained reminders are sent
        for annual plans only.
        """,
    ),
    (
        "T-16540",
        "C-1008",
        "2026-02-02",
        "solved",
        "email",
        "Gift card balance missing",
        """
        A $25 gift card did not show in the wallet. It had been redeemed on her partner's
        account; moved with both customers' consent.
        """,
    ),
    (
        "T-15210",
        "C-1008",
        "2025-12-04",
        "solved",
        "email",
        "Black Friday order split in two",
        """
        Order shipped in two parcels; customer thought the second was missing. It arrived the
        next day.
        """,
    ),
    # Henrik Olsen — locked out.
    (
        "T-20915",
        "C-1009",
        "2026-11-26",
        "open",
        "phone",
        "Locked out and can't read my old email",
        """
        Customer: "I tried my password too many times and now I'm locked out. The reset email
        goes to my old work address." Identity not yet verified.
        """,
    ),
    (
        "T-18840",
        "C-1009",
        "2026-07-02",
        "solved",
        "phone",
        "Robot vacuum won't dock",
        """
        Cleaned the charging contacts on the Halo vacuum (order NW-53312); docking works.
        """,
    ),
    (
        "T-14077",
        "C-1009",
        "2025-09-15",
        "solved",
        "phone",
        "Change of delivery address",
        """
        Moved an order in progress to his new address after verification by card digits.
        """,
    ),
    # Fatima Zahra Benali — a parcel that stopped moving.
    (
        "T-20934",
        "C-1010",
        "2026-11-28",
        "open",
        "email",
        "Air purifier hasn't moved since November 20",
        """
        Customer: "Tracking for my Mistral purifier has said 'In transit — Salt Lake City hub'
        for eight days. Is it lost?" Order NW-58702, shipped Standard on 2026-11-18.
        """,
    ),
    (
        "T-19903",
        "C-1010",
        "2026-09-26",
        "solved",
        "email",
        "Replacement filter subscription",
        """
        Set up a filter reminder every 6 months for the Mistral purifier she plans to buy.
        """,
    ),
    (
        "T-13508",
        "C-1010",
        "2025-07-20",
        "solved",
        "email",
        "Welcome to Plus: free returns?",
        """
        Confirmed Plus includes free return labels on every order.
        """,
    ),
    # Noah Fischer — a price drop after purchase.
    (
        "T-20936",
        "C-1011",
        "2026-11-28",
        "open",
        "email",
        "Blender price dropped $40 after I bought it",
        """
        Customer: "I paid $199 for the Solstice blender on the 13th and it's $159 now. Can I
        get the difference back?" Order NW-58590, delivered 2026-11-17.
        """,
    ),
    (
        "T-19211",
        "C-1011",
        "2026-08-20",
        "solved",
        "email",
        "Blender jar replacement",
        """
        Old blender's jar cracked out of warranty; sold a spare jar at cost.
        """,
    ),
    (
        "T-15033",
        "C-1011",
        "2025-11-30",
        "solved",
        "email",
        "Where's my order confirmation?",
        """
        Resent the order confirmation for NW-49702.
        """,
    ),
    # Isabella Conti — a gift without a receipt.
    (
        "T-20860",
        "C-1012",
        "2026-11-23",
        "open",
        "chat",
        "Exchange a gifted knife block",
        """
        Customer: "I got the Cedar knife block for my birthday but I already have one. I don't
        have a gift receipt. Can I swap it for the cast-iron pan?" Order unknown; the giver
        paid.
        """,
    ),
    (
        "T-20400",
        "C-1012",
        "2026-10-31",
        "solved",
        "chat",
        "Newsletter sign-up discount",
        """
        Welcome code not received; resent it.
        """,
    ),
    (
        "T-20402",
        "C-1012",
        "2026-11-01",
        "solved",
        "chat",
        "Does the pan work on induction?",
        """
        Confirmed the Fjord cast-iron pan works on induction.
        """,
    ),
]

# --------------------------------------------------------------------------------------------
# Orders: (id, customer, ordered, updated, status, total, lines, history).

ORDERS = [
    (
        "NW-58213",
        "C-1001",
        "2026-10-29",
        "2026-11-19",
        "refunded",
        "$649.00",
        "1 × Barista Pro espresso machine (BP-900)",
        "Delivered 2026-11-02. Returned 2026-11-10, scanned at the warehouse 2026-11-17. "
        "Refund of $649.00 to Visa ending 4417 approved 2026-11-18, sent 2026-11-19.",
    ),
    (
        "NW-57102",
        "C-1001",
        "2026-09-10",
        "2026-09-14",
        "delivered",
        "$79.00",
        "1 × Kettle One gooseneck kettle, matte black",
        "Delivered 2026-09-14 by UPS.",
    ),
    (
        "NW-51877",
        "C-1001",
        "2026-03-22",
        "2026-03-30",
        "delivered",
        "$48.00",
        "1 × Linen napkins, set of 6, sage",
        "Delivered 2026-03-26. $10 goodwill credit added 2026-03-30.",
    ),
    (
        "NW-47215",
        "C-1001",
        "2025-11-28",
        "2025-12-03",
        "delivered",
        "$189.00",
        "1 × Fjord cast-iron Dutch oven, 5.5 qt",
        "Delivered 2025-12-03.",
    ),
    (
        "NW-57790",
        "C-1002",
        "2026-10-12",
        "2026-11-20",
        "disputed",
        "$349.00",
        "1 × Halo robot vacuum (HV-2)",
        "Delivered 2026-10-16. Returned 2026-11-02, scanned 2026-11-19. Chargeback opened "
        "by the customer's bank 2026-11-20: refund frozen.",
    ),
    (
        "NW-55902",
        "C-1002",
        "2026-05-12",
        "2026-05-16",
        "delivered",
        "$34.00",
        "2 × Glass storage jars, 1.5 l",
        "Delivered 2026-05-16.",
    ),
    (
        "NW-57930",
        "C-1003",
        "2026-11-03",
        "2026-11-14",
        "invoiced",
        "$2,380.00",
        "40 × Porcelain latte cups; 12 × Milk pitchers 600 ml",
        "Delivered 2026-11-07. Invoice INV-88410 corrected 2026-11-14 (PO 4417).",
    ),
    (
        "NW-57488",
        "C-1003",
        "2026-10-15",
        "2026-10-22",
        "invoiced",
        "$1,740.00",
        "12 × Steam milk frothers, commercial",
        "Delivered to Logan Square by mistake 2026-10-21, moved to Evanston 2026-10-22.",
    ),
    (
        "NW-56120",
        "C-1003",
        "2026-08-11",
        "2026-11-26",
        "warranty claim",
        "$16,380.00",
        "14 × Conical Commercial grinder (CC-64)",
        "Delivered 2026-08-20 to 2026-08-22 by freight appointment. Six units reported "
        "failing 2026-11-26, serial batch CC24-33.",
    ),
    (
        "NW-54402",
        "C-1003",
        "2026-06-08",
        "2026-06-12",
        "invoiced",
        "$1,500.00",
        "600 × Espresso cups, 80 ml",
        "Delivered 2026-06-12 to the Wicker Park café.",
    ),
    (
        "NW-52960",
        "C-1003",
        "2026-04-02",
        "2026-04-07",
        "invoiced",
        "$920.00",
        "20 × Tamping mats; 20 × Knock boxes",
        "Delivered 2026-04-07.",
    ),
    (
        "NW-50177",
        "C-1003",
        "2026-01-05",
        "2026-01-09",
        "invoiced",
        "$640.00",
        "20 × Knock boxes",
        "Delivered 2026-01-07; 4 cracked, replaced 2026-01-09.",
    ),
    (
        "NW-47730",
        "C-1004",
        "2025-01-27",
        "2025-06-18",
        "delivered",
        "$129.00",
        "1 × AirCrisp air fryer 5 l",
        "Delivered 2025-01-30. Warranty replacement basket shipped 2025-06-18.",
    ),
    (
        "NW-46011",
        "C-1004",
        "2024-11-30",
        "2024-12-04",
        "delivered",
        "$59.00",
        "1 × Cedar cutting board, large",
        "Delivered 2024-12-04.",
    ),
    (
        "NW-58640",
        "C-1006",
        "2026-11-20",
        "2026-11-25",
        "delivered",
        "$429.00",
        "1 × Aster stand mixer 6 qt, brushed steel",
        "Delivered 2026-11-25 by FedEx. Damage reported the same day (cracked bowl).",
    ),
    (
        "NW-57011",
        "C-1006",
        "2026-09-03",
        "2026-09-06",
        "delivered",
        "$119.00",
        "1 × Pasta roller attachment for Aster mixers",
        "Delivered 2026-09-06.",
    ),
    (
        "NW-55318",
        "C-1007",
        "2026-05-28",
        "2026-11-12",
        "in repair",
        "$299.00",
        "1 × Conical grinder, home edition",
        "Delivered 2026-06-01. Received at the workshop for warranty repair 2026-11-12.",
    ),
    (
        "NW-52004",
        "C-1007",
        "2026-03-01",
        "2026-03-04",
        "delivered",
        "$649.00",
        "1 × Barista Pro espresso machine (BP-900)",
        "Delivered 2026-03-04.",
    ),
    (
        "NW-57515",
        "C-1007",
        "2026-10-17",
        "2026-10-20",
        "delivered",
        "$22.00",
        "2 × Descaling solution, 500 ml",
        "Delivered 2026-10-20.",
    ),
    (
        "NW-58001",
        "C-1008",
        "2026-11-01",
        "2026-11-01",
        "paid",
        "$9.00",
        "Northwind Plus, monthly renewal (November)",
        "Captured 2026-11-01. A first attempt the same day failed and left an authorisation "
        "hold of $9.00.",
    ),
    (
        "NW-57340",
        "C-1008",
        "2026-09-08",
        "2026-09-11",
        "delivered",
        "$69.00",
        "1 × Two-slot toaster, cream",
        "Delivered 2026-09-11.",
    ),
    (
        "NW-56488",
        "C-1008",
        "2026-07-20",
        "2026-08-05",
        "refunded",
        "$129.00",
        "1 × Toaster oven, 20 l",
        "Returned 2026-07-31, refund approved 2026-08-05.",
    ),
    (
        "NW-54990",
        "C-1008",
        "2026-06-01",
        "2026-06-10",
        "delivered",
        "$99.00",
        "1 × Drip coffee maker, 10 cups",
        "Delivered 2026-06-04. Invoice reissued with company name 2026-06-10.",
    ),
    (
        "NW-53312",
        "C-1009",
        "2026-04-18",
        "2026-04-22",
        "delivered",
        "$349.00",
        "1 × Halo robot vacuum (HV-2)",
        "Delivered 2026-04-22.",
    ),
    (
        "NW-49120",
        "C-1009",
        "2025-09-10",
        "2025-09-15",
        "delivered",
        "$45.00",
        "1 × Kettle One gooseneck kettle, white",
        "Address changed 2025-09-15, delivered 2025-09-17.",
    ),
    (
        "NW-58702",
        "C-1010",
        "2026-11-17",
        "2026-11-20",
        "in transit",
        "$279.00",
        "1 × Mistral air purifier (MP-400)",
        "Shipped Standard 2026-11-18. Last tracking event 2026-11-20: Salt Lake City hub.",
    ),
    (
        "NW-56804",
        "C-1010",
        "2026-08-01",
        "2026-08-04",
        "delivered",
        "$39.00",
        "3 × HEPA filter for Mistral purifiers",
        "Delivered 2026-08-04.",
    ),
    (
        "NW-58590",
        "C-1011",
        "2026-11-13",
        "2026-11-17",
        "delivered",
        "$199.00",
        "1 × Solstice blender 1500 W",
        "Delivered 2026-11-17. Price on 2026-11-27: $159.00.",
    ),
    (
        "NW-56930",
        "C-1011",
        "2026-08-20",
        "2026-08-24",
        "delivered",
        "$35.00",
        "1 × Spare blender jar, 1.8 l",
        "Delivered 2026-08-24.",
    ),
    (
        "NW-49702",
        "C-1011",
        "2025-11-29",
        "2025-12-03",
        "delivered",
        "$24.00",
        "1 × Silicone spatula set",
        "Delivered 2025-12-03.",
    ),
    (
        "NW-58115",
        "C-1012",
        "2026-10-30",
        "2026-11-02",
        "delivered",
        "$12.00",
        "1 × Oven mitts, pair",
        "Delivered 2026-11-02 with the welcome code.",
    ),
]

# --------------------------------------------------------------------------------------------
# Knowledge base: customer-facing help articles, several paragraphs each.

KB = [
    item(
        "refund-timing",
        "How long does a refund take?",
        """
        Once we approve your refund, we send it to your payment method within 2 business days.
        You will get an email titled "Your refund is on its way".

        After that, the time depends on your payment method. Card refunds take 5 to 10 business
        days to appear on your statement, because your bank processes them. PayPal refunds
        arrive within 24 hours, and store credit is available immediately.

        If your refund has not arrived after 10 business days, check your statement for a
        credit from "NORTHWIND HOME" and then contact us with the order number.
        """,
        updated="2026-09-04",
        summary="Refunds leave us within 2 business days of approval; cards take 5–10 "
        "business days, PayPal 24 hours, store credit is instant.",
    ),
    item(
        "refund-status",
        "Check the status of your refund",
        """
        Open Orders in your account and select the order. The refund status appears under
        the order total: Requested, Approved, or Sent.

        "Approved" means we have received and checked your return. "Sent" means the money has
        left Northwind; from then on, your bank's processing time applies.
        """,
        updated="2026-10-02",
    ),
    item(
        "start-a-return",
        "Start a return",
        """
        You can return most items within 30 days of delivery, or 60 days with Northwind Plus.
        Go to Orders, choose the item and select Return. Tell us why you are returning it; it
        helps us improve, but it does not change your refund.

        We email you a prepaid label and a QR code. Drop the parcel at any UPS point, or show
        the QR code and they print the label for you.

        Large items are collected from your home: choose a pickup day when you start the
        return.
        """,
        updated="2026-07-03",
        summary="Start a return from Orders within 30 days (60 with Plus); we email a label.",
    ),
    item(
        "return-opened-appliance",
        "Can I return an appliance I have used?",
        """
        Yes. Opened and used small appliances can be returned within the return window. Clean
        or descale the appliance first and pack it in a sturdy box; you do not need the
        original packaging.

        Our warehouse checks every returned appliance. If it shows heavy use or limescale
        damage we cannot refund it, but we will offer a repair under warranty instead.
        """,
        updated="2026-10-06",
    ),
    item(
        "damaged-item",
        "My item arrived damaged",
        """
        We are sorry! Take two photos, one of the damaged item and one of the box with its
        shipping label, and send them to us within 14 days of delivery.

        We will send a replacement by Express delivery at no cost, or refund you if you
        prefer. For most items you can keep or recycle the damaged one.
        """,
        updated="2026-05-15",
        summary="Send two photos within 14 days; we replace by Express or refund.",
    ),
    item(
        "missing-item",
        "An item is missing from my parcel",
        """
        Large orders sometimes ship in several parcels. Check the tracking page of your order:
        each parcel has its own tracking number.

        If every parcel has been delivered and an item is still missing, contact us within 14
        days. We will send it again or refund it.
        """,
        updated="2026-06-20",
    ),
    item(
        "track-an-order",
        "Track your order",
        """
        When your order ships we email you a tracking link. You can also open Orders and select
        Track parcel.

        Tracking can take up to 24 hours to show the first event after we hand the parcel to
        the carrier. Weekend days often show no movement.
        """,
        updated="2026-08-08",
    ),
    item(
        "parcel-not-moving",
        "My tracking hasn't changed for days",
        """
        Parcels sometimes wait at a hub for a day or two, especially in November and
        December. If tracking has not changed for 7 days, your parcel is probably lost.

        Contact us and we will send a new one straight away or refund you, whichever you
        prefer. You do not need to wait for the carrier's investigation.
        """,
        updated="2026-09-22",
        summary="No tracking movement for 7 days means the parcel is probably lost: we reship "
        "or refund right away.",
    ),
    item(
        "delivery-times",
        "Delivery times",
        """
        Orders placed before 2 pm Eastern on a business day ship the same day. Standard
        delivery takes 3 to 5 business days; Express takes 1 to 2.

        Large items like furniture and range cookers are delivered by appointment: the carrier
        calls you within 2 business days of dispatch.
        """,
        updated="2026-06-16",
    ),
    item(
        "change-delivery-address",
        "Change the delivery address",
        """
        You can change the address of an order until it ships: open the order and select
        Change address.

        Once the order has shipped, contact us. We will try to redirect the parcel with the
        carrier; this works for most Standard deliveries but not for freight.
        """,
        updated="2026-04-10",
    ),
    item(
        "cancel-an-order",
        "Cancel an order",
        """
        Orders can be cancelled from the order page until they leave our warehouse, usually
        within an hour or two on business days.

        If the Cancel button is gone, the order has shipped: you can refuse the delivery or
        return it for free.
        """,
        updated="2026-03-02",
    ),
    item(
        "warranty-claim",
        "Make a warranty claim",
        """
        All appliances come with a two-year warranty. To make a claim, open the order, select
        the item and choose Report a problem.

        For espresso machines and grinders we send you a prepaid box; the repair takes about
        10 business days in our workshop. Plus members get a loan machine in the meantime.

        Other appliances are usually replaced. Keep the faulty one until we tell you what to do
        with it.
        """,
        updated="2026-04-25",
        summary="Claim from the order page; espresso machines and grinders are repaired in 10 "
        "business days, other appliances are usually replaced.",
    ),
    item(
        "repair-status",
        "Follow a warranty repair",
        """
        The order page shows the repair status: Box sent, Received, In repair, Testing,
        Shipped back.

        Repairs take about 10 business days from the day the workshop receives the machine,
        plus shipping. If your repair is late, reply to your repair email and we will check
        with the workshop.
        """,
        updated="2026-06-11",
    ),
    item(
        "descale-espresso",
        "Descale your espresso machine",
        """
        Descale every 2 months with hard water, or every 4 months with soft or filtered water.
        The Barista Pro shows an orange drop when it is time.

        Fill the tank with 500 ml of water and one bottle of descaling solution. Hold the
        steam and hot-water buttons together for 3 seconds to start the program; it takes
        about 25 minutes. Rinse the tank and run a second cycle with clean water.

        Limescale damage is not covered by the warranty, so regular descaling protects your
        machine.
        """,
        updated="2026-03-18",
    ),
    item(
        "grinder-jammed",
        "My grinder stops or hums",
        """
        Switch the grinder off and unplug it. Remove the hopper and the upper burr and brush
        away the coffee; oily dark roasts can clog the burrs.

        If the motor hums but the burrs do not turn after cleaning, do not keep trying: the
        thermal cut-out protects the motor. Make a warranty claim from your order page.
        """,
        updated="2026-11-05",
    ),
    item(
        "air-fryer-basket",
        "Air fryer basket care",
        """
        Wash the basket by hand with a soft sponge. Metal utensils and the dishwasher wear the
        non-stick coating.

        If the coating peels within the warranty period, we replace the basket for free.
        """,
        updated="2025-04-14",
    ),
    item(
        "air-fryer-app",
        "Connect your air fryer to the app",
        """
        The AirCrisp connects over 2.4 GHz Wi-Fi only. In the Northwind Home app, select Add
        device and hold the fan button for 5 seconds until the light blinks.

        If pairing fails, move the fryer closer to the router and check that your network is
        not 5 GHz only.
        """,
        updated="2025-02-20",
    ),
    item(
        "vacuum-not-docking",
        "Robot vacuum won't return to its dock",
        """
        Wipe the charging contacts on the vacuum and the dock with a dry cloth. Make sure the
        dock has 50 cm of free space on each side and 1.5 m in front.

        If the vacuum still cannot find the dock, restart it by holding the home button for
        10 seconds.
        """,
        updated="2026-07-05",
    ),
    item(
        "purifier-filter",
        "Replace the air purifier filter",
        """
        The Mistral purifier shows a red light when the HEPA filter needs replacing, about
        every 6 months.

        Open the back cover, pull out the old filter and remove the plastic wrap from the new
        one before inserting it. Hold the light button for 5 seconds to reset the reminder.
        """,
        updated="2026-08-03",
    ),
    item(
        "mixer-bowl",
        "Stand mixer bowls and attachments",
        """
        The Aster 6 qt mixer uses a brushed steel bowl that locks with a quarter turn. Spare
        bowls and the pasta roller, slicer and grinder attachments are sold separately.

        A bowl damaged in transit is replaced by Express delivery; send us a photo of the
        damage and of the box.
        """,
        updated="2026-05-28",
    ),
    item(
        "reset-password",
        "Reset your password",
        """
        Select Forgot password on the sign-in page and enter your email address. The reset
        link is valid for 1 hour.

        If you no longer have access to that email address, contact us: after we verify your
        identity we can change the address on your account.
        """,
        updated="2026-02-12",
    ),
    item(
        "account-locked",
        "My account is locked",
        """
        After five wrong passwords your account locks for 30 minutes. Wait, then reset your
        password instead of trying again.

        We cannot unlock your account sooner, but we can help you reset your password once we
        have verified your identity.
        """,
        updated="2026-01-19",
        summary="Five wrong passwords lock the account for 30 minutes; then reset the password.",
    ),
    item(
        "two-step-verification",
        "Turn on two-step verification",
        """
        Go to Account, Security, and select Two-step verification. You can use an
        authenticator app or text messages.

        Save the backup codes somewhere safe: they are the fastest way back into your account
        if you lose your phone.
        """,
        updated="2026-02-12",
    ),
    item(
        "plus-benefits",
        "What's included in Northwind Plus",
        """
        Northwind Plus costs $9 a month or $89 a year. Members get free Standard delivery on
        every order, free Express on orders over $100, 60-day returns with free labels, and a
        loan machine during espresso repairs.

        Large-item delivery by appointment is included for members, except for furniture over
        50 kg, which has a $49 freight fee.
        """,
        updated="2026-10-29",
        summary="Plus: free delivery, 60-day free returns, loan machines; $9/month or $89/year.",
    ),
    item(
        "cancel-plus",
        "Cancel Northwind Plus",
        """
        Go to Account, Membership, and select Cancel. Your benefits last until the end of the
        period you have paid for; we do not refund the remaining days.

        If you were charged for a renewal less than 48 hours after cancelling, contact us and
        we will refund it.
        """,
        updated="2026-10-29",
    ),
    item(
        "charged-twice",
        "I was charged twice",
        """
        If you see two charges for the same amount, one is often a temporary authorisation
        hold. Holds are released by your bank within 7 days and never leave your account.

        If both charges are still there after 7 days, or both show as completed, contact us
        with the order number and we will refund the duplicate.
        """,
        updated="2026-11-04",
        summary="A second charge is usually a hold released within 7 days; if both are final, "
        "we refund the duplicate.",
    ),
    item(
        "payment-declined",
        "My payment was declined",
        """
        Banks sometimes decline a first online payment to a new merchant as a precaution.
        Check your banking app for an approval request, then try again.

        We accept Visa, Mastercard, American Express, PayPal and Northwind gift cards.
        """,
        updated="2026-05-06",
    ),
    item(
        "chargeback-explained",
        "I opened a dispute with my bank",
        """
        When you dispute a payment with your bank, we must answer the bank and we cannot send
        you a refund at the same time; you would be paid twice.

        The bank usually decides within 30 to 75 days and will tell you the outcome. If you
        prefer a refund from us, ask your bank to withdraw the dispute first.
        """,
        updated="2026-09-01",
    ),
    item(
        "price-drop",
        "The price dropped after I bought",
        """
        If the price of an item drops within 14 days of delivery, contact us and we will refund
        the difference to your original payment method. Flash sales and clearance prices are
        not included.
        """,
        updated="2025-03-20",
    ),
    item(
        "gift-returns",
        "Return or exchange a gift",
        """
        You can return a gift with the gift receipt or the order number. We refund the gift as
        store credit to you, and we do not tell the person who gave it.

        No receipt? We can still offer store credit for the item's lowest price of the last 60
        days. Exchanges are done as a return plus a new order.
        """,
        updated="2024-12-05",
    ),
    item(
        "store-credit",
        "Use your store credit",
        """
        Store credit appears in Account, Wallet, and is applied automatically at checkout. It
        never expires.

        Store credit cannot be paid out to a card or bank account.
        """,
        updated="2026-01-28",
    ),
    item(
        "gift-cards",
        "Gift cards",
        """
        Gift cards are delivered by email and are valid for 5 years. Redeem them in Account,
        Wallet; the balance is then tied to your account.

        A gift card redeemed on the wrong account can be moved if both account holders agree.
        """,
        updated="2026-02-05",
    ),
    item(
        "promo-codes",
        "My promo code doesn't work",
        """
        Promo codes apply to full-price items only, one code per order. Check the code's expiry
        date in the email it came with.

        Welcome codes are valid for 30 days after you sign up.
        """,
        updated="2026-05-15",
    ),
    item(
        "business-invoices",
        "Invoices for business accounts",
        """
        Business accounts receive an invoice by email when each order ships, payable within
        30 days. Add your PO number at checkout so it appears on the invoice.

        Returns are credited with a credit note that reduces your next invoice.
        """,
        updated="2026-04-03",
    ),
    item(
        "tax-exemption",
        "Tax-exempt purchases",
        """
        Business accounts can upload a resale or tax-exemption certificate in Account,
        Business details. Orders placed after the certificate is approved exclude sales tax.

        We cannot refund tax on orders placed before the certificate was approved.
        """,
        updated="2026-03-27",
    ),
    item(
        "invoice-for-personal-order",
        "Get an invoice for a personal order",
        """
        Open the order and select Download invoice. To add a company name or VAT number, select
        Edit invoice details before downloading; you can do this once per order.
        """,
        updated="2026-06-12",
    ),
    item(
        "delete-account",
        "Delete your account",
        """
        Go to Account, Privacy, and select Delete my account. We confirm by email and delete
        your data within 30 days.

        Order records are kept for 7 years because tax law requires it.
        """,
        updated="2025-06-03",
    ),
    item(
        "recycle-old-appliance",
        "Recycle your old appliance",
        """
        When we deliver a large appliance we can take your old one away for $25. Choose
        Recycle my old appliance at checkout.

        Small appliances can be dropped at any UPS point with a free recycling label from your
        account.
        """,
        updated="2026-01-06",
    ),
    item(
        "holiday-returns",
        "Holiday returns",
        """
        Orders placed between 1 November and 24 December can be returned until 31 January.
        Nothing to do: the return portal applies the extended date automatically.
        """,
        updated="2025-10-22",
    ),
]

# --------------------------------------------------------------------------------------------
# Release notes: what changed on the website and in the app, one entry per monthly release.

RELEASES = [
    (
        "2025-01",
        "2025-01-21",
        "January 2025 release",
        "New help center search. Dark mode in the app.",
    ),
    (
        "2025-02",
        "2025-02-18",
        "February 2025 release",
        "Air fryers and espresso machines can be paired with the Northwind Home app.",
    ),
    ("2025-03", "2025-03-18", "March 2025 release", "Price-drop alerts on wish-listed items."),
    ("2025-04", "2025-04-15", "April 2025 release", "Chat available in Spanish."),
    (
        "2025-05",
        "2025-05-20",
        "May 2025 release",
        "Order history export as CSV for business accounts.",
    ),
    ("2025-06", "2025-06-17", "June 2025 release", "Order tracking map in the app. Wish lists."),
    (
        "2025-07",
        "2025-07-15",
        "July 2025 release",
        "Northwind Plus annual plan. Saved payment methods can be renamed.",
    ),
    (
        "2025-08",
        "2025-08-19",
        "August 2025 release",
        "Return portal redesigned: the QR code replaces the printed label.",
    ),
    (
        "2025-09",
        "2025-09-16",
        "September 2025 release",
        "Business accounts can add PO numbers at checkout.",
    ),
    (
        "2025-10",
        "2025-10-21",
        "October 2025 release",
        "Holiday return extension applied automatically in the return portal.",
    ),
    (
        "2025-11",
        "2025-11-18",
        "November 2025 release",
        "Split shipments show one tracking link per parcel.",
    ),
    (
        "2025-12",
        "2025-12-16",
        "December 2025 release",
        "Gift receipts can be emailed to the recipient.",
    ),
    (
        "2026-01",
        "2026-01-20",
        "January 2026 release",
        "Two-step verification with an authenticator app. Recycling labels in the account.",
    ),
    (
        "2026-02",
        "2026-02-17",
        "February 2026 release",
        "Password reset links now expire after 1 hour instead of 24.",
    ),
    (
        "2026-03",
        "2026-03-17",
        "March 2026 release",
        "Descaling reminders for connected espresso machines.",
    ),
    (
        "2026-04",
        "2026-04-21",
        "April 2026 release",
        "Warranty claims from the order page, with repair status tracking.",
    ),
    (
        "2026-05",
        "2026-05-19",
        "May 2026 release",
        "Damage reports accept photos directly in chat.",
    ),
    (
        "2026-06",
        "2026-06-16",
        "June 2026 release",
        "Invoice details (company name, VAT number) can be edited once per order.",
    ),
    (
        "2026-07",
        "2026-07-21",
        "July 2026 release",
        "Large-item pickups can be booked when starting a return.",
    ),
    (
        "2026-08",
        "2026-08-18",
        "August 2026 release",
        "Refund status (Requested, Approved, Sent) shown on the order page.",
    ),
    (
        "2026-09",
        "2026-09-15",
        "September 2026 release",
        "Lost-parcel reports from the tracking page: reship or refund in two taps.",
    ),
    (
        "2026-10",
        "2026-10-20",
        "October 2026 release",
        "Plus members can switch between monthly and annual plans at renewal.",
    ),
    (
        "2026-11",
        "2026-11-17",
        "November 2026 release",
        "Refunds to PayPal are sent within the hour after approval. Chat transcripts are "
        "emailed at the end of each chat.",
    ),
]

# --------------------------------------------------------------------------------------------
# Runbooks: internal procedures for the ops agent only. Some have not been reviewed for a while.

RUNBOOKS = [
    item(
        "carrier-feed-outage",
        "Carrier tracking feed is down",
        """
        Symptom: the tracking layer reports unavailable, tracking pages show "No information
        yet" for parcels shipped more than a day ago.

        Check the integration dashboard for authentication errors from the carrier API; the
        carrier rotates credentials without notice. Rotate the API key in the secrets manager
        and restart the tracking-sync worker.

        While the feed is down, agents must not declare a parcel lost from our tracking page:
        use the carrier's public site instead.
        """,
        updated="2026-11-21",
    ),
    item(
        "status-page-silent",
        "Status page health check not reporting",
        """
        If the status page has not reported for 15 minutes, its availability is unknown, not
        "operational". Do not tell customers that everything works.

        Page the on-call SRE, then check the status provider's own status. Post a manual
        update if the outage lasts more than 30 minutes.
        """,
        updated="2026-10-14",
    ),
    item(
        "stuck-refund",
        "Retry a stuck refund",
        """
        A refund stays in "Approved" when the payment processor rejected the request. Open the
        order's payments tab and read the processor's response code.

        For timeout or 5xx responses, run the refund retry job for the order id. For "card
        closed", the bank forwards the refund itself: tell the customer and close the retry.
        """,
        updated="2026-11-19",
    ),
    item(
        "lost-parcel-claim",
        "File a lost-parcel claim with the carrier",
        """
        After reshipping or refunding a lost parcel, file the claim in the carrier portal
        with the tracking number, the invoice and the declared value. Claims must be filed
        within 30 days of shipment.
        """,
        updated="2026-09-24",
    ),
    item(
        "loan-units",
        "Allocate loan machines",
        """
        Loan espresso machines and grinders are held in the Chicago, Dallas and Reno depots.
        Reserve a unit in the inventory tool under "loan", then book Express shipping.

        Business accounts take priority for commercial grinders; warn the account manager if
        fewer than two units are left.
        """,
        updated="2026-08-02",
    ),
    item(
        "batch-defect",
        "Suspected batch defect",
        """
        Three or more failures with the same symptom from the same serial batch within 30 days
        are a suspected batch defect. Open an incident with the quality team, attach the serial
        numbers and stop shipping units from the batch.

        Do not announce a recall; only the quality team decides.
        """,
        updated="2026-05-07",
    ),
    item(
        "payment-gateway-timeouts",
        "Payment gateway timeouts",
        """
        Checkout failures above 2% for 5 minutes page the on-call engineer. Switch the
        checkout to the secondary processor from the payments console; captured payments are
        not affected.
        """,
        updated="2026-03-11",
    ),
    item(
        "duplicate-captures",
        "Reconcile duplicate captures",
        """
        Run the duplicate-capture report for the day. For each pair of captured charges with
        the same order id, refund the later one and tag the ticket "duplicate-charge".
        Authorisation holds are not captures: leave them.
        """,
        updated="2026-11-04",
    ),
    item(
        "resend-confirmations",
        "Re-send order confirmation emails",
        """
        When the email provider drops messages, re-send confirmations from the admin with the
        "resend since" tool, limited to 500 per minute.
        """,
        updated="2025-08-12",
    ),
    item(
        "warehouse-cutoff-delay",
        "Warehouse misses the same-day cut-off",
        """
        If fewer than 90% of orders placed before 2 pm have shipped by 7 pm, post the delay
        banner on the website and in the app, and ask support to answer "where is my order"
        tickets with the delay macro.
        """,
        updated="2025-12-09",
    ),
    item(
        "fraud-hold",
        "Accounts on fraud hold",
        """
        Only Trust & Safety can release a fraud hold. Agents hand the ticket over with the tag
        "fraud-hold" and tell the customer that a specialist will contact them within one
        business day.
        """,
        updated="2025-11-02",
    ),
    item(
        "search-reindex",
        "Rebuild the product search index",
        """
        Rebuilding takes about 40 minutes and is safe during the day. Start it from the
        catalogue console; the old index serves traffic until the new one is ready.
        """,
        updated="2025-04-30",
    ),
    item(
        "freight-rebooking",
        "Rebook a freight delivery",
        """
        Freight appointments are rebooked in the carrier's portal. A second missed appointment
        costs $75, which we do not pass on to Plus members.
        """,
    ),
    item(
        "recall-refunds",
        "Bulk refunds for a recalled product",
        """
        After a recall decision, export the affected orders from the quality incident, then run
        the bulk-refund job in batches of 200. Each customer receives the recall email
        template; do not send individual replies.
        """,
        updated="2024-10-08",
    ),
]

# --------------------------------------------------------------------------------------------
# Glossary: internal terms, undated (they do not age).

GLOSSARY = [
    (
        "authorisation-hold",
        "Authorisation hold",
        "A temporary reservation of funds on a card "
        "that the bank releases within 7 days; never a charge.",
    ),
    (
        "chargeback",
        "Chargeback",
        "A card payment reversed by the customer's bank after a "
        "dispute; it freezes the order until the bank decides.",
    ),
    (
        "credit-note",
        "Credit note",
        "The document that reduces a business account's next invoice after a return.",
    ),
    (
        "doa",
        "DOA (dead on arrival)",
        "An appliance that does not work when first used; replaced like a damaged item.",
    ),
    (
        "loan-machine",
        "Loan machine",
        "A machine lent to a Plus member or business account during a warranty repair.",
    ),
    (
        "net-30",
        "Net 30",
        "Payment terms of business accounts: the invoice is due 30 days after it is issued.",
    ),
    (
        "plus",
        "Northwind Plus",
        "The paid membership: free delivery, 60-day returns, loan machines.",
    ),
    ("rma", "RMA", "Return merchandise authorisation: the number on a return label."),
    (
        "store-credit",
        "Store credit",
        "A balance in the customer's wallet, spent at checkout; it cannot be paid out.",
    ),
    ("tier-2", "Tier 2", "Senior agents who handle escalations and business accounts."),
    (
        "freight",
        "Freight delivery",
        "Delivery of large items by appointment, by a freight carrier.",
    ),
    (
        "batch",
        "Serial batch",
        "The production batch, given by the first characters of a serial number (e.g. CC24-33).",
    ),
]

# --------------------------------------------------------------------------------------------
# Carrier tracking: live events from the carriers' API, which is down (availability: unavailable).

TRACKING = [
    (
        "NW-58702",
        "C-1010",
        "2026-11-20",
        "NW-58702: In transit, Salt Lake City hub",
        "Last event 2026-11-20 08:14 MST: arrived at the Salt Lake City hub. No event since.",
    ),
    (
        "NW-58640",
        "C-1006",
        "2026-11-25",
        "NW-58640: Delivered",
        "Delivered 2026-11-25 13:02 MST, left at the front door.",
    ),
    (
        "NW-58213-return",
        "C-1001",
        "2026-11-17",
        "NW-58213 return: Delivered to Northwind",
        "Return parcel delivered to the Reno warehouse 2026-11-17 10:40 PST.",
    ),
    (
        "NW-57790-return",
        "C-1002",
        "2026-11-19",
        "NW-57790 return: Delivered to Northwind",
        "Return parcel delivered to the Reno warehouse 2026-11-19 09:05 PST.",
    ),
]

# --------------------------------------------------------------------------------------------
# Service status: incidents from the status page, whose health check has not reported
# (availability: unknown).

STATUS = [
    item(
        "incident/2026-11-27-card-refunds",
        "Card refunds delayed at the payment processor",
        """
        Refunds approved since 2026-11-25 reach the processor with a delay of up to 48 hours.
        No refund is lost.
        """,
        updated="2026-11-27",
    ),
    item(
        "incident/2026-11-20-tracking",
        "Carrier tracking updates missing",
        """
        Tracking events from one carrier stopped on 2026-11-20. Parcels keep moving.
        """,
        updated="2026-11-21",
    ),
    item(
        "maintenance/2026-12-01",
        "Scheduled maintenance: account sign-in",
        """
        Sign-in unavailable on 2026-12-01 from 02:00 to 02:30 Eastern.
        """,
        updated="2026-11-24",
    ),
]


def build_layers() -> list[dict]:
    """Return the layers in the order the workspace lists them."""
    customer_filter = {"customer_id": "customer_id"}
    return [
        {
            "key": "policies",
            "name": "Support policies",
            "description": "The rules agents and assistants must follow, reviewed yearly.",
            "items": POLICIES,
        },
        {
            "key": "customer",
            "name": "Customer profile",
            "description": "Who the customer is: plan, preferences, notes. One per customer.",
            "requiresInput": ["customer_id"],
            "itemFilter": customer_filter,
            "items": [
                {
                    "path": key,
                    "title": name,
                    "body": prose(body),
                    "metadata": {"customer_id": key, **meta},
                }
                for key, name, body, meta in CUSTOMERS
            ],
        },
        {
            "key": "tickets",
            "name": "Customer tickets",
            "description": "The customer's open and past tickets; undated ones were migrated "
            "from the old helpdesk.",
            "requiresInput": ["customer_id"],
            "itemFilter": customer_filter,
            "items": [
                item(
                    ticket_id,
                    title,
                    body,
                    customer_id=customer_id,
                    updated=updated,
                    status=status,
                    channel=channel,
                )
                for ticket_id, customer_id, updated, status, channel, title, body in TICKETS
            ],
        },
        {
            "key": "orders",
            "name": "Order history",
            "description": "The customer's orders with their delivery, return and refund history.",
            "requiresInput": ["customer_id"],
            "itemFilter": customer_filter,
            "items": [
                {
                    "path": order_id,
                    "title": f"Order {order_id}: {lines.split(';')[0]}",
                    "body": f"Items: {lines}. Total {total}, ordered {ordered}.\n\n{history}",
                    "metadata": {
                        "customer_id": customer_id,
                        "updated": updated,
                        "ordered": ordered,
                        "status": status,
                        "total": total,
                    },
                }
                for order_id, customer_id, ordered, updated, status, total, lines, history in (
                    ORDERS
                )
            ],
        },
        {
            "key": "kb",
            "name": "Help center articles",
            "description": "Customer-facing knowledge base, retrieved by relevance.",
            "appliesTo": {"objectives": ["answer-ticket", "draft-reply"]},
            "items": KB,
        },
        {
            "key": "release-notes",
            "name": "Release notes",
            "description": "What changed on the website and in the app, month by month.",
            "appliesTo": {"objectives": ["draft-reply", "triage-incident"]},
            "items": [
                item(f"{month}", title, body, date=date) for month, date, title, body in RELEASES
            ],
        },
        {
            "key": "runbooks",
            "name": "Ops runbooks",
            "description": "Internal procedures; for the ops agent only.",
            "appliesTo": {"consumers": ["ops-agent"]},
            "items": RUNBOOKS,
        },
        {
            "key": "glossary",
            "name": "Glossary",
            "description": "Internal terms, offered on request.",
            "items": [item(path, title, body) for path, title, body in GLOSSARY],
        },
        {
            "key": "carrier-tracking",
            "name": "Live carrier tracking",
            "description": "Tracking events from the carriers' API. Down since the carrier "
            "rotated its credentials.",
            "availability": "unavailable",
            "requiresInput": ["customer_id"],
            "itemFilter": customer_filter,
            "items": [
                item(path, title, body, customer_id=customer_id, updated=updated)
                for path, customer_id, updated, title, body in TRACKING
            ],
        },
        {
            "key": "service-status",
            "name": "Service status",
            "description": "Incidents from the status page. Its health check has not "
            "reported, so nobody knows whether this list is complete.",
            "availability": "unknown",
            "items": STATUS,
        },
        {
            "key": "promotions",
            "name": "Active promotions",
            "description": "Running discount campaigns. None is running this week.",
            "items": [],
        },
    ]


# --------------------------------------------------------------------------------------------
# Profiles: what each consumer gets for each objective, in production and staging.

PROFILES = [
    {
        "key": "support-answer",
        "name": "Support answer (production)",
        "consumer": "support-assistant",
        "objective": "answer-ticket",
        "environment": "production",
        "budget": 1200,
        "rules": {
            "policies": {
                "participation": "include",
                "mode": "retrieve",
                "required": True,
                "priority": 100,
                "maxItems": 2,
                "facets": ["summary"],
                "currentness": {
                    "maxAgeDays": 365,
                    "onStale": "exclude",
                    "onUnknown": "exclude",
                },
            },
            "service-status": {"participation": "auto", "mode": "inline", "priority": 95},
            "customer": {
                "participation": "auto",
                "mode": "inline",
                "required": True,
                "priority": 90,
            },
            "tickets": {
                "participation": "auto",
                "mode": "inline",
                "priority": 80,
                "order": "recency",
                "maxItems": 3,
                "currentness": {"maxAgeDays": 180, "onStale": "exclude", "onUnknown": "exclude"},
            },
            "carrier-tracking": {"participation": "auto", "mode": "inline", "priority": 75},
            "orders": {
                "participation": "auto",
                "mode": "inline",
                "priority": 70,
                "order": "recency",
                "maxItems": 3,
            },
            "kb": {
                "participation": "auto",
                "mode": "retrieve",
                "priority": 60,
                "maxItems": 2,
                "facets": ["excerpt"],
            },
            "promotions": {"participation": "auto", "mode": "inline", "priority": 50},
            "glossary": {"participation": "auto", "mode": "on-demand", "priority": 10},
        },
    },
    {
        "key": "support-answer-staging",
        "name": "Support answer (staging trial)",
        "consumer": "support-assistant",
        "objective": "answer-ticket",
        "environment": "staging",
        "budget": 2400,
        "rules": {
            "policies": {
                "participation": "include",
                "mode": "retrieve",
                "required": True,
                "priority": 100,
                "maxItems": 4,
                "facets": ["summary"],
                "currentness": {"maxAgeDays": 365, "onStale": "warn", "onUnknown": "warn"},
            },
            "customer": {
                "participation": "auto",
                "mode": "inline",
                "required": True,
                "priority": 90,
            },
            "tickets": {
                "participation": "auto",
                "mode": "inline",
                "priority": 80,
                "order": "recency",
                "maxItems": 3,
                "currentness": {"maxAgeDays": 180, "onStale": "exclude", "onUnknown": "exclude"},
            },
            "orders": {
                "participation": "auto",
                "mode": "inline",
                "priority": 70,
                "order": "recency",
                "maxItems": 3,
                "facets": ["summary", "meta.status"],
            },
            "kb": {
                "participation": "auto",
                "mode": "retrieve",
                "priority": 60,
                "maxItems": 3,
                "maxTokens": 200,
                "facets": ["body"],
            },
            "glossary": {"participation": "exclude"},
        },
    },
    {
        "key": "draft-reply",
        "name": "Draft a reply for an agent",
        "consumer": "support-assistant",
        "objective": "draft-reply",
        "budget": 1800,
        "rules": {
            "policies": {
                "participation": "include",
                "mode": "retrieve",
                "required": True,
                "priority": 100,
                "maxItems": 2,
                "currentness": {"maxAgeDays": 365, "onStale": "exclude", "onUnknown": "warn"},
            },
            "customer": {
                "participation": "auto",
                "mode": "inline",
                "required": True,
                "priority": 90,
            },
            "tickets": {
                "participation": "auto",
                "mode": "inline",
                "priority": 80,
                "order": "recency",
                "maxItems": 2,
            },
            "kb": {
                "participation": "auto",
                "mode": "retrieve",
                "priority": 60,
                "maxItems": 2,
                "facets": ["summary"],
            },
            "release-notes": {
                "participation": "auto",
                "mode": "inline",
                "priority": 40,
                "order": "recency",
                "maxItems": 2,
            },
            "orders": {"participation": "exclude"},
            "glossary": {"participation": "exclude"},
        },
    },
    {
        "key": "qa-review",
        "name": "QA review of an answer",
        "consumer": "qa-reviewer",
        "objective": "review-answer",
        "budget": 1400,
        "rules": {
            "policies": {
                "participation": "include",
                "mode": "retrieve",
                "required": True,
                "priority": 100,
                "maxItems": 3,
                "facets": ["body"],
                "currentness": {"maxAgeDays": 365, "onStale": "warn", "onUnknown": "warn"},
            },
            "kb": {
                "participation": "include",
                "mode": "retrieve",
                "priority": 60,
                "maxItems": 2,
                "facets": ["excerpt"],
            },
            "tickets": {
                "participation": "auto",
                "mode": "inline",
                "priority": 80,
                "order": "recency",
                "maxItems": 1,
            },
            "customer": {"participation": "exclude"},
            "orders": {"participation": "exclude"},
            "glossary": {"participation": "exclude"},
        },
    },
    {
        "key": "ops-triage",
        "name": "Ops triage (production)",
        "consumer": "ops-agent",
        "objective": "triage-incident",
        "environment": "production",
        "budget": 1800,
        "rules": {
            "service-status": {
                "participation": "include",
                "mode": "inline",
                "required": True,
                "priority": 100,
            },
            "runbooks": {
                "participation": "auto",
                "mode": "retrieve",
                "required": True,
                "priority": 90,
                "maxItems": 3,
                "currentness": {"maxAgeDays": 180, "onStale": "warn", "onUnknown": "warn"},
            },
            "carrier-tracking": {"participation": "auto", "mode": "inline", "priority": 80},
            "orders": {
                "participation": "auto",
                "mode": "inline",
                "priority": 70,
                "order": "recency",
                "maxItems": 2,
            },
            "release-notes": {
                "participation": "auto",
                "mode": "inline",
                "priority": 40,
                "order": "recency",
                "maxItems": 2,
            },
            "policies": {"participation": "exclude"},
            "glossary": {"participation": "exclude"},
        },
    },
    {
        "key": "ops-triage-staging",
        "name": "Ops triage (staging)",
        "consumer": "ops-agent",
        "objective": "triage-incident",
        "environment": "staging",
        "budget": 1800,
        "rules": {
            "service-status": {"participation": "auto", "mode": "inline", "priority": 100},
            "runbooks": {
                "participation": "auto",
                "mode": "retrieve",
                "required": True,
                "priority": 90,
                "maxItems": 3,
                "currentness": {"maxAgeDays": 180, "onStale": "warn", "onUnknown": "warn"},
            },
            "carrier-tracking": {"participation": "auto", "mode": "inline", "priority": 80},
            "orders": {
                "participation": "auto",
                "mode": "inline",
                "priority": 70,
                "order": "recency",
                "maxItems": 2,
            },
            "release-notes": {
                "participation": "auto",
                "mode": "inline",
                "priority": 40,
                "order": "recency",
                "maxItems": 2,
            },
            "policies": {"participation": "exclude"},
            "glossary": {"participation": "exclude"},
        },
    },
    {
        "key": "ticket-summary",
        "name": "Ticket summary",
        "consumer": "ticket-summarizer",
        "objective": "summarize-ticket",
        "budget": 400,
        "rules": {
            "customer": {
                "participation": "auto",
                "mode": "inline",
                "required": True,
                "priority": 100,
            },
            "orders": {
                "participation": "auto",
                "mode": "inline",
                "required": True,
                "priority": 90,
                "order": "recency",
                "maxItems": 2,
                "facets": ["summary"],
            },
            "tickets": {
                "participation": "auto",
                "mode": "inline",
                "required": True,
                "priority": 80,
                "order": "recency",
                "currentness": {"maxAgeDays": 365, "onStale": "exclude", "onUnknown": "warn"},
            },
            "policies": {"participation": "exclude"},
            "glossary": {"participation": "exclude"},
            "promotions": {"participation": "exclude"},
        },
    },
]


def build_workspace() -> dict:
    """Return the demo workspace document (SPEC §2)."""
    return {
        "version": 1,
        "consumers": CONSUMERS,
        "layers": build_layers(),
        "profiles": PROFILES,
    }


class _Dumper(yaml.SafeDumper):
    """Write multi-line strings as literal blocks so bodies stay readable in the file."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def render_workspace() -> str:
    """Return the YAML text of the demo workspace."""
    header = (
        "# Northwind Support: the demo workspace of Context Studio.\n"
        "# Generated by profiles/demo/build_demo.py; edit that script, not this file.\n"
    )
    body = yaml.dump(
        build_workspace(),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=100,
        default_flow_style=False,
    )
    return header + body


def main(argv: list[str]) -> int:
    text = render_workspace()
    if "--stdout" in argv:
        sys.stdout.buffer.write(text.encode("utf-8"))
    else:
        OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
