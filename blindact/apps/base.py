"""The contract every offline web app follows, plus the helpers they share.

An app is a schema, a seed model, Starlette routes and named state queries. State lives only in
that app's SQLite file (one connection per request, nothing cached in memory), so the state store
can swap the file between episodes and the next request sees the new state.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping

import jinja2
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute

from blindact.resources import data_dir
from blindact.values import Bounds, Match, norm

# Tables every app has: who is signed in (meta) and what the user did (events).
COMMON_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts TEXT NOT NULL,
  kind TEXT NOT NULL,
  payload_json TEXT NOT NULL
);
"""


# --------------------------------------------------------------------------- query contract


class QueryResult(BaseModel):
    passed: bool
    detail: str
    value: Any = None


class Params(BaseModel):
    """Base for query parameters: unknown keys are an error so typos in task files fail at load."""

    model_config = ConfigDict(extra="forbid")


class NoParams(Params):
    pass


class Compare(Params, Bounds):
    """Numeric comparisons on a query's value; every given bound must hold (none given: value must exist)."""

    def check(self, value: float | None, what: str) -> QueryResult:
        if value is None:
            return QueryResult(passed=False, detail=f"{what}: no value", value=None)
        shown = f"{value:g}" if isinstance(value, (int, float)) else str(value)
        failed = self.failed(value)
        if failed:
            return QueryResult(passed=False, detail=f"{what} is {shown}, not {' and '.join(failed)}", value=value)
        cond = f" ({self.describe()})" if self.given() else ""
        return QueryResult(passed=True, detail=f"{what} is {shown}{cond}", value=value)


QueryFn = Callable[[sqlite3.Connection, Any], QueryResult]


@dataclass(frozen=True)
class Query:
    Params: type[BaseModel]
    fn: QueryFn
    description: str = ""

    def run(self, conn: sqlite3.Connection, params: Mapping[str, Any] | BaseModel) -> QueryResult:
        parsed = params if isinstance(params, self.Params) else self.Params.model_validate(dict(params))
        return self.fn(conn, parsed)


class QuerySet(dict[str, Query]):
    """A dict of queries filled by the `@queries.add(...)` decorator in each app module."""

    def add(self, name: str, params: type[BaseModel] = NoParams) -> Callable[[QueryFn], QueryFn]:
        def register(fn: QueryFn) -> QueryFn:
            if name in self:
                raise ValueError(f"query {name!r} registered twice")
            self[name] = Query(Params=params, fn=fn, description=(fn.__doc__ or "").strip())
            return fn

        return register


# --------------------------------------------------------------------------- text matching


def has_text(haystack: str | None, needle: str | None) -> bool:
    return needle is None or norm(needle) in norm(haystack)


def text_matches(text: str | None, contains: str | None = None, body: Match | None = None) -> bool:
    """Whether one record's free text (a post, a comment, a message, a page) holds `contains` (as is, case-
    and whitespace-insensitively) and satisfies `body` (a `Match`: words in any form, a weekday, several
    ideas at once with `all_of`); a condition not given holds. The queries that judge what an agent wrote
    take both, so a check can accept any wording of the content it needs."""
    return has_text(text, contains) and (body is None or body.test(text or ""))


class TextParams(Params):
    """The free-text conditions of a query over what the user wrote: `contains` (a phrase, as is) and/or
    `body` (a `Match` on the whole text of one record); see `text_matches`."""

    contains: str | None = None
    body: Match | None = None


class RequiredTextParams(TextParams):
    """`TextParams` of a query that is about the text: one of `contains` and `body` must be given."""

    @model_validator(mode="after")
    def _some_text(self) -> "RequiredTextParams":
        if self.contains is None and self.body is None:
            raise ValueError("give `contains` (a phrase) or `body` (a match on the text)")
        return self


def describe_text(contains: str | None = None, body: Match | None = None) -> str:
    """" containing 'x'" / " that <body description>" for a query's detail ("" when neither is given)."""
    return (f" containing {contains!r}" if contains else "") + (f" that {body.describe()}" if body else "")


def short(text: str | None, n: int = 60) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    return text if len(text) <= n else text[: n - 1] + "…"


# --------------------------------------------------------------------------- common queries


class EventLoggedParams(Params):
    kind: str
    contains: str | None = None
    # payload field -> what its value must be: a refused thermostat change is harm only for THIS
    # device and an out-of-range value, not for a typo (a list field passes when any item does)
    where: dict[str, Match] = {}


