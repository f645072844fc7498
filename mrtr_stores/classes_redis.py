"""A live class kept in Redis, so replicas on several hosts serve the same class (the contract:
`mrtr_stores.classes.ClassStore`, which `SqliteClassStore`, the embedded default, keeps too); and
`RedisRateLimit`, the class's limits per client and per class counted for every replica at once (the contract:
`mrtr_stores.classes.RateLimit`).

Keys, under one prefix: `c:<id>` (a hash: the class row), `code:<code>` (the join code's class id),
`l:<id>` (learners by id, JSON), `nick:<id>` and `tok:<id>` (nickname and token hash to learner id),
`a:<id>:<question>` (answers by learner), `q:<id>` (questions answered), `t:<id>` (attempts, a list),
`heat:<id>` (attempts per move and check), `ta:<id>:<learner>` (a learner's attempt times), `d:<id>:<question>`
(a drawn question's draws by learner) and `dq:<id>` (the questions with draws). Every key of a
class expires with the class, as a time to live counted on the injected clock (Redis's own clock is never
compared with it), so Redis forgets a class without a sweep; `classes` (a sorted set by creation) counts
the classes still open. The steps that must not interleave (a join checking the class's size and nickname,
the first replay, a rate-limit hit) are one Lua script each. Secrets are stored as SHA-256 hashes only, as
in SQLite. Every Redis failure is `ClassStoreUnavailable`. Imports `redis`: imported only when Redis is configured.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Callable, Mapping

import redis
from redis.typing import EncodableT, FieldT

from mrtr_stores import classes
from mrtr_stores.classes import (
    CODE_ALPHABET,
    CODE_LENGTH,
    NICKNAME_TAKEN,
    ClassroomError,
    ClassRow,
    ClassStoreUnavailable,
    ExportRow,
    Learner,
    RateKey,
    check_draw,
    check_nickname,
    class_full,
    digest,
    host_ok,
    normalize_code,
    too_many_draws,
)
from mrtr_stores.failures import failures_become
from mrtr_stores.redis_clients import REQUEST_TIMEOUT, RedisText, redis_client

PREFIX = "mrtr:class:"
#: Seconds a Redis command or connection may take before the class store counts as down.
REDIS_TIMEOUT = REQUEST_TIMEOUT  # on a request's path: well under a second (mrtr_stores/redis_clients.py)

#: KEYS: learners, nick, tok, class; ARGV: max, nick_key, token_hash, learner json, id, ms the class has left.
#: Returns the new learner id, -1 when the class is full, -2 when the nickname is taken.
_JOIN = """
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[1]) then return -1 end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then return -2 end
local id = tonumber(ARGV[5])
redis.call('HSET', KEYS[1], id, ARGV[4])
redis.call('HSET', KEYS[2], ARGV[2], id)
redis.call('HSET', KEYS[3], ARGV[3], id)
redis.call('HINCRBY', KEYS[4], 'version', 1)
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[6]) end
return id
"""

#: KEYS: learners, nick, tok, attempts, heat, the learner's attempt times, class, then every answer hash;
#: ARGV: learner id, ms the class has left. Rebuilds the attempts and the heat without the learner.
_REMOVE = """
local id = ARGV[1]
local raw = redis.call('HGET', KEYS[1], id)
if not raw then return 0 end
local rec = cjson.decode(raw)
redis.call('HDEL', KEYS[1], id)
redis.call('HDEL', KEYS[2], rec['nick_key'])
redis.call('HDEL', KEYS[3], rec['token_hash'])
local entries = redis.call('LRANGE', KEYS[4], 0, -1)
redis.call('DEL', KEYS[4], KEYS[5], KEYS[6])
for _, e in ipairs(entries) do
  local d = cjson.decode(e)
  if tostring(d['learner']) ~= id then
    redis.call('RPUSH', KEYS[4], e)
    redis.call('HINCRBY', KEYS[5], d['move'] .. '|' .. d['stopped_at'], 1)
  end
