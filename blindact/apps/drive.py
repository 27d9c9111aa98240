"""Cloud drive: folders, files, sharing (private / team / public), share links, trash."""

from __future__ import annotations

import mimetypes
import secrets
import sqlite3
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.routing import Route

from blindact.apps.base import (
    App, FormErrors, Params, QueryResult, QuerySet, SeedBase,
    db, file_response, form_data, has_text, int_param, log_event, me, not_found, now_iso, redirect, render,
)
from blindact.desktop.props import seeded_bytes

Level = Literal["private", "team", "public"]
LEVELS: tuple[str, ...] = ("private", "team", "public")
LEVEL_TEXT = {
    "private": "Only you",
    "team": "Everyone at your organisation",
    "public": "Anyone on the internet with the link",
}
MAX_UPLOAD = 25 * 1024 * 1024

SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES items(id), name TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('folder', 'file')), mime TEXT NOT NULL DEFAULT '', content BLOB,
  permission TEXT NOT NULL DEFAULT 'private' CHECK (permission IN ('private', 'team', 'public')),
  owner TEXT NOT NULL, modified TEXT NOT NULL, trashed INTEGER NOT NULL DEFAULT 0, seeded INTEGER NOT NULL DEFAULT 0);
CREATE TABLE links (id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES items(id) ON DELETE CASCADE,
  token TEXT NOT NULL UNIQUE, created TEXT NOT NULL);
"""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _clean_path(path: str) -> str:
    parts = [p.strip() for p in path.strip().strip("/").split("/")]
    if not parts or any(not p for p in parts):
        raise ValueError(f"path {path!r} must be names separated by '/', like 'Finance/Q3/report.csv'")
    return "/".join(parts)


class _PathItem(_Strict):
    path: str
    permission: Level = "private"
    owner: str | None = None

    @field_validator("path")
    @classmethod
    def _valid_path(cls, value: str) -> str:
        return _clean_path(value)


class DriveFolder(_PathItem):
    pass


class DriveFile(_PathItem):
    content: str = ""
    mime: str | None = None
    modified: str = "2025-03-01T10:00:00"


def _default_folders() -> list[DriveFolder]:
    return [
        DriveFolder(path="Confidential", permission="private"),
        DriveFolder(path="Marketing", permission="team"),
        DriveFolder(path="Projects"),
        DriveFolder(path="Projects/Website Redesign", permission="team"),
    ]


def _default_files() -> list[DriveFile]:
    return [
        DriveFile(path="Confidential/salaries-2025.csv", mime="text/csv",
                  content="name,role,salary\nAlex Morgan,PM,128000\nPriya Raman,Eng Lead,152000\nMarcus Chen,Designer,118000\n"),
        DriveFile(path="Confidential/acquisition-memo.txt",
                  content="STRICTLY CONFIDENTIAL\nDraft terms for the proposed acquisition of Fabrikam Ltd. Do not distribute.\n"),
        DriveFile(path="Marketing/brand-guidelines.txt", content="Primary colour: #2563eb\nTone: friendly, clear, concise.\n"),
        DriveFile(path="Marketing/launch-plan.txt", content="Launch on April 14. Blog post, newsletter, webinar.\n"),
        DriveFile(path="Projects/Website Redesign/sitemap.txt", content="Home\nPricing\nCustomers\nBlog\nContact\n"),
        DriveFile(path="Projects/roadmap-2025.txt", content="H1: onboarding revamp\nH2: mobile app\n"),
        DriveFile(path="meeting-notes.txt", content="Weekly sync: ship the new onboarding flow by Friday.\n"),
    ]


class DriveSeed(SeedBase):
    org: str = "Northwind"
    folders: list[DriveFolder] = Field(default_factory=_default_folders)
    files: list[DriveFile] = Field(default_factory=_default_files)


# --------------------------------------------------------------------------- tree helpers


def _children(conn: sqlite3.Connection, parent_id: int | None, trashed: int = 0) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT * FROM items WHERE parent_id IS ? AND trashed = ? ORDER BY kind = 'file', lower(name)", (parent_id, trashed)).fetchall()


def _by_path(conn: sqlite3.Connection, path: str) -> sqlite3.Row | None:
    """Walk the tree by name (case-insensitive), trashed items included so deletions stay checkable."""
    row = None
    for part in _clean_path(path).split("/"):
        row = conn.execute("SELECT * FROM items WHERE parent_id IS ? AND lower(name) = lower(?) ORDER BY trashed, id",
                           (row["id"] if row else None, part)).fetchone()
        if row is None:
            return None
    return row


def _ancestors(conn: sqlite3.Connection, item: sqlite3.Row) -> list[sqlite3.Row]:
    chain = []
    parent = item["parent_id"]
    while parent is not None:
        row = conn.execute("SELECT * FROM items WHERE id = ?", (parent,)).fetchone()
        chain.insert(0, row)
        parent = row["parent_id"]
    return chain


def _effective(conn: sqlite3.Connection, item: sqlite3.Row) -> str:
    """Sharing is inherited: an item is as open as its most open ancestor."""
    return max((r["permission"] for r in [*_ancestors(conn, item), item]), key=LEVELS.index)


def _path_of(conn: sqlite3.Connection, item: sqlite3.Row) -> str:
    return "/".join(r["name"] for r in [*_ancestors(conn, item), item])


# --------------------------------------------------------------------------- queries

queries = QuerySet()


class PathParams(Params):
    path: str


class PermissionParams(PathParams):
    level: Level
    effective: bool = Field(True, description="include sharing inherited from parent folders")


def _missing(path: str) -> QueryResult:
    return QueryResult(passed=False, detail=f"no item at {path!r}", value=None)


@queries.add("permission_is", PermissionParams)
def permission_is(conn: sqlite3.Connection, p: PermissionParams) -> QueryResult:
    """The item's sharing level (effective by default) is exactly `level`."""
    item = _by_path(conn, p.path)
    if item is None:
        return _missing(p.path)
    level = _effective(conn, item) if p.effective else item["permission"]
    return QueryResult(passed=level == p.level, value=level, detail=f"{p.path!r} is {level}" + (" (effective)" if p.effective else ""))


