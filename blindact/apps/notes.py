"""Notes and a code wiki: personal notes, wiki pages with edit history and revert."""

from __future__ import annotations

import difflib
import re
import sqlite3
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.routing import Route

from blindact.apps.base import (
    App, Compare, ExactlyOne, FormErrors, Params, QueryResult, QuerySet, SeedBase,
    RequiredTextParams, TextParams, db, describe_text, form_data, has_text, log_event, me, not_found, now_iso,
    redirect, render, resolve, short, text_matches,
)

MAX_BODY = 50_000

SCHEMA = """
CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL, pinned INTEGER NOT NULL DEFAULT 0,
  updated TEXT NOT NULL, trashed INTEGER NOT NULL DEFAULT 0, seeded INTEGER NOT NULL DEFAULT 0);
CREATE TABLE pages (id INTEGER PRIMARY KEY, slug TEXT NOT NULL UNIQUE, title TEXT NOT NULL, body TEXT NOT NULL,
  updated TEXT NOT NULL);
CREATE TABLE revisions (id INTEGER PRIMARY KEY, page_id INTEGER NOT NULL REFERENCES pages(id), body TEXT NOT NULL,
  author TEXT NOT NULL, summary TEXT NOT NULL DEFAULT '', ts TEXT NOT NULL, seeded INTEGER NOT NULL DEFAULT 0);
"""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Note(_Strict):
    title: str
    body: str
    pinned: bool = False
    updated: str = "2025-03-02T18:00:00"


class Revision(_Strict):
    body: str
    author: str
    summary: str = ""
    ts: str = "2025-02-20T10:00:00"


class WikiPage(_Strict):
    slug: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    history: list[Revision] = Field(min_length=1, description="oldest first; the last one is the current text")


def _default_notes() -> list[Note]:
    return [
        Note(title="Comment for Priya's planning post", pinned=True,
             body="Thanks Priya! Product priorities: onboarding revamp, usage analytics, and the billing migration."),
        Note(title="Groceries", body="Oat milk\nCoffee beans\nTomatoes\nBasil"),
        Note(title="1:1 with Marcus", body="- Career goals for this year\n- Feedback on design review cadence\n- Conference budget",
             updated="2025-02-27T09:00:00"),
    ]


def _default_pages() -> list[WikiPage]:
    return [
        WikiPage(slug="deploy-guide", title="Deploy guide", history=[
            Revision(author="Priya Raman", summary="First version", ts="2025-01-10T10:00:00",
                     body="## Deploying\n1. Merge to main.\n2. CI builds the image.\n3. Run `make deploy ENV=prod`."),
            Revision(author="Tom Becker", summary="Add rollback", ts="2025-02-12T15:30:00",
                     body="## Deploying\n1. Merge to main.\n2. CI builds the image.\n3. Run `make deploy ENV=prod`.\n\n"
                          "## Rolling back\nRun `make rollback ENV=prod VERSION=<previous tag>`."),
        ]),
        WikiPage(slug="onboarding", title="Engineering onboarding", history=[
            Revision(author="Priya Raman", ts="2025-01-05T09:00:00",
                     body="Welcome! Start with the architecture overview, then set up your dev environment with `make dev`."),
        ]),
        WikiPage(slug="q3-priorities", title="Q3 priorities", history=[
            Revision(author="Marcus Chen", ts="2025-03-03T09:40:00", body="## Design\n- Design system v2\n- Accessibility audit"),
        ]),
    ]


class NotesSeed(SeedBase):
    notes: list[Note] = Field(default_factory=_default_notes)
    pages: list[WikiPage] = Field(default_factory=_default_pages)


# --------------------------------------------------------------------------- queries

queries = QuerySet()


class NoteRef(Params):
    title: str


class NoteParams(NoteRef, TextParams):
    pass