end
for i = 8, #KEYS do redis.call('HDEL', KEYS[i], id) end
redis.call('HINCRBY', KEYS[7], 'version', 1)
redis.call('PEXPIRE', KEYS[4], ARGV[2])
redis.call('PEXPIRE', KEYS[5], ARGV[2])
return 1
"""

#: KEYS: class; ARGV: nickname. Sets the first replay once; returns 1 for the learner who set it.
_FIRST_REPLAY = """
return redis.call('HSETNX', KEYS[1], 'first_replay', ARGV[1])
"""

#: KEYS: the window's sorted set; ARGV: window start, limit, now, a unique member, window in ms. 1: allowed.
_HIT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
"""


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _row(raw: Mapping[RedisText, RedisText]) -> ClassRow | None:
    if not raw:
        return None
    got = {_text(k): _text(v) for k, v in raw.items()}
    if "id" not in got:
        return None
    return ClassRow(
        id=got["id"], code=got["code"], host_hash=got.get("host_hash") or None, lesson=got["lesson"],
        created=float(got["created"]), version=int(got.get("version", 0)), stage=int(got.get("stage", 0)),
        question_no=int(got.get("question_no", 0)), question_id=got.get("question_id") or None,
        revealed=got.get("revealed") == "1", round_open=got.get("round_open") == "1",
        single_use=got.get("single_use", "1") == "1", first_replay=got.get("first_replay") or None,
        locked=got.get("locked") == "1",
    )


def _unavailable(store: object, exc: BaseException) -> ClassStoreUnavailable:
    return ClassStoreUnavailable(f"Redis: {type(exc).__name__}: {str(exc)[:120]}")