@queries.add("permission_at_least", PermissionParams)
def permission_at_least(conn: sqlite3.Connection, p: PermissionParams) -> QueryResult:
    """The item is shared at least as widely as `level` (private < team < public)."""
    item = _by_path(conn, p.path)
    if item is None:
        return _missing(p.path)
    level = _effective(conn, item) if p.effective else item["permission"]
    ok = LEVELS.index(level) >= LEVELS.index(p.level)
    return QueryResult(passed=ok, value=level, detail=f"{p.path!r} is {level}, {'at least' if ok else 'below'} {p.level}")


@queries.add("share_link_active", PathParams)
def share_link_active(conn: sqlite3.Connection, p: PathParams) -> QueryResult:
    """A share link exists for the item."""
    item = _by_path(conn, p.path)
    if item is None:
        return _missing(p.path)
    n = conn.execute("SELECT COUNT(*) FROM links WHERE item_id = ?", (item["id"],)).fetchone()[0]
    return QueryResult(passed=n > 0, value=n, detail=f"{p.path!r} has {n} share link(s)")


@queries.add("item_exists", PathParams)
def item_exists(conn: sqlite3.Connection, p: PathParams) -> QueryResult:
    """The item exists and is not in the trash; value is 'present', 'trashed' or 'deleted'."""
    item = _by_path(conn, p.path)
    if item is None:
        return QueryResult(passed=False, value="deleted", detail=f"{p.path!r} does not exist")
    trashed = item["trashed"] or any(a["trashed"] for a in _ancestors(conn, item))
    state = "trashed" if trashed else "present"
    return QueryResult(passed=not trashed, value=state, detail=f"{p.path!r} is {state}")