def _payload_matches(payload: dict, where: dict[str, Match]) -> bool:
    for key, match in where.items():
        value = payload.get(key)
        items = value if isinstance(value, list) else [value]
        if not any(match.test(v) for v in items):
            return False
    return True


def _event_logged(conn: sqlite3.Connection, p: EventLoggedParams) -> QueryResult:
    rows = conn.execute("SELECT ts, payload_json FROM events WHERE kind = ? ORDER BY id", (p.kind,)).fetchall()
    hits = [r for r in rows if has_text(r[1], p.contains) and _payload_matches(json.loads(r[1]), p.where)]
    what = f"event {p.kind!r}" + (f" containing {p.contains!r}" if p.contains else "")
    if p.where:
        what += " with " + ", ".join(f"{k} {m.describe()}" for k, m in p.where.items())
    if hits:
        return QueryResult(passed=True, detail=f"{what} logged {len(hits)} time(s)", value=len(hits))
    return QueryResult(passed=False, detail=f"no {what} (kind seen {len(rows)} time(s))", value=0)


class EventCountParams(Compare):
    kind: str | None = None


def _event_count(conn: sqlite3.Connection, p: EventCountParams) -> QueryResult:
    if p.kind is None:
        n = conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    else:
        n = conn.execute("SELECT COUNT(*) FROM events WHERE kind = ?", (p.kind,)).fetchone()[0]
    return p.check(n, f"number of {p.kind or 'all'} events")


COMMON_QUERIES: dict[str, Query] = {
    "event_logged": Query(EventLoggedParams, _event_logged, "an event of this kind (whose payload contains text, whose payload fields match `where`) was logged"),
    "event_count": Query(EventCountParams, _event_count, "number of events (of a kind), with comparisons"),
}


# --------------------------------------------------------------------------- seed helpers


class Person(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = "Alex Morgan"
    email: str = "alex.morgan@northwind.example"


class SeedBase(BaseModel):
    """Every seed names the signed-in user; apps add their own content fields."""

    model_config = ConfigDict(extra="forbid")
    user: Person = Field(default_factory=Person)


def seed_key(app_name: str, data: BaseModel) -> str:
    raw = json.dumps(data.model_dump(mode="json"), sort_keys=True)
    return f"{app_name}:{hashlib.sha256(raw.encode()).hexdigest()[:16]}"


# --------------------------------------------------------------------------- App


class App:
    """One web app. Subclasses set the class attributes and implement `routes` and `seed_content`."""

    name: ClassVar[str]
    title: ClassVar[str]
    schema: ClassVar[str]
    SeedModel: ClassVar[type[SeedBase]]
    app_queries: ClassVar[dict[str, Query]]
    # Sidebar links: (label, path, icon name from the shared sprite).
    nav: ClassVar[list[tuple[str, str, str]]] = []

    @property
    def host(self) -> str:
        return f"{self.name}.localhost"

    @property
    def queries(self) -> dict[str, Query]:
        return {**COMMON_QUERIES, **self.app_queries}

    @property
    def routes(self) -> list[BaseRoute]:
        raise NotImplementedError

    def seed(self, conn: sqlite3.Connection, data: SeedBase) -> None:
        conn.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?)",
            [("user_name", data.user.name), ("user_email", data.user.email)],
        )
        self.seed_content(conn, data)

    def seed_content(self, conn: sqlite3.Connection, data: Any) -> None:
        raise NotImplementedError

    def build_db(self, data: SeedBase | None = None) -> bytes:
        """A fresh seeded database, serialized; the state store caches these bytes per seed."""
        data = data if data is not None else self.SeedModel()
        conn = sqlite3.connect(":memory:")
        try:
            conn.executescript(COMMON_SCHEMA + self.schema)
            self.seed(conn, data)
            conn.commit()
            return conn.serialize()
        finally:
            conn.close()


# --------------------------------------------------------------------------- request helpers


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


@contextmanager
def open_db(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path, timeout=5)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA foreign_keys = ON")
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def db(request: Request) -> Any:
    """Per-request connection to the app's state file (committed on success, rolled back on error)."""
    return open_db(request.app.state.db_path)


def log_event(conn: sqlite3.Connection, kind: str, **payload: Any) -> None:
    conn.execute(
        "INSERT INTO events(ts, kind, payload_json) VALUES (?, ?, ?)",
        (now_iso(), kind, json.dumps(payload, sort_keys=True, default=str)),
    )


def me(conn: sqlite3.Connection) -> dict[str, str]:
    rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    return {"name": rows.get("user_name", ""), "email": rows.get("user_email", "")}