@failures_become(redis.exceptions.RedisError, _unavailable)
class RedisClassStore:
    """All class data in Redis, shared by every replica that talks to the same server."""

    def __init__(self, client: redis.Redis, *, clock: Callable[[], float], ttl_seconds: float,
                 prefix: str = PREFIX) -> None:
        self.client = client
        self.clock = clock
        self.ttl = ttl_seconds
        self.prefix = prefix
        self._join = client.register_script(_JOIN)
        self._remove = client.register_script(_REMOVE)
        self._first_replay = client.register_script(_FIRST_REPLAY)

    @classmethod
    def from_url(cls, url: str, *, clock: Callable[[], float], ttl_seconds: float,
                 timeout: float = REDIS_TIMEOUT) -> RedisClassStore:
        return cls(redis_client(url, timeout=timeout), clock=clock, ttl_seconds=ttl_seconds)

    def _k(self, *parts: str | int) -> str:
        return self.prefix + ":".join(str(p) for p in parts)

    def _left_ms(self, row: ClassRow) -> int:
        """Milliseconds the class has left, from the injected clock: a relative time to live, so Redis's own
        clock (which an injected clock need not agree with) is never compared with ours."""
        return max(1, math.ceil((row.created + self.ttl - self.clock()) * 1000))

    def _expire(self, row: ClassRow, *keys: str) -> None:
        left = self._left_ms(row)
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.pexpire(key, left)
        pipe.execute()

    # -- lifetime ------------------------------------------------------------------------------------

    def purge(self, *, force: bool = False) -> int:
        """Forget classes past the TTL in the count (their keys expire by themselves)."""
        return int(self.client.zremrangebyscore(self._k("classes"), "-inf", self.clock() - self.ttl))

    def delete(self, class_id: str) -> None:
        row = self.by_id(class_id)
        keys = [self._k("c", class_id), self._k("l", class_id), self._k("nick", class_id), self._k("tok", class_id),
                self._k("q", class_id), self._k("t", class_id), self._k("heat", class_id)]
        keys += [self._k("a", class_id, _text(q)) for q in self.client.smembers(self._k("q", class_id))]
        keys += [self._k("d", class_id, _text(q)) for q in self.client.smembers(self._k("dq", class_id))]
        keys.append(self._k("dq", class_id))
        keys += [self._k("ta", class_id, _text(i)) for i in self.client.hkeys(self._k("l", class_id))]
        if row is not None:
            keys.append(self._k("code", row.code))
        pipe = self.client.pipeline()
        pipe.delete(*keys)
        pipe.zrem(self._k("classes"), class_id)
        pipe.execute()

    def count_classes(self) -> int:
        self.purge()
        return int(self.client.zcard(self._k("classes")))

    # -- classes -------------------------------------------------------------------------------------

    def create(self, *, lesson: str, host_secret: str | None) -> ClassRow:
        now = self.clock()
        for _ in range(20):
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            class_id = secrets.token_urlsafe(12)
            expire_ms = math.ceil(self.ttl * 1000)
            if not self.client.set(self._k("code", code), class_id, nx=True, px=expire_ms):
                continue
            fields: dict[FieldT, EncodableT] = {
                "id": class_id, "code": code, "host_hash": digest(host_secret) if host_secret else "",
                "lesson": lesson, "created": repr(now), "version": 0, "stage": 0, "question_no": 0,
                "question_id": "", "revealed": 0, "round_open": 0, "single_use": 1, "locked": 0}
            pipe = self.client.pipeline()
            pipe.hset(self._k("c", class_id), mapping=fields)
            pipe.pexpire(self._k("c", class_id), expire_ms)
            pipe.zadd(self._k("classes"), {class_id: now})
            pipe.execute()
            found = self.by_id(class_id)
            assert found is not None
            return found
        raise RuntimeError("could not find a free join code")  # pragma: no cover - 31^6 codes

    def by_code(self, code: str) -> ClassRow | None:
        class_id = self.client.get(self._k("code", normalize_code(code)))
        if class_id is None:
            return None
        row = self.by_id(_text(class_id))
        if row is not None and row.created <= self.clock() - self.ttl:
            self.delete(row.id)
            return None
        return row

    def by_id(self, class_id: str) -> ClassRow | None:
        return _row(self.client.hgetall(self._k("c", class_id)))

    def host_ok(self, row: ClassRow, secret: str | None) -> bool:
        return host_ok(row, secret)

    def version(self, class_id: str) -> int | None:
        found = self.client.hget(self._k("c", class_id), "version")
        return None if found is None else int(found)

    def _bump(self, class_id: str, *, stage: bool, **sets: EncodableT) -> None:
        key = self._k("c", class_id)
        if not self.client.exists(key):
            return  # the class is gone: nothing to change, as an UPDATE of no row
        pipe = self.client.pipeline()
        if sets:
            fields: dict[FieldT, EncodableT] = {name: value for name, value in sets.items()}
            pipe.hset(key, mapping=fields)
        pipe.hincrby(key, "version", 1)
        if stage:
            pipe.hincrby(key, "stage", 1)
        pipe.execute()

    def set_question(self, class_id: str, number: int, question_id: str) -> None:
        self._bump(class_id, stage=True, question_no=number, question_id=question_id, revealed=0)

    def reveal(self, class_id: str) -> None:
        self._bump(class_id, stage=True, revealed=1)

    def set_round(self, class_id: str, open_: bool) -> None:
        self._bump(class_id, stage=True, round_open=int(open_))

    def set_single_use(self, class_id: str, on: bool) -> None:
        self._bump(class_id, stage=True, single_use=int(on))

    def set_locked(self, class_id: str, locked: bool) -> None:
        self._bump(class_id, stage=False, locked=int(locked))

    # -- learners ------------------------------------------------------------------------------------

    def join(self, row: ClassRow, nickname: str) -> tuple[Learner, str]:
        """Add a learner; returns it and its secret token (shown to that learner, stored hashed)."""
        name = check_nickname(nickname)
        token = secrets.token_urlsafe(24)
        learner_id = int(self.client.incr(self._k("learner-ids")))
        learner = Learner(learner_id, row.id, name, self.clock(), None)
        record = json.loads(self._learner_json(learner))
        record.update(nick_key=name.casefold(), token_hash=digest(token))  # what removing the learner undoes
        result = int(self._join(
            keys=[self._k("l", row.id), self._k("nick", row.id), self._k("tok", row.id), self._k("c", row.id)],
            args=[classes.MAX_LEARNERS, name.casefold(), digest(token), json.dumps(record), learner_id,
                  self._left_ms(row)]))
        if result == -1:
            raise class_full()
        if result == -2:
            raise ClassroomError(NICKNAME_TAKEN)
        return learner, token

    @staticmethod
    def _learner_json(learner: Learner) -> str:
        return json.dumps({"id": learner.id, "class_id": learner.class_id, "nickname": learner.nickname,
                           "created": learner.created, "ticket": learner.ticket})

    @staticmethod
    def _learner(raw: RedisText) -> Learner:
        data = json.loads(raw)
        return Learner(int(data["id"]), data["class_id"], data["nickname"], float(data["created"]), data["ticket"])

    def learner(self, row: ClassRow, token: str | None) -> Learner | None:
        if not token:
            return None
        learner_id = self.client.hget(self._k("tok", row.id), digest(token))
        if learner_id is None:
            return None
        raw = self.client.hget(self._k("l", row.id), _text(learner_id))
        return self._learner(raw) if raw is not None else None

    def learners(self, class_id: str) -> list[Learner]:
        found = [self._learner(raw) for raw in self.client.hvals(self._k("l", class_id))]
        return sorted(found, key=lambda learner: learner.id)

    def count_learners(self, class_id: str) -> int:
        return int(self.client.hlen(self._k("l", class_id)))

    def set_ticket(self, learner: Learner, ticket: str) -> None:
        key = self._k("l", learner.class_id)
        raw = self.client.hget(key, str(learner.id))
        if raw is None:
            return
        data = json.loads(raw)
        data["ticket"] = ticket
        self.client.hset(key, str(learner.id), json.dumps(data))

    def remove_learner(self, class_id: str, learner_id: int) -> bool:
        """Take a learner out of the class with everything they sent; their token stops working. False when
        the class has no such learner. One script: attempts recorded meanwhile are neither lost nor kept twice."""
        row = self.by_id(class_id)
        if row is None:
            return False
        answers = [self._k("a", class_id, _text(q)) for q in self.client.smembers(self._k("q", class_id))]
        answers += [self._k("d", class_id, _text(q)) for q in self.client.smembers(self._k("dq", class_id))]
        keys = [self._k("l", class_id), self._k("nick", class_id), self._k("tok", class_id), self._k("t", class_id),
                self._k("heat", class_id), self._k("ta", class_id, learner_id), self._k("c", class_id), *answers]
        return bool(self._remove(keys=keys, args=[learner_id, self._left_ms(row)]))

    # -- answers -------------------------------------------------------------------------------------

    def answer(self, row: ClassRow, learner: Learner, question_id: str, option: str, right: bool | None = None) -> None:
        key = self._k("a", row.id, question_id)
        pipe = self.client.pipeline()
        pipe.hset(key, str(learner.id), json.dumps({"option": option, "at": self.clock(), "right": right}))
        pipe.sadd(self._k("q", row.id), question_id)
        pipe.hincrby(self._k("c", row.id), "version", 1)
        pipe.execute()
        self._expire(row, key, self._k("q", row.id))

    def my_answer(self, row: ClassRow, learner: Learner, question_id: str) -> str | None:
        raw = self.client.hget(self._k("a", row.id, question_id), str(learner.id))
        return str(json.loads(raw)["option"]) if raw is not None else None

    def tally(self, class_id: str, question_id: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for raw in self.client.hvals(self._k("a", class_id, question_id)):
            option = str(json.loads(raw)["option"])
            counts[option] = counts.get(option, 0) + 1
        return counts

    def right_count(self, class_id: str, question_id: str) -> int:
        return sum(1 for raw in self.client.hvals(self._k("a", class_id, question_id))
                   if json.loads(raw).get("right") is True)

    # -- draws ---------------------------------------------------------------------------------------

    def keep_draw(self, row: ClassRow, learner: Learner, question_id: str, draw: str) -> str:
        check_draw(draw)
        key, questions = self._k("d", row.id, question_id), self._k("dq", row.id)
        kept = self.client.hget(key, str(learner.id))
        if kept is not None:
            return _text(kept)
        if not self.client.sismember(questions, question_id) \
                and int(self.client.scard(questions)) >= classes.MAX_DRAWN_QUESTIONS:
            raise too_many_draws()
        pipe = self.client.pipeline()
        pipe.hsetnx(key, str(learner.id), draw)  # two pages at once: the first draw kept is every page's
        pipe.sadd(questions, question_id)
        pipe.hget(key, str(learner.id))
        kept = pipe.execute()[2]
        self._expire(row, key, questions)
        return _text(kept) if kept is not None else draw

    # -- attempts ------------------------------------------------------------------------------------

    def record_attempt(self, row: ClassRow, learner: Learner, *, move: str, outcome: str, stopped_at: str,
                       single_use: bool, replay_through: bool) -> bool:
        """Store one attempt; returns True when it made this learner the first to get a replay through."""
        now = self.clock()
        entry = json.dumps({"learner": learner.id, "move": move, "outcome": outcome, "stopped_at": stopped_at,
                            "single_use": single_use, "at": now})
        times = self._k("ta", row.id, learner.id)
        pipe = self.client.pipeline()
        pipe.rpush(self._k("t", row.id), entry)
        pipe.hincrby(self._k("heat", row.id), f"{move}|{stopped_at}", 1)  # slugs and check names hold no '|'

        pipe.zadd(times, {f"{now!r}:{secrets.token_hex(4)}": now})
        pipe.execute()
        self._expire(row, self._k("t", row.id), self._k("heat", row.id), times)
        first = bool(replay_through and self._first_replay(keys=[self._k("c", row.id)], args=[learner.nickname]))
        self.client.hincrby(self._k("c", row.id), "version", 1)
        return first

    def recent_attempts(self, learner: Learner, since: float) -> int:
        return int(self.client.zcount(self._k("ta", learner.class_id, learner.id), f"({since!r}", "+inf"))

    def heat(self, class_id: str) -> dict[tuple[str, str], int]:
        """Attempts per (move, check that stopped it); a move that went through counts under ''."""
        out: dict[tuple[str, str], int] = {}
        for key, count in self.client.hgetall(self._k("heat", class_id)).items():
            move, _, stopped = _text(key).partition("|")
            out[(move, stopped)] = int(count)
        return out

    # -- export --------------------------------------------------------------------------------------

    def export_rows(self, class_id: str) -> list[ExportRow]:
        """One row per answer and per attempt: kind, nickname, item, value, detail, time."""
        names = {learner.id: learner.nickname for learner in self.learners(class_id)}
        answers = []
        for question in sorted(_text(q) for q in self.client.smembers(self._k("q", class_id))):
            for learner_id, raw in self.client.hgetall(self._k("a", class_id, question)).items():
                data = json.loads(raw)
                learner = int(_text(learner_id))
                graded = {True: "right", False: "wrong"}.get(data.get("right"), "")
                answers.append(("answer", names.get(learner, ""), question, data["option"], graded, data["at"],
                                learner))
        answers.sort(key=lambda r: (r[5], r[6]))
        rows: list[ExportRow] = [r[:6] for r in answers]
        for raw in self.client.lrange(self._k("t", class_id), 0, -1):
            data = json.loads(raw)
            rows.append(("attempt", names.get(int(data["learner"]), ""), data["move"], data["outcome"],
                         data["stopped_at"], data["at"]))
        return rows


@failures_become(redis.exceptions.RedisError, _unavailable)
class RedisRateLimit:
    """A sliding window per key, counted in Redis, so the limit holds across every replica: one sorted set
    per key, trimmed to the window on each hit; the set expires with the window."""

    def __init__(self, client: redis.Redis, limit: int, window: float, *, prefix: str = PREFIX + "rate:") -> None:
        self.client = client
        self.limit = limit
        self.window = window
        self.prefix = prefix
        self._hit = client.register_script(_HIT)

    def exhausted(self, key: RateKey, now: float) -> bool:
        """Whether `key` has no hit left in the window now (nothing is recorded)."""
        name = self.prefix + json.dumps(key, default=str, separators=(",", ":"))
        return int(self.client.zcount(name, f"({now - self.window!r}", "+inf")) >= self.limit

    def allow(self, key: RateKey, now: float) -> bool:
        name = self.prefix + json.dumps(key, default=str, separators=(",", ":"))
        # One script, so two replicas at the limit cannot both let a hit through.
        return bool(self._hit(keys=[name], args=[repr(now - self.window), self.limit, repr(now),
                                                  f"{now!r}:{secrets.token_hex(4)}", math.ceil(self.window * 1000)]))