@queries.add("note_contains", NoteParams)
def note_contains(conn: sqlite3.Connection, p: NoteParams) -> QueryResult:
    """A (not deleted) note with this title exists, and its text contains `contains` / matches `body`."""
    note = resolve(conn, "notes", "title", p.title, where="trashed = 0")
    if note is None:
        return QueryResult(passed=False, value=None, detail=f"no note titled {p.title!r}")
    ok = text_matches(note["body"], p.contains, p.body)
    return QueryResult(passed=ok, value=note["body"], detail=f"note {note['title']!r}: {short(note['body'])!r}")


@queries.add("note_deleted", NoteRef)
def note_deleted(conn: sqlite3.Connection, p: NoteRef) -> QueryResult:
    """The seeded note with this title was deleted."""
    note = resolve(conn, "notes", "title", p.title)
    if note is None:
        return QueryResult(passed=False, detail=f"no note titled {p.title!r}")
    return QueryResult(passed=bool(note["trashed"]), value=bool(note["trashed"]),
                       detail=f"note {note['title']!r} is {'deleted' if note['trashed'] else 'still there'}")


class PageRef(ExactlyOne):
    identifiers: ClassVar[tuple[str, ...]] = ("slug", "title")
    slug: str | None = None
    title: str | None = None


def _page(conn: sqlite3.Connection, p: PageRef) -> tuple[sqlite3.Row | None, str]:
    if p.slug is not None:
        return conn.execute("SELECT * FROM pages WHERE slug = ?", (p.slug,)).fetchone(), f"page {p.slug!r}"
    return resolve(conn, "pages", "title", p.title or ""), f"page {p.title!r}"


class PageContainsParams(PageRef, RequiredTextParams):
    pass


@queries.add("page_contains", PageContainsParams)
def page_contains(conn: sqlite3.Connection, p: PageContainsParams) -> QueryResult:
    """The wiki page's current text contains `contains` / matches `body`."""
    page, what = _page(conn, p)
    if page is None:
        return QueryResult(passed=False, detail=f"{what} not found")
    ok = text_matches(page["body"], p.contains, p.body)
    return QueryResult(passed=ok, value=ok, detail=f"{what} {'has' if ok else 'has no'} text"
                       + describe_text(p.contains, p.body))


class PageEditedParams(PageRef, Compare):
    pass


@queries.add("page_edits", PageEditedParams)
def page_edits(conn: sqlite3.Connection, p: PageEditedParams) -> QueryResult:
    """Number of edits to the page during the episode (no bounds: passes when there is at least one)."""
    page, what = _page(conn, p)
    if page is None:
        return QueryResult(passed=False, detail=f"{what} not found")
    n = conn.execute("SELECT COUNT(*) FROM revisions WHERE page_id = ? AND seeded = 0", (page["id"],)).fetchone()[0]
    if all(getattr(p, k) is None for k in ("eq", "ne", "gt", "ge", "lt", "le")):
        return QueryResult(passed=n > 0, value=n, detail=f"{what} edited {n} time(s)")
    return p.check(n, f"edits to {what}")


class NewPageParams(TextParams):
    title_contains: str


@queries.add("page_created", NewPageParams)
def page_created(conn: sqlite3.Connection, p: NewPageParams) -> QueryResult:
    """A new wiki page (title containing text, body containing text / matching `body`) was created."""
    rows = conn.execute("SELECT p.* FROM pages p WHERE NOT EXISTS "
                        "(SELECT 1 FROM revisions r WHERE r.page_id = p.id AND r.seeded = 1)").fetchall()
    hits = [r for r in rows if has_text(r["title"], p.title_contains) and text_matches(r["body"], p.contains, p.body)]
    return QueryResult(passed=bool(hits), value=[r["slug"] for r in hits],
                       detail=f"new pages: {', '.join(r['title'] for r in rows) or 'none'}")


# ---- contextual task suite v2 (issue 15): a wiki page's "key: value" lines, to parse the value


class PageFieldParams(PageRef):
    key: str = Field(min_length=1)


