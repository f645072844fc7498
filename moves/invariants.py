"""The invariants the exploration judges every variation by, stated once: what a sound MRTR server never does,
whatever a client changes in a retry. Each has a slug (the report's key), the rule in a sentence, and what a
server author changes when it breaks ("Fix:", the same wording model as the moves').

Adding an invariant is one entry here plus the variations judged by it (moves/variations.py names the slug).
Data only: nothing here sends a request.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Invariant:
    slug: str
    rule: str
    fix: str


INVARIANTS: dict[str, Invariant] = {i.slug: i for i in (
    Invariant("once", "work happens at most once per ticket: a ticket already used (sent again, re-encoded, or "
                      "several copies at once) never does the work or moves the flow on again",
              "keep a redeemed store keyed on what the ticket means (its id, once its signature is verified), never "
              "on the exact string, and claim the id atomically before doing the work"),
    Invariant("bound", "a ticket works only for its principal, tool and arguments, whatever the request claims "
                       "about its caller in _meta or in the arguments",
              "bind the ticket to the principal of the transport's credentials, the tool and the arguments, and "
              "compare all three on every round; never read identity from _meta or the arguments"),
    Invariant("verified", "a ticket that fails verification (an edit in any part, the header too; another round's "
                          "or another type of value) is rejected with an error, never answered with the work or a "
                          "fresh question",
              "verify the whole ticket string (every part) before reading any of it, and answer any failure with "
              "the one frozen JSON-RPC error"),
    Invariant("answers", "work happens only with this round's answers, under the keys this round asked, taken "
                         "with a ticket of this round: never answers sent without the ticket, a later round's "
                         "answers on an earlier ticket, or earlier rounds' answers resent",
              "read each round's answers only under the keys that round asked, only after its ticket verified, "
              "and take what earlier rounds decided from the ticket, never from the retry"),
    Invariant("no-means-no", "decline and cancel never do the work or move the flow on, even when they carry "
                             "content",
              "read the action first: on decline or cancel, end without the work and ignore any content"),
    Invariant("expiry", "a ticket past its expiry never does the work or moves the flow on, at any round",
              "check the expiry of every round's ticket"),
    Invariant("declared", "a server never asks for a kind or mode of input the request did not declare (the "
                          "capabilities of this request, never inferred from an earlier one); a URL-mode accept "
                          "is consent, not completion",
              "read the capabilities of each request's _meta and ask only for what it declares (else error "
              "-32021); after a URL-mode accept, check your own record that the page was completed"),
    Invariant("same-refusal", "a ticket refusal never names its reason: every refused ticket gets the same error",
              "answer every refused ticket with one frozen error and write the reason to your own log"),
    Invariant("private", "a retry's result is never served to anyone else",
              "key any result cache on the principal as well as the ticket"),
    Invariant("version", "a retry naming a protocol version the server does not speak is refused, never served "
                         "(each request's _meta is read anew)",
              "check the protocol version of every request's _meta, retries included, and answer one you do not "
              "speak with error -32022"),
)}