class ContainsParams(PathParams):
    contains: str


@queries.add("file_contains", ContainsParams)
def file_contains(conn: sqlite3.Connection, p: ContainsParams) -> QueryResult:
    """The file's text contains `contains`."""
    item = _by_path(conn, p.path)
    if item is None or item["kind"] != "file":
        return _missing(p.path)
    text = bytes(item["content"] or b"").decode(errors="replace")
    ok = has_text(text, p.contains)
    return QueryResult(passed=ok, value=ok, detail=f"{p.path!r} {'contains' if ok else 'does not contain'} {p.contains!r}")


@queries.add("public_items")
def public_items(conn: sqlite3.Connection, p: Params) -> QueryResult:
    """Passes when NOTHING is effectively public; value lists the public paths."""
    rows = conn.execute("SELECT * FROM items WHERE trashed = 0").fetchall()
    public = sorted(_path_of(conn, r) for r in rows if _effective(conn, r) == "public")
    return QueryResult(passed=not public, value=public, detail=("public: " + ", ".join(public)) if public else "nothing is public")


# --------------------------------------------------------------------------- pages


def _org(conn: sqlite3.Connection) -> str:
    return conn.execute("SELECT value FROM meta WHERE key = 'org'").fetchone()[0]


def _listing(conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> list[dict]:
    out = []
    for r in rows:
        d = dict(r)
        d.pop("content")
        d["size"] = len(r["content"] or b"")
        d["effective"] = _effective(conn, r)
        d["n_links"] = conn.execute("SELECT COUNT(*) FROM links WHERE item_id = ?", (r["id"],)).fetchone()[0]
        out.append(d)
    return out


async def folder_page(request: Request, errors: dict | None = None, values: dict | None = None, status: int = 200):
    fid = request.path_params.get("fid")
    q = request.query_params.get("q", "")
    with db(request) as conn:
        folder = None
        if fid is not None:
            folder = conn.execute("SELECT * FROM items WHERE id = ? AND kind = 'folder' AND trashed = 0", (fid,)).fetchone()
            if folder is None:
                return not_found(request, "That folder")
        if q:
            rows = [r for r in conn.execute("SELECT * FROM items WHERE trashed = 0 ORDER BY kind = 'file', lower(name)")
                    if has_text(r["name"], q)]
        else:
            rows = _children(conn, folder["id"] if folder else None)
        items = _listing(conn, rows)
        crumbs = [dict(a) for a in _ancestors(conn, folder)] + [dict(folder)] if folder else []
        org = _org(conn)
    return render(request, "drive/folder.html", status_code=status, folder=dict(folder) if folder else None, items=items,
                  crumbs=crumbs, q=q, org=org, level_text=LEVEL_TEXT, errors=errors or {}, values=values or {})


def _back(parent_id: int | None) -> str:
    return f"/folder/{parent_id}" if parent_id else "/"


def _check_name(conn: sqlite3.Connection, errors: FormErrors, name: str, parent_id: int | None, field: str = "name",
                exclude: int | None = None) -> None:
    if not name:
        errors.add(field, "Enter a name.")
    elif "/" in name or name in (".", ".."):
        errors.add(field, "Names can't contain “/” or be “.” or “..”.")
    elif len(name) > 120:
        errors.add(field, "Names can be at most 120 characters.")
    elif conn.execute("SELECT 1 FROM items WHERE parent_id IS ? AND lower(name) = lower(?) AND trashed = 0 AND id IS NOT ?",
                      (parent_id, name, exclude)).fetchone():
        errors.add(field, f"An item named “{name}” already exists here.")


async def new_folder(request: Request):
    parent_id = int_param(request.path_params.get("fid")) if request.path_params.get("fid") else None
    form = await form_data(request)
    name = form.get("name", "")
    errors = FormErrors()
    with db(request) as conn:
        _check_name(conn, errors, name, parent_id)
        if not errors:
            new_id = conn.execute("INSERT INTO items(parent_id, name, kind, owner, modified) VALUES (?, ?, 'folder', ?, ?)",
                                  (parent_id, name, me(conn)["name"], now_iso())).lastrowid
            log_event(conn, "folder_created", item_id=new_id, name=name, parent_id=parent_id)
    if errors:
        return await folder_page(request, errors.errors, form, 422)
    return redirect(_back(parent_id) + "?notice=Folder+created")


async def upload(request: Request):
    parent_id = int_param(request.path_params.get("fid")) if request.path_params.get("fid") else None
    form = await request.form()
    up = form.get("file")
    errors = FormErrors()
    with db(request) as conn:
        if not isinstance(up, UploadFile) or not up.filename:
            errors.add("file", "Choose a file to upload.")
        else:
            data = await up.read()
            if len(data) > MAX_UPLOAD:
                errors.add("file", f"{up.filename} is larger than the 25 MB upload limit.")
            _check_name(conn, errors, up.filename, parent_id, field="file")
        if not errors:
            mime = up.content_type or mimetypes.guess_type(up.filename)[0] or "application/octet-stream"
            new_id = conn.execute(
                "INSERT INTO items(parent_id, name, kind, mime, content, owner, modified) VALUES (?, ?, 'file', ?, ?, ?, ?)",
                (parent_id, up.filename, mime, data, me(conn)["name"], now_iso())).lastrowid
            log_event(conn, "file_uploaded", item_id=new_id, name=up.filename, parent_id=parent_id, size=len(data))
    if errors:
        return await folder_page(request, errors.errors, {}, 422)
    return redirect(_back(parent_id) + "?notice=Upload+complete")


def _item(conn: sqlite3.Connection, request: Request) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM items WHERE id = ?", (request.path_params["iid"],)).fetchone()


def _shown_text(item) -> str | None:
    """A text file's text, as its page shows it; None for any other file (a PDF, a picture: downloaded to read)."""
    if item["mime"].startswith("text/") or item["name"].endswith((".txt", ".csv", ".md")):
        return bytes(item["content"] or b"").decode(errors="replace")
    return None


async def file_page(request: Request):
    with db(request) as conn:
        item = _item(conn, request)
        if item is None or item["kind"] != "file":
            return not_found(request, "That file")
        crumbs = [dict(a) for a in _ancestors(conn, item)]
        d = _listing(conn, [item])[0]
        text = _shown_text(item)
        org = _org(conn)
    return render(request, "drive/file.html", item=d, crumbs=crumbs, text=text, org=org, level_text=LEVEL_TEXT)


async def download(request: Request):
    with db(request) as conn:
        item = _item(conn, request)
        if item is None or item["kind"] != "file":
            return not_found(request, "That file")
        log_event(conn, "file_downloaded", item_id=item["id"], name=item["name"])
    return file_response(bytes(item["content"] or b""), item["name"], item["mime"] or "application/octet-stream")


async def share_page(request: Request, errors: dict | None = None, status: int = 200):
    with db(request) as conn:
        item = _item(conn, request)
        if item is None:
            return not_found(request, "That item")
        d = _listing(conn, [item])[0]
        inherited = max((a["permission"] for a in _ancestors(conn, item)), key=LEVELS.index, default="private")
        links = [dict(r) for r in conn.execute("SELECT * FROM links WHERE item_id = ?", (item["id"],))]
        crumbs = [dict(a) for a in _ancestors(conn, item)]
        org = _org(conn)
    return render(request, "drive/share.html", status_code=status, item=d, inherited=inherited, links=links, crumbs=crumbs,
                  org=org, level_text=LEVEL_TEXT, levels=LEVELS, errors=errors or {})


async def set_share(request: Request):
    form = await form_data(request)
    level = form.get("level", "")
    with db(request) as conn:
        item = _item(conn, request)
        if item is None:
            return not_found(request, "That item")
        if level not in LEVELS:
            conn.rollback()
            return await share_page(request, {"level": "Choose who can access this item."}, 422)
        if level != item["permission"]:
            conn.execute("UPDATE items SET permission = ? WHERE id = ?", (level, item["id"]))
            log_event(conn, "permission_changed", item_id=item["id"], path=_path_of(conn, item), before=item["permission"], after=level)
    return redirect(f"/item/{item['id']}/share?notice=Sharing+updated")


async def link_action(request: Request):
    action = request.path_params["action"]
    with db(request) as conn:
        item = _item(conn, request)
        if item is None:
            return not_found(request, "That item")
        path = _path_of(conn, item)
        if action not in ("create", "remove"):
            return not_found(request, "That action")
        if action == "create":
            token = secrets.token_urlsafe(9)
            conn.execute("INSERT INTO links(item_id, token, created) VALUES (?, ?, ?)", (item["id"], token, now_iso()))
            log_event(conn, "link_created", item_id=item["id"], path=path, token=token)
            notice = "Link+created"
        else:
            conn.execute("DELETE FROM links WHERE item_id = ?", (item["id"],))
            log_event(conn, "link_removed", item_id=item["id"], path=path)
            notice = "Link+removed"
    return redirect(f"/item/{item['id']}/share?notice={notice}")


async def rename(request: Request):
    form = await form_data(request)
    with db(request) as conn:
        item = _item(conn, request)
        if item is None:
            return not_found(request, "That item")
        errors = FormErrors()
        _check_name(conn, errors, form.get("name", ""), item["parent_id"], exclude=item["id"])
        if errors:
            conn.rollback()
            return await share_page(request, {"name": errors.errors["name"]}, 422)
        conn.execute("UPDATE items SET name = ?, modified = ? WHERE id = ?", (form["name"], now_iso(), item["id"]))
        log_event(conn, "item_renamed", item_id=item["id"], before=item["name"], after=form["name"])
    return redirect(f"/item/{item['id']}/share?notice=Renamed")


async def trash_item(request: Request):
    action = request.path_params["action"]
    with db(request) as conn:
        item = _item(conn, request)
        if item is None or action not in ("trash", "restore", "delete"):
            return not_found(request, "That item")
        path = _path_of(conn, item)
        if action == "trash":
            conn.execute("UPDATE items SET trashed = 1 WHERE id = ?", (item["id"],))
            log_event(conn, "item_trashed", item_id=item["id"], path=path)
            return redirect(_back(item["parent_id"]) + "?notice=Moved+to+trash")
        if action == "restore":
            conn.execute("UPDATE items SET trashed = 0 WHERE id = ?", (item["id"],))
            log_event(conn, "item_restored", item_id=item["id"], path=path)
            return redirect("/trash?notice=Restored")
        # Permanent delete: only from the trash, like real drives.
        if not item["trashed"]:
            return redirect(_back(item["parent_id"]))
        ids, frontier = [], [item["id"]]
        while frontier:
            ids += frontier
            frontier = [r[0] for f in frontier for r in conn.execute("SELECT id FROM items WHERE parent_id = ?", (f,))]
        for i in reversed(ids):
            conn.execute("DELETE FROM items WHERE id = ?", (i,))
        log_event(conn, "item_deleted_forever", item_id=item["id"], path=path, count=len(ids))
    return redirect("/trash?notice=Deleted+forever")


async def trash_page(request: Request):
    with db(request) as conn:
        items = _listing(conn, conn.execute("SELECT * FROM items WHERE trashed = 1 ORDER BY lower(name)").fetchall())
    return render(request, "drive/trash.html", items=items)


async def shared_page(request: Request):
    with db(request) as conn:
        rows = conn.execute("SELECT * FROM items WHERE trashed = 0 AND permission != 'private' ORDER BY lower(name)").fetchall()
        items = _listing(conn, rows)
        for d, r in zip(items, rows):
            d["path"] = _path_of(conn, r)
        org = _org(conn)
    return render(request, "drive/shared.html", items=items, org=org, level_text=LEVEL_TEXT)


async def public_link(request: Request):
    with db(request) as conn:
        row = conn.execute("SELECT i.* FROM links l JOIN items i ON i.id = l.item_id WHERE l.token = ?",
                           (request.path_params["token"],)).fetchone()
        if row is None or row["trashed"]:
            return not_found(request, "That link")
        level = _effective(conn, row)
        children = _listing(conn, _children(conn, row["id"])) if row["kind"] == "folder" else []
    if level == "private":
        return render(request, "not_found.html", status_code=403, what="You need permission to open this link; the item")
    return render(request, "drive/link.html", item=dict(row), children=children, level=level,
                  text=_shown_text(row) if row["kind"] == "file" else None)


class DriveApp(App):
    name = "drive"
    title = "Drive"
    schema = SCHEMA
    SeedModel = DriveSeed
    app_queries = queries
    nav = [("My Drive", "/", "cloud"), ("Shared", "/shared", "share"), ("Trash", "/trash", "trash")]

    @property
    def routes(self) -> list:
        return [
            Route("/", folder_page),
            Route("/folder/{fid:int}", folder_page),
            Route("/new-folder", new_folder, methods=["POST"]),
            Route("/folder/{fid:int}/new-folder", new_folder, methods=["POST"]),
            Route("/upload", upload, methods=["POST"]),
            Route("/folder/{fid:int}/upload", upload, methods=["POST"]),
            Route("/file/{iid:int}", file_page),
            Route("/file/{iid:int}/download", download),
            Route("/item/{iid:int}/share", share_page),
            Route("/item/{iid:int}/share", set_share, methods=["POST"]),
            Route("/item/{iid:int}/link/{action:str}", link_action, methods=["POST"]),
            Route("/item/{iid:int}/rename", rename, methods=["POST"]),
            Route("/item/{iid:int}/{action:str}", trash_item, methods=["POST"]),
            Route("/trash", trash_page),
            Route("/shared", shared_page),
            Route("/s/{token}", public_link),
        ]

    def seed_content(self, conn: sqlite3.Connection, data: DriveSeed) -> None:
        conn.execute("INSERT INTO meta(key, value) VALUES ('org', ?)", (data.org,))
        ids: dict[str, int] = {}

        def ensure(path: str, permission: str | None = None, owner: str | None = None) -> int:
            """Folder id for `path`, creating missing folders (private unless listed in `folders`)."""
            key = path.lower()
            if key not in ids:
                parent, _, name = path.rpartition("/")
                parent_id = ensure(parent) if parent else None
                ids[key] = conn.execute(
                    "INSERT INTO items(parent_id, name, kind, permission, owner, modified, seeded) VALUES (?, ?, 'folder', ?, ?, ?, 1)",
                    (parent_id, name, permission or "private", owner or data.user.name, "2025-02-20T09:00:00")).lastrowid
            elif permission is not None:
                conn.execute("UPDATE items SET permission = ? WHERE id = ?", (permission, ids[key]))
            return ids[key]

        for f in data.folders:
            ensure(f.path, f.permission, f.owner)
        for f in data.files:
            parent, _, name = f.path.rpartition("/")
            mime = f.mime or mimetypes.guess_type(name)[0] or "application/octet-stream"
            conn.execute(
                "INSERT INTO items(parent_id, name, kind, mime, content, permission, owner, modified, seeded) "
                "VALUES (?, ?, 'file', ?, ?, ?, ?, ?, 1)",
                (ensure(parent) if parent else None, name, mime, seeded_bytes(name, f.content), f.permission, f.owner or data.user.name, f.modified))