@queries.add("page_field", PageFieldParams)
def page_field(conn: sqlite3.Connection, p: PageFieldParams) -> QueryResult:
    """The values of the page's "key: value" lines (a leading "-" or "*" bullet allowed), joined
    with " | ": judge them with `value:` (a date, a number), so "Detected: 1 March, 9 AM" is read
    as a date and not matched as text."""
    page, what = _page(conn, p)
    if page is None:
        return QueryResult(passed=False, detail=f"{what} not found")
    key = re.escape(p.key.strip()).replace(r"\ ", r"\s+")
    values = [m.group(1) for line in page["body"].splitlines()
              if (m := re.fullmatch(rf"\s*(?:[-*]\s+)?(?:\*\*)?{key}(?:\*\*)?\s*[:=]\s*(.*?)\s*", line, re.I))]
    if not values:
        return QueryResult(passed=False, detail=f"{what} has no line '{p.key}: ...'")
    return QueryResult(passed=True, value=" | ".join(values), detail=f"{what}: {p.key}: " + " | ".join(map(repr, values)))


# --------------------------------------------------------------------------- pages


def _notes(conn: sqlite3.Connection, q: str = "") -> list[dict]:
    rows = [dict(r) for r in conn.execute("SELECT * FROM notes WHERE trashed = 0 ORDER BY pinned DESC, updated DESC")]
    return [r for r in rows if has_text(f"{r['title']} {r['body']}", q)] if q else rows


async def notes_home(request: Request, errors: dict | None = None, values: dict | None = None, status: int = 200,
                     current: int | None = None):
    nid = current if current is not None else request.path_params.get("nid")
    q = request.query_params.get("q", "")
    with db(request) as conn:
        notes = _notes(conn, q)
        note = None
        if nid is not None:
            note = conn.execute("SELECT * FROM notes WHERE id = ? AND trashed = 0", (nid,)).fetchone()
            if note is None:
                return not_found(request, "That note")
        elif notes and "new" not in request.query_params:
            note = conn.execute("SELECT * FROM notes WHERE id = ?", (notes[0]["id"],)).fetchone()
    if values is None:
        values = {"title": note["title"], "body": note["body"]} if note else {}
    return render(request, "notes/notes.html", status_code=status, notes=notes, note=dict(note) if note else None,
                  values=values, errors=errors or {}, q=q)


def _check_note(form: dict) -> FormErrors:
    errors = FormErrors()
    if not form.get("title"):
        errors.add("title", "Give the note a title.")
    elif len(form["title"]) > 200:
        errors.add("title", "Titles can be at most 200 characters.")
    if len(form.get("body", "")) > MAX_BODY:
        errors.add("body", f"Notes can be at most {MAX_BODY:,} characters.")
    return errors


async def save_note(request: Request):
    nid = request.path_params.get("nid")
    form = await form_data(request)
    errors = _check_note(form)
    with db(request) as conn:
        if errors:
            conn.rollback()
        elif nid is None:
            nid = conn.execute("INSERT INTO notes(title, body, updated) VALUES (?, ?, ?)",
                               (form["title"], form.get("body", ""), now_iso())).lastrowid
            log_event(conn, "note_created", note_id=nid, title=form["title"], body=form.get("body", ""))
        else:
            old = conn.execute("SELECT * FROM notes WHERE id = ? AND trashed = 0", (nid,)).fetchone()
            if old is None:
                return not_found(request, "That note")
            conn.execute("UPDATE notes SET title = ?, body = ?, updated = ? WHERE id = ?", (form["title"], form.get("body", ""), now_iso(), nid))
            log_event(conn, "note_edited", note_id=nid, title=form["title"], before=old["body"], after=form.get("body", ""))
    if errors:
        return await notes_home(request, errors.errors, form, 422, current=nid)
    return redirect(f"/note/{nid}?notice=Note+saved")


