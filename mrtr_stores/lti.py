"""What the LTI tool keeps, whatever keeps it: the contract (`LtiStore`), the tool's key, and the score queue's rules.

* The tool's RSA private key, generated on first use and the same for every process that shares the store (the
  platform fetches one key set, whichever process it reaches). Only its public half ever leaves the callers (the
  JWKS); the private PEM is handed to pylti1p3 and nothing else.
* pylti1p3's launch data (OIDC nonces, state, launch bodies) as keys with an expiry. A nonce is *taken* when
  checked (`kv_take`), so an id_token can be launched once only.
* What a verified launch leaves for the pages that follow it (who, which activity, the AGS endpoint claim, the
  deep-linking settings), under a random reference, for `LAUNCH_LIFETIME`.
* Scores waiting for the platform. A score is kept before it is posted and marked sent only when the platform
  accepted it, so a failed post is retried later (backing off from `FIRST_RETRY` to `MAX_RETRY`), never lost.

Two backends keep the contract (tests/stores/test_lti.py runs one suite against both): `SqliteLtiStore`
(`lti_sqlite`: the state directory of one machine) and `RedisLtiStore` (`lti_redis`: replicas on several hosts).
Time comes from the store's injected clock. A backend that fails raises `LtiStoreDown`, never a driver exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from mrtr import JSON, JSONObject
from mrtr.clock import Clock

#: Retries back off from this many seconds, doubling, up to an hour.
FIRST_RETRY = 30.0
MAX_RETRY = 3600.0
#: A launch's pages keep working this long after the launch (a long lab session).
LAUNCH_LIFETIME = 12 * 3600
#: The longest text a failed post's reason is kept as.
MAX_ERROR = 200



class LtiStoreDown(Exception):
    """The LTI store could not be read or written: a server error of the tool's own, never the platform's doing."""


def new_private_key() -> bytes:
    """A new RSA key for the tool, as unencrypted PKCS#8 PEM."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def public_pem(private_pem: str) -> str:
    key = serialization.load_pem_private_key(private_pem.encode("ascii"), password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")


def retry_wait(attempts: int) -> float:
    """Seconds before a score that failed `attempts` times before this failure is tried again."""
    return float(min(FIRST_RETRY * 2 ** attempts, MAX_RETRY))


@dataclass(frozen=True)
class PendingScore:
    key: str
    issuer: str
    client_id: str
    #: The launch's AGS endpoint claim, as the platform sent it (its `lineitem` is where the score goes).
    endpoint: JSONObject
    user_id: str
    given: float
    maximum: float
    activity: str
    grading: str
    timestamp: str
    attempts: int
    #: What the platform shows beside the score (AGS `comment`): for the build lesson, that its steps are
    #: self-reported.
    comment: str = ""


class LtiStore(Protocol):
    clock: Clock

    def private_key(self) -> str:
        """The tool's private key as PEM text, made on first use; every process of the store gets the same."""

    # -- pylti1p3's key-value storage
    def kv_get(self, key: str) -> JSON:
        """The live value of `key` (JSON), or None."""

    def kv_set(self, key: str, value: JSON, exp: int | None) -> None:
        """Keep `value` under `key`, for `exp` seconds (forever when None)."""

    def kv_take(self, key: str) -> bool:
        """True once for a live key, which is deleted in the same step: a nonce is spent here."""

    # -- launches
    def save_launch(self, data: JSONObject) -> str:
        """Keep a verified launch for LAUNCH_LIFETIME; the random reference it is kept under."""

    def launch(self, ref: str) -> JSONObject | None: ...

    # -- scores
    def record_score(self, score: PendingScore, *, keep_best: bool) -> bool:
        """Queue `score`; False when it changes nothing already sent or queued. `keep_best`: a lower score never
        replaces a higher one (the build lesson: a later, worse report does not take a verified step away)."""

    def due_scores(self, limit: int, key: str | None = None) -> list[PendingScore]:
        """Up to `limit` unsent scores whose retry is due (only `key`'s when given), the longest waiting first."""

    def mark_sent(self, score: PendingScore) -> None:
        """The platform accepted `score`: only that version is marked, a newer one recorded meanwhile stays queued."""

    def mark_failed(self, score: PendingScore, error: str) -> None:
        """The post failed: one more attempt counted, the next one due after `retry_wait`."""

    def score_state(self, key: str) -> tuple[float, bool, int] | None:
        """(score given, accepted by the platform, failed attempts) for a score key, or None."""