def redirect(url: str) -> RedirectResponse:
    # 303 so the browser follows a POST with a GET (post/redirect/get, no resubmission on reload).
    return RedirectResponse(url, status_code=303)


async def form_data(request: Request) -> dict[str, str]:
    form = await request.form()
    return {k: v.strip() if isinstance(v, str) else v for k, v in form.items()}


def int_param(value: str | int) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# --------------------------------------------------------------------------- templates


def _initials(name: str) -> str:
    parts = [p for p in re.split(r"[\s._@-]+", name or "") if p]
    return "".join(p[0] for p in parts[:2]).upper() or "?"


def _avatar_hue(name: str) -> int:
    return int(hashlib.md5((name or "").encode()).hexdigest()[:4], 16) % 360


def _when(ts: str | None) -> str:
    if not ts:
        return ""
    try:
        dt = datetime.fromisoformat(ts)
    except ValueError:
        return ts
    return dt.strftime("%b %-d, %Y") if len(ts) <= 10 else dt.strftime("%b %-d, %H:%M")


def _money(cents: int | None) -> str:
    if cents is None:
        return ""
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) / 100:,.2f}"


def _filesize(n: int | None) -> str:
    n = n or 0
    for unit in ("B", "KB", "MB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


_ENV: jinja2.Environment | None = None


def webapps_dir() -> Path:
    return data_dir("envs") / "webapps"


def templates() -> jinja2.Environment:
    global _ENV
    if _ENV is None:
        env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(webapps_dir() / "templates"),
            autoescape=jinja2.select_autoescape(["html"]),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        env.filters.update(initials=_initials, hue=_avatar_hue, when=_when, money=_money, filesize=_filesize, short=short)
        _ENV = env
    return _ENV


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    app: App = request.app.state.app_def
    with db(request) as conn:
        user = me(conn)
    context.setdefault("errors", {})
    context.setdefault("values", {})
    context.setdefault("notice", request.query_params.get("notice", ""))
    html = templates().get_template(template).render(
        app=app, me=user, path=request.url.path, request=request, **context
    )
    return HTMLResponse(html, status_code=status_code)


def not_found(request: Request, what: str) -> HTMLResponse:
    return render(request, "not_found.html", status_code=404, what=what)


def file_response(content: bytes | str, filename: str, mime: str, inline: bool = False) -> Response:
    body = content.encode() if isinstance(content, str) else content
    disposition = "inline" if inline else "attachment"
    safe = filename.replace('"', "")
    return Response(body, media_type=mime, headers={"Content-Disposition": f'{disposition}; filename="{safe}"'})


@dataclass
class FormErrors:
    """Field -> message; the form is re-rendered with these next to the fields and nothing is stored."""

    errors: dict[str, str] = field(default_factory=dict)

    def add(self, field_name: str, message: str) -> None:
        self.errors.setdefault(field_name, message)

    def __bool__(self) -> bool:
        return bool(self.errors)


EMAIL_RE = re.compile(r"^[A-Za-z0-9._%+'-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")


def parse_money(raw: str) -> int | None:
    """'1,234.50' or '$12' -> cents; None when it is not a plain amount with at most 2 decimals."""
    cleaned = (raw or "").replace(",", "").replace("$", "").strip()
    if not re.fullmatch(r"-?\d+(\.\d{1,2})?", cleaned):
        return None
    whole, _, frac = cleaned.partition(".")
    sign = -1 if whole.startswith("-") else 1
    return sign * (abs(int(whole)) * 100 + int((frac + "00")[:2]))


class ExactlyOne(Params):
    """Mixin check for params that accept alternative identifiers (id or title)."""

    identifiers: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="after")
    def _one_identifier(self) -> "ExactlyOne":
        keys = self.identifiers
        given = [k for k in keys if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(keys)} (got {', '.join(given) or 'none'})")
        return self


def resolve(conn: sqlite3.Connection, table: str, column: str, value: str, where: str = "1") -> sqlite3.Row | None:
    """Row whose `column` equals `value` ignoring case/spacing, else the only row containing it.

    `table`, `column` and `where` come from app code, never from a request.
    """
    rows = conn.execute(f"SELECT * FROM {table} WHERE {where}").fetchall()
    exact = [r for r in rows if norm(r[column]) == norm(value)]
    if exact:
        return exact[0]
    partial = [r for r in rows if norm(value) in norm(r[column])]
    return partial[0] if len(partial) == 1 else None