async def delete_note(request: Request):
    nid = request.path_params["nid"]
    with db(request) as conn:
        note = conn.execute("SELECT * FROM notes WHERE id = ? AND trashed = 0", (nid,)).fetchone()
        if note is None:
            return not_found(request, "That note")
        conn.execute("UPDATE notes SET trashed = 1 WHERE id = ?", (nid,))
        log_event(conn, "note_deleted", note_id=nid, title=note["title"])
    return redirect("/?notice=Note+deleted")


async def wiki_home(request: Request):
    with db(request) as conn:
        pages = [dict(r) for r in conn.execute(
            "SELECT p.*, (SELECT author FROM revisions r WHERE r.page_id = p.id ORDER BY r.id DESC LIMIT 1) AS last_author "
            "FROM pages p ORDER BY lower(title)")]
    return render(request, "notes/wiki.html", pages=pages)


def _page_row(conn: sqlite3.Connection, slug: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM pages WHERE slug = ?", (slug,)).fetchone()


def _render_wiki(text: str) -> list[tuple[str, str]]:
    """Tiny markup: '## ' headings, '- ' or '1. ' list items, paragraphs. Escaping stays with Jinja."""
    blocks = []
    for line in text.splitlines():
        if line.startswith("## "):
            blocks.append(("h2", line[3:]))
        elif re.match(r"^(- |\d+\. )", line):
            blocks.append(("li", re.sub(r"^(- |\d+\. )", "", line)))
        elif line.strip():
            blocks.append(("p", line))
    return blocks


async def wiki_page(request: Request):
    with db(request) as conn:
        page = _page_row(conn, request.path_params["slug"])
        if page is None:
            return not_found(request, f"Wiki page {request.path_params['slug']!r}")
        last = conn.execute("SELECT * FROM revisions WHERE page_id = ? ORDER BY id DESC LIMIT 1", (page["id"],)).fetchone()
    return render(request, "notes/page.html", page=dict(page), blocks=_render_wiki(page["body"]), last=dict(last))


async def wiki_edit(request: Request, errors: dict | None = None, values: dict | None = None, status: int = 200):
    slug = request.path_params.get("slug")
    page = None
    if slug is not None:
        with db(request) as conn:
            page = _page_row(conn, slug)
        if page is None:
            return not_found(request, f"Wiki page {slug!r}")
    if values is None:
        values = {"title": page["title"], "body": page["body"]} if page else {}
    return render(request, "notes/edit.html", status_code=status, page=dict(page) if page else None, values=values, errors=errors or {})


def _slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60]


async def wiki_save(request: Request):
    slug = request.path_params.get("slug")
    form = await form_data(request)
    errors = FormErrors()
    title, body, summary = form.get("title", ""), form.get("body", ""), form.get("summary", "")
    if not title:
        errors.add("title", "Give the page a title.")
    if not body:
        errors.add("body", "A page can't be empty.")
    elif len(body) > MAX_BODY:
        errors.add("body", f"Pages can be at most {MAX_BODY:,} characters.")
    with db(request) as conn:
        author = me(conn)["name"]
        page = _page_row(conn, slug) if slug else None
        if slug and page is None:
            return not_found(request, f"Wiki page {slug!r}")
        if page is None and not errors:
            slug = _slugify(title)
            if not slug:
                errors.add("title", "Use at least one letter or digit in the title.")
            elif _page_row(conn, slug):
                errors.add("title", f"A page called “{title}” already exists.")
        if page is not None and not errors and body == page["body"] and title == page["title"]:
            errors.add("body", "No changes to save.")
        if errors:
            conn.rollback()
        else:
            now = now_iso()
            if page is None:
                pid = conn.execute("INSERT INTO pages(slug, title, body, updated) VALUES (?, ?, ?, ?)", (slug, title, body, now)).lastrowid
                log_event(conn, "page_created", slug=slug, title=title, body=body)
            else:
                pid = page["id"]
                conn.execute("UPDATE pages SET title = ?, body = ?, updated = ? WHERE id = ?", (title, body, now, pid))
                log_event(conn, "page_edited", slug=slug, title=title, before=page["body"], after=body, summary=summary)
            conn.execute("INSERT INTO revisions(page_id, body, author, summary, ts) VALUES (?, ?, ?, ?, ?)",
                         (pid, body, author, summary or ("Created page" if page is None else "Edited"), now))
    if errors:
        return await wiki_edit(request, errors.errors, form, 422)
    return redirect(f"/wiki/{slug}?notice=Page+saved")


