"""Where rounds live: one small store over SQLAlchemy Core, SQLite by default, PostgreSQL too.

``ENCODER_LAB_ROUNDS_DB`` names the database: ``sqlite:///path/to/rounds.sqlite3`` (the
default is ``.cache/rounds.sqlite3``, one file every replica of ``make serve-replicas`` opens)
or ``postgresql://user:password@host/db`` for replicas on several machines (through psycopg 3).
SQLite runs in WAL mode: readers never wait for the writer, and two processes' writes wait for
each other (``busy_timeout``) instead of failing. The same statements serve both databases;
only the upsert's import differs, and its call is the same in both dialects.

Three tables: ``rounds`` (the sentence, the model, a hash of the teacher's token, times and
state), ``guesses`` (one row per student of a round: a second guess replaces the first) and
``hidden`` (the guesses a teacher took off the screen). Times are seconds since the epoch.
"""

from __future__ import annotations

import os
import threading
import time

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from ..registry import catalogue

METADATA = sa.MetaData()
ROUNDS = sa.Table(
    "encoder_lab_rounds", METADATA,
    sa.Column("code", sa.String(6), primary_key=True),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("model_key", sa.String(200), nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=False),
    sa.Column("opened", sa.Float, nullable=False),
    sa.Column("expires", sa.Float, nullable=False),
    sa.Column("closed", sa.Boolean, nullable=False, default=False),
    sa.Column("revealed", sa.Boolean, nullable=False, default=False),
)
GUESSES = sa.Table(
    "encoder_lab_guesses", METADATA,
    sa.Column("code", sa.String(6), primary_key=True),
    sa.Column("student", sa.String(64), primary_key=True),
    sa.Column("guess", sa.String(200), nullable=False),  # as the model's vocabulary spells it
    sa.Column("at", sa.Float, nullable=False),
)
HIDDEN = sa.Table(
    "encoder_lab_hidden", METADATA,
    sa.Column("code", sa.String(6), primary_key=True),
    sa.Column("guess", sa.String(200), primary_key=True),
)
_INSERT = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}  # both have on_conflict_do_*

_ENGINES: dict[str, sa.Engine] = {}
_ENGINES_LOCK = threading.Lock()  # one engine (one pool, one create_all) per URL per process


def database_url() -> str:
    default = f"sqlite:///{catalogue.REPO_ROOT / '.cache' / 'rounds.sqlite3'}"
    return os.environ.get("ENCODER_LAB_ROUNDS_DB", default).strip() or default


def engine() -> sa.Engine:
    """The engine of ``database_url()``, its tables created on first use."""
    url = database_url()
    with _ENGINES_LOCK:
        if url not in _ENGINES:
            _ENGINES[url] = _connect(url)
        return _ENGINES[url]


def _connect(url: str) -> sa.Engine:
    parsed = sa.make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")  # psycopg 3, not SQLAlchemy's psycopg2 default
    if parsed.get_backend_name() not in _INSERT:
        raise ValueError(f"ENCODER_LAB_ROUNDS_DB must be a sqlite:/// or postgresql:// URL; got {parsed.drivername}.")
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        os.makedirs(os.path.dirname(os.path.abspath(parsed.database)), exist_ok=True)
    eng = sa.create_engine(parsed, pool_pre_ping=True)
    if eng.dialect.name == "sqlite":
        sa.event.listen(eng, "connect", _sqlite_pragmas)
    for attempt in range(3):  # two replicas creating the tables at once: the loser sees them next time
        try:
            METADATA.create_all(eng)
            break
        except sa.exc.DBAPIError:
            if attempt == 2:
                raise
            time.sleep(0.2)
    return eng


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")  # WAL's safe setting: a commit survives a process crash
    cursor.execute("PRAGMA busy_timeout=10000")  # another replica's write: wait for it, do not fail
    cursor.close()


# --- rounds ---------------------------------------------------------------------------------

def add_round(code: str, text: str, model_key: str, token_hash: str, opened: float, expires: float) -> bool:
    """Insert a round; False when the code is taken."""
    with engine().begin() as conn:
        try:
            conn.execute(ROUNDS.insert().values(code=code, text=text, model_key=model_key, token_hash=token_hash,
                                                opened=opened, expires=expires, closed=False, revealed=False))
        except sa.exc.IntegrityError:
            return False
    return True


def get_round(code: str) -> dict | None:
    with engine().connect() as conn:
        row = conn.execute(sa.select(ROUNDS).where(ROUNDS.c.code == code)).mappings().first()
    return dict(row) if row else None


def count_rounds() -> int:
    with engine().connect() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(ROUNDS)).scalar_one())


def set_round(code: str, **values) -> None:
    """Update a round's ``closed`` / ``revealed``."""
    with engine().begin() as conn:
        conn.execute(ROUNDS.update().where(ROUNDS.c.code == code).values(**values))


def delete_before(cutoff: float) -> int:
    """Remove the rounds opened before ``cutoff`` with their guesses; how many rounds went."""
    with engine().begin() as conn:
        old = sa.select(ROUNDS.c.code).where(ROUNDS.c.opened < cutoff)
        conn.execute(GUESSES.delete().where(GUESSES.c.code.in_(old)))
        conn.execute(HIDDEN.delete().where(HIDDEN.c.code.in_(old)))
        return conn.execute(ROUNDS.delete().where(ROUNDS.c.opened < cutoff)).rowcount


# --- guesses --------------------------------------------------------------------------------

def put_guess(code: str, student: str, guess: str, at: float, max_students: int) -> bool | None:
    """Store a student's guess, replacing theirs; True when it replaced one, None when the
    round already has ``max_students`` other students."""
    with engine().begin() as conn:
        mine = GUESSES.c.code == code
        had = conn.execute(sa.select(GUESSES.c.student).where(mine, GUESSES.c.student == student)).first()
        if had is None and conn.execute(sa.select(sa.func.count()).where(mine)).scalar_one() >= max_students:
            return None
        upsert = _INSERT[conn.dialect.name](GUESSES).values(code=code, student=student, guess=guess, at=at)
        conn.execute(upsert.on_conflict_do_update(index_elements=["code", "student"],
                                                  set_={"guess": guess, "at": at}))
    return had is not None


def guess_counts(code: str) -> list[tuple[str, int]]:
    """(guess, students) for every guess of a round."""
    with engine().connect() as conn:
        rows = conn.execute(sa.select(GUESSES.c.guess, sa.func.count()).where(GUESSES.c.code == code)
                            .group_by(GUESSES.c.guess))
        return [(g, int(n)) for g, n in rows]


def hide(code: str, guess: str) -> None:
    with engine().begin() as conn:
        conn.execute(_INSERT[conn.dialect.name](HIDDEN).values(code=code, guess=guess).on_conflict_do_nothing())


def hidden(code: str) -> set[str]:
    with engine().connect() as conn:
        return set(conn.execute(sa.select(HIDDEN.c.guess).where(HIDDEN.c.code == code)).scalars())
