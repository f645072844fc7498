"""The live class's services and rules: the class store, its notice bus, every per-visitor and per-class limit,
the attack round's redeemed store, and which questions a room can answer.

Built once per app on first use (`classroom()`), from the settings (read by `mrtr_settings.environment`; a test
config overrides the environment): MRTR_CLASS_DB (default: classroom.sqlite3 in the state dir),
MRTR_CLASS_TTL_HOURS (12), MRTR_INSTRUCTOR_TOKEN, MRTR_REDIS_URL (live updates and limits across processes),
MRTR_CLASS_POLL_SECONDS (2: how often a live stream re-reads the store without a notice), MRTR_CLASS_STREAM_SECONDS
(30: an SSE stream's life before the browser reconnects), MRTR_MAX_CLASSES (200 open at once), MRTR_CLASS_CLOCK
(tests: the clock). Never writes SQL or talks to Redis itself (mrtr_stores.classes) and never renders a page.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from flask import Flask, current_app

from mrtr import RedeemedStore
from mrtr_settings.stores import open_classes, open_rate_limit
from mrtr_stores.class_notices import LocalBus, make_bus
from mrtr_stores.classes import MAX_LEARNERS, ClassRow, ClassStore, LocalRateLimit, RateLimit
from mrtr_stores.redeemed_sqlite import SqliteStore
from web.classroom.round import ClassLab, class_ring
from web.quiz import draws as quiz_draws
from web.site.content import Lesson, Question, get_content
from web.site.services import get_services, get_settings

HOST_COOKIE = "mrtr_host"
LEARNER_COOKIE = "mrtr_learner"
#: Per learner: at most this many answers in ANSWER_WINDOW seconds, and plays in PLAY_WINDOW seconds.
ANSWER_LIMIT, ANSWER_WINDOW = 10, 10.0
PLAY_LIMIT, PLAY_WINDOW = 30, 60.0
#: Without an instructor token, one visitor (an IPv4 address, an IPv6 /64) opens at most this many classes an
#: hour, and everyone together at most ALL_START_LIMIT in ALL_START_WINDOW: many addresses cannot take the 200
#: places in a second (70 addresses filled them in 0.8 s), and a burst of starts from a few addresses holds honest
#: presenters back for minutes, not the hour it did when the site-wide count shared the per-visitor window (30
#: starts from 10 addresses in 0.1 s). A presenter with the instructor token is held by none of these: where
#: MRTR_INSTRUCTOR_TOKEN is set, only its holders open classes, so nobody else fills the places.
START_LIMIT, START_WINDOW = 3, 3600.0
ALL_START_LIMIT, ALL_START_WINDOW = 20, 300.0
#: Joins per client address a minute, and per class: a full lecture hall (MAX_LEARNERS phones) behind one router
#: joins within the minute, as the hall bench plays it (30 a minute had left 470 of 500 phones outside for a quarter
#: of an hour). These bound speed, not storage: a class never holds more than MAX_LEARNERS, there are at most
#: MRTR_MAX_CLASSES, and a code must be known to join (GUESS_LIMIT holds the guessers). What keeps an uninvited
#: crowd out once the room is in is the presenter's lock under "Manage learners".
JOIN_CLIENT_LIMIT, JOIN_CLIENT_WINDOW = MAX_LEARNERS, 60.0
JOIN_CLASS_LIMIT, JOIN_CLASS_WINDOW = MAX_LEARNERS, 60.0
#: Codes that open no class (wrong, ended or locked), per client address, before it must wait. With 31^6
#: possible codes and at most MRTR_MAX_CLASSES (200) open, one guess finds a class with odds 200 in 887.5
#: million; at 10 guesses per 10 minutes a client needs about 8 years on average, and has 1 chance in about
#: 6,000 within a class's 12 hours.
GUESS_LIMIT, GUESS_WINDOW = 10, 600.0
#: Presenter live views (SSE) opened or reopened per class and per visitor a minute. A view reconnects every 30 s
#: (MRTR_CLASS_STREAM_SECONDS), or every 2 s when the process holds its most streams; two screens of one class fit
#: easily. Past it the view is told to come back in STREAM_BACKOFF seconds, at the cost of a few bytes: 500 views
#: of one class had slowed `GET /` to 2 s by reconnecting.
STREAM_CLASS_LIMIT, STREAM_CLIENT_LIMIT, STREAM_WINDOW = 60, 60, 60.0
STREAM_BACKOFF = 30
#: Every limit of the class, by the Classroom field that holds it.
LIMITS: dict[str, tuple[int, float]] = {
    "answers": (ANSWER_LIMIT, ANSWER_WINDOW), "starts": (START_LIMIT, START_WINDOW),
    "all_starts": (ALL_START_LIMIT, ALL_START_WINDOW),
    "joins": (JOIN_CLIENT_LIMIT, JOIN_CLIENT_WINDOW), "class_joins": (JOIN_CLASS_LIMIT, JOIN_CLASS_WINDOW),
    "guesses": (GUESS_LIMIT, GUESS_WINDOW),
    "class_streams": (STREAM_CLASS_LIMIT, STREAM_WINDOW), "client_streams": (STREAM_CLIENT_LIMIT, STREAM_WINDOW),
}
NO_CLASS = "No open class has that code. Check the code on the screen."
#: The one key of the site-wide start limit.
ALL_START = "*"


@dataclass
class Classroom:
    store: ClassStore
    bus: LocalBus
    lab_path: Path
    clock: Callable[[], float]
    instructor_token: str | None
    poll_seconds: float
    stream_seconds: float
    max_classes: int
    answers: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["answers"]))
    starts: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["starts"]))
    all_starts: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["all_starts"]))
    joins: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["joins"]))
    class_joins: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["class_joins"]))
    guesses: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["guesses"]))
    class_streams: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["class_streams"]))
    client_streams: RateLimit = field(default_factory=lambda: LocalRateLimit(*LIMITS["client_streams"]))
    labs: dict[str, ClassLab] = field(default_factory=dict)
    #: The attack round's redeemed store, opened on first use: SQLite beside the class file, or Redis.
    spent_store: Callable[[], RedeemedStore] | None = None
    _spent: RedeemedStore | None = None

    def lab(self, row: ClassRow) -> ClassLab:
        lab = self.labs.get(row.id)
        if lab is None:
            if len(self.labs) > 1000:
                self.labs.clear()
            if self._spent is None:
                self._spent = self.spent_store() if self.spent_store is not None else SqliteStore(self.lab_path)
            ring = class_ring(get_services().lab_ring, row.id)
            lab = self.labs[row.id] = ClassLab(ring, self._spent, clock=self.clock)
        return lab


_build_lock = threading.Lock()
#: The attack round's spent lab tickets in Redis: apart from /mcp's redeemed tickets.
CLASS_LAB_PREFIX = "mrtr:class-lab:redeemed:"
#: Every limit's windows in Redis, one prefix per limit.
RATE_PREFIX = "mrtr:class:rate:"


def _redis_spent(url: str) -> RedeemedStore:
    from mrtr_stores.redeemed_redis import RedisStore  # only when Redis is configured

    return RedisStore.from_url(url, prefix=CLASS_LAB_PREFIX)


def own_temporary_directory(app: Flask) -> Path:
    """A fresh temporary directory that `app` owns: removed when the app is collected, or when the process ends if
    the app lives that long (a test app's class files, which no later app may see)."""
    folder = tempfile.mkdtemp(prefix="mrtr-class-")
    removal = weakref.finalize(app, shutil.rmtree, folder, ignore_errors=True)
    app.extensions.setdefault(OWNED_DIRECTORIES, []).append(removal)
    return Path(folder)


#: Where an app keeps the removals of the directories it owns, so whoever ends the app can run them at once.
OWNED_DIRECTORIES = "mrtr.owned_directories"


def remove_owned_directories(app: Flask) -> None:
    """Remove now what `own_temporary_directory` made for `app`, without waiting for it to be collected (a server
    that stops while something still holds its app). Each removal runs once, whoever calls it first."""
    for removal in app.extensions.pop(OWNED_DIRECTORIES, []):
        removal()


def classroom() -> Classroom:
    """The app's classroom services, built on first use (an app that never runs a class opens no file)."""
    found: Classroom | None = current_app.extensions.get("classroom")
    if found is not None:
        return found
    with _build_lock:
        found = current_app.extensions.get("classroom")
        if found is None:
            clock = current_app.config.get("MRTR_CLASS_CLOCK") or time.time
            settings = get_settings()
            if settings.class_db:
                path = settings.class_db
            elif current_app.testing:  # a test app never writes to the user's state dir
                app: Flask = current_app._get_current_object()  # type: ignore[attr-defined]
                path = own_temporary_directory(app) / "classroom.sqlite3"
            else:
                path = settings.state_directory() / "classroom.sqlite3"
            ttl = settings.class_ttl_hours * 3600
            found = Classroom(
                store=open_classes(settings, path=path, clock=clock, ttl_seconds=ttl),
                bus=make_bus(settings.redis_url),
                lab_path=path.with_name(path.stem + "-redeemed.sqlite3"),
                clock=clock,
                instructor_token=settings.instructor_token,
                poll_seconds=settings.class_poll_seconds,
                stream_seconds=settings.class_stream_seconds,
                max_classes=settings.max_classes,
            )
            for name, (limit, window) in LIMITS.items():  # with Redis, one window per limit for every replica
                setattr(found, name, open_rate_limit(settings, found.store, limit, window,
                                                     prefix=f"{RATE_PREFIX}{name}:"))
            if settings.redis_url:  # replicas on several hosts: all a replica needs is in Redis
                url = settings.redis_url
                found.spent_store = lambda: _redis_spent(url)
            current_app.extensions["classroom"] = found
    return found


def is_drawn(question: Question | None) -> bool:
    """A question whose situation is drawn per learner (web/quiz/draws.py): its right option differs per phone."""
    return question is not None and question.task is not None and question.task.kind == "draw" \
        and question.task.ask in quiz_draws.ASKS  # a build is a form of its own: the lesson page asks it


def room_options(question: Question) -> tuple[tuple[str, str], ...]:
    """(id, words) of the options a phone offers: a fixed question's choices, or a drawn question's outcomes (the
    same for every draw)."""
    if is_drawn(question) and question.task is not None:
        return quiz_draws.ASKS.get(question.task.ask, quiz_draws.OUTCOMES)
    return tuple((c.id, c.text) for c in question.choices)


def choice_letter(question: Question, choice_id: str | None) -> str:
    """The letter a choice goes by in the room (A, B, C... by position): the projector and the phones say the same,
    whatever the quiz data names the choice."""
    ids = [option for option, _ in room_options(question)]
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[ids.index(choice_id)] if choice_id in ids and len(ids) <= 26 else ""


def live_questions(lesson: Lesson) -> tuple[Question, ...]:
    """The lesson's questions a live class can ask: those answered by picking an option, and the drawn ones (each
    phone gets its own draw, kept by the class store). A question answered by doing (a log to read, a retry to
    edit) needs the lesson page and its lab server, so the room leaves it out."""
    return tuple(q for q in lesson.questions if (q.task is None and q.choices) or is_drawn(q))



def lesson_of(row: ClassRow) -> Lesson:
    course = get_content()
    return course.lesson(row.lesson) or course.lessons[0]


def question_of(row: ClassRow) -> Question | None:
    return lesson_of(row).question(row.question_id) if row.question_id else None



def changed(row: ClassRow) -> None:
    classroom().bus.notify(row.id)