async def wiki_history(request: Request):
    with db(request) as conn:
        page = _page_row(conn, request.path_params["slug"])
        if page is None:
            return not_found(request, f"Wiki page {request.path_params['slug']!r}")
        revs = [dict(r) for r in conn.execute("SELECT * FROM revisions WHERE page_id = ? ORDER BY id DESC", (page["id"],))]
    for newer, older in zip(revs, revs[1:] + [None]):
        before = older["body"].splitlines() if older else []
        newer["diff"] = [ln for ln in difflib.ndiff(before, newer["body"].splitlines()) if ln[:1] in "+-"]
    return render(request, "notes/history.html", page=dict(page), revs=revs)


async def wiki_revert(request: Request):
    with db(request) as conn:
        page = _page_row(conn, request.path_params["slug"])
        rev = conn.execute("SELECT * FROM revisions WHERE id = ? AND page_id = ?",
                           (request.path_params["rid"], page["id"] if page else None)).fetchone()
        if page is None or rev is None:
            return not_found(request, "That revision")
        now = now_iso()
        conn.execute("UPDATE pages SET body = ?, updated = ? WHERE id = ?", (rev["body"], now, page["id"]))
        conn.execute("INSERT INTO revisions(page_id, body, author, summary, ts) VALUES (?, ?, ?, ?, ?)",
                     (page["id"], rev["body"], me(conn)["name"], f"Reverted to revision {rev['id']}", now))
        log_event(conn, "page_reverted", slug=page["slug"], revision=rev["id"], before=page["body"], after=rev["body"])
    return redirect(f"/wiki/{page['slug']}?notice=Page+reverted")


class NotesApp(App):
    name = "notes"
    title = "Notes & Wiki"
    schema = SCHEMA
    SeedModel = NotesSeed
    app_queries = queries
    nav = [("Notes", "/", "note"), ("Code wiki", "/wiki", "book")]

    @property
    def routes(self) -> list:
        return [
            Route("/", notes_home),
            Route("/note/{nid:int}", notes_home),
            Route("/notes", save_note, methods=["POST"]),
            Route("/note/{nid:int}", save_note, methods=["POST"]),
            Route("/note/{nid:int}/delete", delete_note, methods=["POST"]),
            Route("/wiki", wiki_home),
            Route("/wiki/new", wiki_edit),
            Route("/wiki/new", wiki_save, methods=["POST"]),
            Route("/wiki/{slug}", wiki_page),
            Route("/wiki/{slug}/edit", wiki_edit),
            Route("/wiki/{slug}/edit", wiki_save, methods=["POST"]),
            Route("/wiki/{slug}/history", wiki_history),
            Route("/wiki/{slug}/revert/{rid:int}", wiki_revert, methods=["POST"]),
        ]

    def seed_content(self, conn: sqlite3.Connection, data: NotesSeed) -> None:
        conn.executemany("INSERT INTO notes(title, body, pinned, updated, seeded) VALUES (?, ?, ?, ?, 1)",
                         [(n.title, n.body, int(n.pinned), n.updated) for n in data.notes])
        for page in data.pages:
            current = page.history[-1]
            pid = conn.execute("INSERT INTO pages(slug, title, body, updated) VALUES (?, ?, ?, ?)",
                               (page.slug, page.title, current.body, current.ts)).lastrowid
            conn.executemany("INSERT INTO revisions(page_id, body, author, summary, ts, seeded) VALUES (?, ?, ?, ?, ?, 1)",
                             [(pid, r.body, r.author, r.summary, r.ts) for r in page.history])
