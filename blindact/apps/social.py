"""Social network: feed, posts, comments, likes, direct messages, groups."""

from __future__ import annotations

import sqlite3
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.requests import Request
from starlette.routing import Route

from blindact.apps.base import (
    App, Compare, ExactlyOne, FormErrors, Params, QueryResult, QuerySet, SeedBase,
    RequiredTextParams, TextParams, db, describe_text, form_data, has_text, int_param, log_event, not_found, now_iso,
    redirect, render, resolve, short, text_matches,
)

MAX_POST = 5000
MAX_COMMENT = 2000

SCHEMA = """
CREATE TABLE users (handle TEXT PRIMARY KEY, name TEXT NOT NULL, title TEXT NOT NULL DEFAULT '', bio TEXT NOT NULL DEFAULT '');
CREATE TABLE groups (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, description TEXT NOT NULL DEFAULT '');
CREATE TABLE group_members (group_id INTEGER NOT NULL REFERENCES groups(id), handle TEXT NOT NULL REFERENCES users(handle),
  PRIMARY KEY (group_id, handle));
CREATE TABLE posts (id INTEGER PRIMARY KEY, author TEXT NOT NULL REFERENCES users(handle), title TEXT NOT NULL DEFAULT '',
  body TEXT NOT NULL, ts TEXT NOT NULL, group_id INTEGER REFERENCES groups(id), photo TEXT NOT NULL DEFAULT '',
  seeded INTEGER NOT NULL DEFAULT 0);
CREATE TABLE photos (filename TEXT PRIMARY KEY);
CREATE TABLE comments (id INTEGER PRIMARY KEY, post_id INTEGER NOT NULL REFERENCES posts(id) ON DELETE CASCADE,
  author TEXT NOT NULL REFERENCES users(handle), body TEXT NOT NULL, ts TEXT NOT NULL, seeded INTEGER NOT NULL DEFAULT 0);
CREATE TABLE likes (post_id INTEGER NOT NULL REFERENCES posts(id) ON DELETE CASCADE, handle TEXT NOT NULL,
  PRIMARY KEY (post_id, handle));
CREATE TABLE messages (id INTEGER PRIMARY KEY, sender TEXT NOT NULL REFERENCES users(handle),
  recipient TEXT NOT NULL REFERENCES users(handle), body TEXT NOT NULL, ts TEXT NOT NULL, seeded INTEGER NOT NULL DEFAULT 0);
"""


# --------------------------------------------------------------------------- seed


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SocialUser(_Strict):
    handle: str
    name: str
    title: str = ""
    bio: str = ""


class SocialComment(_Strict):
    author: str
    body: str
    ts: str = "2025-03-03T10:00:00"


class SocialPost(_Strict):
    id: int | None = None
    author: str
    title: str = ""
    body: str
    ts: str = "2025-03-03T09:00:00"
    group: str | None = None
    comments: list[SocialComment] = Field(default_factory=list)
    likes: list[str] = Field(default_factory=list)


class SocialGroup(_Strict):
    name: str
    description: str = ""
    members: list[str] = Field(default_factory=list)


class SocialMessage(_Strict):
    sender: str
    recipient: str
    body: str
    ts: str = "2025-03-03T08:00:00"


def _default_users() -> list[SocialUser]:
    return [
        SocialUser(handle="alex", name="Alex Morgan", title="Product Manager", bio="Shipping things people like. Coffee first."),
        SocialUser(handle="priya", name="Priya Raman", title="Engineering Lead", bio="Distributed systems, bad puns, good tea."),
        SocialUser(handle="marcus", name="Marcus Chen", title="Designer", bio="Pixels and typography."),
        SocialUser(handle="sofia", name="Sofia Alvarez", title="Data Analyst", bio="Charts or it didn't happen."),
        SocialUser(handle="tom", name="Tom Becker", title="Support Engineer", bio="Here to help."),
    ]


def _default_posts() -> list[SocialPost]:
    return [
        SocialPost(author="priya", title="Q3 planning kickoff", ts="2025-03-03T09:12:00",
                   body="Kicking off Q3 planning next Tuesday. Please add your team's top three priorities to the wiki "
                        "page before then, and leave any questions as comments here.",
                   comments=[SocialComment(author="marcus", body="Design priorities are in the wiki now.", ts="2025-03-03T10:02:00")],
                   likes=["marcus", "sofia"]),
        SocialPost(author="sofia", title="Dashboard refresh is live", ts="2025-03-02T16:40:00",
                   body="The new sales dashboard is live. Filters now remember your last selection. Feedback welcome!",
                   likes=["alex", "tom"]),
        SocialPost(author="marcus", title="Office plants need a new home", ts="2025-03-01T11:05:00",
                   body="We're moving desks on Friday. Anyone want to adopt a very friendly fern?",
                   comments=[SocialComment(author="tom", body="I'll take the fern!", ts="2025-03-01T11:30:00")]),
        SocialPost(author="tom", title="Support rota for March", ts="2025-02-28T08:15:00", group="Support",
                   body="The March on-call rota is posted. Swap requests by Thursday please."),
    ]


def _default_groups() -> list[SocialGroup]:
    return [
        SocialGroup(name="Support", description="Customer support team news and rota.", members=["tom", "sofia"]),
        SocialGroup(name="Running Club", description="Lunchtime runs, every Wednesday.", members=["priya", "marcus"]),
        SocialGroup(name="Product", description="Roadmaps, launches and user research.", members=["alex", "priya", "marcus"]),
    ]


def _default_messages() -> list[SocialMessage]:
    return [
        SocialMessage(sender="priya", recipient="alex", body="Can you review the planning doc before Tuesday?", ts="2025-03-03T08:40:00"),
        SocialMessage(sender="alex", recipient="priya", body="Sure, I'll have comments by Monday.", ts="2025-03-03T08:45:00"),
    ]


class SocialSeed(SeedBase):
    me: str = "alex"
    users: list[SocialUser] = Field(default_factory=_default_users)
    posts: list[SocialPost] = Field(default_factory=_default_posts)
    groups: list[SocialGroup] = Field(default_factory=_default_groups)
    messages: list[SocialMessage] = Field(default_factory=_default_messages)
    photos: list[str] = Field(default_factory=list, description="file names in the user's photo library, attachable to a post")

    @model_validator(mode="after")
    def _handles_exist(self) -> "SocialSeed":
        handles = {u.handle for u in self.users}
        groups = {g.name for g in self.groups}
        refs = [("me", self.me)]
        for i, p in enumerate(self.posts):
            refs.append((f"posts[{i}].author", p.author))
            refs += [(f"posts[{i}].comments[{j}].author", c.author) for j, c in enumerate(p.comments)]
            refs += [(f"posts[{i}].likes", h) for h in p.likes]
            if p.group is not None and p.group not in groups:
                raise ValueError(f"posts[{i}].group {p.group!r} is not one of the groups {sorted(groups)}")
        for i, g in enumerate(self.groups):
            refs += [(f"groups[{i}].members", h) for h in g.members]
        for i, m in enumerate(self.messages):
            refs += [(f"messages[{i}].sender", m.sender), (f"messages[{i}].recipient", m.recipient)]
        for where, handle in refs:
            if handle not in handles:
                raise ValueError(f"{where}: unknown user handle {handle!r} (users: {sorted(handles)})")
        return self


# --------------------------------------------------------------------------- queries

queries = QuerySet()


def _me(conn: sqlite3.Connection) -> str:
    return conn.execute("SELECT value FROM meta WHERE key = 'handle'").fetchone()[0]


class PostRef(ExactlyOne):
    identifiers: ClassVar[tuple[str, ...]] = ("post_id", "post_title")
    post_id: int | None = None
    post_title: str | None = None


def _post(conn: sqlite3.Connection, p: PostRef) -> tuple[sqlite3.Row | None, str]:
    if p.post_id is not None:
        row = conn.execute("SELECT * FROM posts WHERE id = ?", (p.post_id,)).fetchone()
        return row, f"post #{p.post_id}"
    return resolve(conn, "posts", "title", p.post_title or ""), f"post {p.post_title!r}"


class CommentPostedParams(PostRef, TextParams):
    author: str | None = Field(None, description="user handle; default the signed-in user")


@queries.add("comment_posted", CommentPostedParams)
def comment_posted(conn: sqlite3.Connection, p: CommentPostedParams) -> QueryResult:
    """A comment (by the user, containing text) was added during the episode to the given post."""
    post, what = _post(conn, p)
    if post is None:
        return QueryResult(passed=False, detail=f"{what} not found")
    author = p.author or _me(conn)
    rows = conn.execute("SELECT body FROM comments WHERE post_id = ? AND author = ? AND seeded = 0 ORDER BY id",
                        (post["id"], author)).fetchall()
    hits = [r["body"] for r in rows if text_matches(r["body"], p.contains, p.body)]
    if hits:
        return QueryResult(passed=True, detail=f"@{author} commented on {what}: {short(hits[-1])!r}", value=hits)
    return QueryResult(passed=False, detail=f"no new comment by @{author} on {what}"
                       + describe_text(p.contains, p.body) + f" ({len(rows)} other)", value=[])


class CommentContainsParams(RequiredTextParams):
    author: str | None = None


@queries.add("comment_contains", CommentContainsParams)
def comment_contains(conn: sqlite3.Connection, p: CommentContainsParams) -> QueryResult:
    """Any new comment, on any post, by the user (or `author`) contains the text (`contains`) / matches `body`."""
    author = p.author or _me(conn)
    rows = conn.execute("SELECT c.body, p.title FROM comments c JOIN posts p ON p.id = c.post_id "
                        "WHERE c.author = ? AND c.seeded = 0", (author,)).fetchall()
    hits = [f"{r['title']}: {short(r['body'])}" for r in rows if text_matches(r["body"], p.contains, p.body)]
    what = describe_text(p.contains, p.body)
    if hits:
        return QueryResult(passed=True, detail=f"comment by @{author}{what} on " + "; ".join(hits), value=hits)
    return QueryResult(passed=False, detail=f"no new comment by @{author}{what}", value=[])


class CommentCountParams(PostRef, Compare):
    pass


@queries.add("comment_count", CommentCountParams)
def comment_count(conn: sqlite3.Connection, p: CommentCountParams) -> QueryResult:
    """Number of comments (seeded and new) on the post, with comparisons."""
    post, what = _post(conn, p)
    if post is None:
        return QueryResult(passed=False, detail=f"{what} not found")
    n = conn.execute("SELECT COUNT(*) FROM comments WHERE post_id = ?", (post["id"],)).fetchone()[0]
    return p.check(n, f"comments on {what}")


class PostCreatedParams(TextParams):
    title_contains: str | None = None
    group: str | None = None
    photo: str | None = Field(None, description="part of the attached photo's file name")


@queries.add("post_created", PostCreatedParams)
def post_created(conn: sqlite3.Connection, p: PostCreatedParams) -> QueryResult:
    """The user published a new post (whose body contains text / matches `body`, whose title contains text, in
    a group, with a photo attached)."""
    rows = conn.execute("SELECT p.*, g.name AS group_name FROM posts p LEFT JOIN groups g ON g.id = p.group_id "
                        "WHERE p.seeded = 0 AND p.author = ?", (_me(conn),)).fetchall()
    hits = [r for r in rows if text_matches(r["body"], p.contains, p.body) and has_text(r["title"], p.title_contains)
            and (p.group is None or has_text(r["group_name"], p.group))
            and (p.photo is None or (bool(r["photo"]) and has_text(r["photo"], p.photo)))]
    if hits:
        photo = f" with photo {hits[-1]['photo']}" if hits[-1]["photo"] else ""
        return QueryResult(passed=True, detail=f"new post: {short(hits[-1]['title'] or hits[-1]['body'])!r}{photo}", value=len(hits))
    return QueryResult(passed=False, detail=f"no matching new post ({len(rows)} new post(s) in total)", value=0)


class MessageSentParams(TextParams):
    to: str


@queries.add("message_sent", MessageSentParams)
def message_sent(conn: sqlite3.Connection, p: MessageSentParams) -> QueryResult:
    """The user sent a direct message to `to` (handle or name) containing text (`contains`) / matching `body`."""
    user = conn.execute("SELECT handle FROM users WHERE lower(handle) = lower(?) OR lower(name) = lower(?)",
                        (p.to.lstrip("@"), p.to)).fetchone()
    if user is None:
        return QueryResult(passed=False, detail=f"no user {p.to!r}")
    rows = conn.execute("SELECT body FROM messages WHERE sender = ? AND recipient = ? AND seeded = 0",
                        (_me(conn), user["handle"])).fetchall()
    hits = [r["body"] for r in rows if text_matches(r["body"], p.contains, p.body)]
    if hits:
        return QueryResult(passed=True, detail=f"message to @{user['handle']}: {short(hits[-1])!r}", value=hits)
    return QueryResult(passed=False, detail=f"no matching message to @{user['handle']} ({len(rows)} sent)", value=[])


class GroupParams(Params):
    group: str


@queries.add("group_member", GroupParams)
def group_member(conn: sqlite3.Connection, p: GroupParams) -> QueryResult:
    """The user is (now) a member of the group."""
    group = resolve(conn, "groups", "name", p.group)
    if group is None:
        return QueryResult(passed=False, detail=f"no group {p.group!r}")
    member = conn.execute("SELECT 1 FROM group_members WHERE group_id = ? AND handle = ?", (group["id"], _me(conn))).fetchone()
    return QueryResult(passed=bool(member), detail=f"{'member' if member else 'not a member'} of {group['name']!r}", value=bool(member))


@queries.add("post_liked", PostRef)
def post_liked(conn: sqlite3.Connection, p: PostRef) -> QueryResult:
    """The user likes the post."""
    post, what = _post(conn, p)
    if post is None:
        return QueryResult(passed=False, detail=f"{what} not found")
    liked = conn.execute("SELECT 1 FROM likes WHERE post_id = ? AND handle = ?", (post["id"], _me(conn))).fetchone()
    return QueryResult(passed=bool(liked), detail=f"{what} {'liked' if liked else 'not liked'}", value=bool(liked))


@queries.add("post_exists", PostRef)
def post_exists(conn: sqlite3.Connection, p: PostRef) -> QueryResult:
    """The post still exists (use to detect deletions)."""
    post, what = _post(conn, p)
    return QueryResult(passed=post is not None, detail=f"{what} {'exists' if post else 'does not exist'}", value=post is not None)


# --------------------------------------------------------------------------- pages


def _posts(conn: sqlite3.Connection, where: str = "1", args: tuple = ()) -> list[dict]:
    rows = conn.execute(
        "SELECT p.*, u.name AS author_name, u.title AS author_title, g.name AS group_name, "
        "(SELECT COUNT(*) FROM comments c WHERE c.post_id = p.id) AS n_comments, "
        "(SELECT COUNT(*) FROM likes l WHERE l.post_id = p.id) AS n_likes, "
        "EXISTS(SELECT 1 FROM likes l WHERE l.post_id = p.id AND l.handle = ?) AS liked "
        f"FROM posts p JOIN users u ON u.handle = p.author LEFT JOIN groups g ON g.id = p.group_id WHERE {where} "
        "ORDER BY p.ts DESC, p.id DESC", (_me(conn), *args)).fetchall()
    return [dict(r) for r in rows]


def _sidebar_groups(conn: sqlite3.Connection) -> list[dict]:
    return [dict(r) for r in conn.execute(
        "SELECT g.* FROM groups g JOIN group_members m ON m.group_id = g.id WHERE m.handle = ? ORDER BY g.name", (_me(conn),))]


def _photos(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT filename FROM photos ORDER BY filename")]


async def feed(request: Request, errors: dict | None = None, values: dict | None = None, status: int = 200):
    with db(request) as conn:
        posts = _posts(conn, "p.group_id IS NULL OR p.group_id IN (SELECT group_id FROM group_members WHERE handle = ?)", (_me(conn),))
        q = request.query_params.get("q", "")
        if q:
            posts = [p for p in posts if has_text(f"{p['title']} {p['body']} {p['author_name']}", q)]
        people = [dict(r) for r in conn.execute("SELECT * FROM users WHERE handle != ? ORDER BY name", (_me(conn),))]
        groups = _sidebar_groups(conn)
        photos = _photos(conn)
    return render(request, "social/feed.html", status_code=status, posts=posts, q=q, people=people, my_groups=groups,
                  photos=photos, errors=errors or {}, values=values or {})


def _check_body(errors: FormErrors, body: str, limit: int, what: str) -> None:
    if not body:
        errors.add("body", f"Write something before posting your {what}.")
    elif len(body) > limit:
        errors.add("body", f"Your {what} is {len(body)} characters; the limit is {limit}.")


async def create_post(request: Request):
    form = await form_data(request)
    title, body, group_id = form.get("title", ""), form.get("body", ""), int_param(form.get("group_id", ""))
    photo = form.get("photo", "")
    errors = FormErrors()
    _check_body(errors, body, MAX_POST, "post")
    if len(title) > 200:
        errors.add("title", "Titles can be at most 200 characters.")
    with db(request) as conn:
        me = _me(conn)
        if group_id is not None and not conn.execute(
                "SELECT 1 FROM group_members WHERE group_id = ? AND handle = ?", (group_id, me)).fetchone():
            errors.add("_form", "You can only post in groups you have joined.")
        if photo and photo not in _photos(conn):
            errors.add("photo", "Choose a photo from your library.")
        if not errors:
            cur = conn.execute("INSERT INTO posts(author, title, body, ts, group_id, photo) VALUES (?, ?, ?, ?, ?, ?)",
                               (me, title, body, now_iso(), group_id, photo))
            log_event(conn, "post_created", post_id=cur.lastrowid, title=title, body=body, group_id=group_id, photo=photo)
    if errors:
        if group_id is not None:
            return await group_page(request, group_id, errors.errors, form, 422)
        return await feed(request, errors.errors, form, 422)
    return redirect(f"/groups/{group_id}?notice=Post+published" if group_id else "/?notice=Post+published")


async def post_page(request: Request, errors: dict | None = None, values: dict | None = None, status: int = 200):
    post_id = int_param(request.path_params["post_id"])
    with db(request) as conn:
        found = _posts(conn, "p.id = ?", (post_id,))
        if not found:
            return not_found(request, f"Post #{request.path_params['post_id']}")
        comments = [dict(r) for r in conn.execute(
            "SELECT c.*, u.name AS author_name FROM comments c JOIN users u ON u.handle = c.author "
            "WHERE c.post_id = ? ORDER BY c.ts, c.id", (post_id,))]
        me = _me(conn)
        groups = _sidebar_groups(conn)
    return render(request, "social/post.html", status_code=status, post=found[0], comments=comments, my_handle=me,
                  my_groups=groups, errors=errors or {}, values=values or {})


async def add_comment(request: Request):
    post_id = int_param(request.path_params["post_id"])
    form = await form_data(request)
    body = form.get("body", "")
    errors = FormErrors()
    _check_body(errors, body, MAX_COMMENT, "comment")
    with db(request) as conn:
        post = conn.execute("SELECT id, title FROM posts WHERE id = ?", (post_id,)).fetchone()
        if post is None:
            return not_found(request, f"Post #{request.path_params['post_id']}")
        if not errors:
            cur = conn.execute("INSERT INTO comments(post_id, author, body, ts) VALUES (?, ?, ?, ?)",
                               (post_id, _me(conn), body, now_iso()))
            log_event(conn, "comment_posted", comment_id=cur.lastrowid, post_id=post_id, post_title=post["title"], body=body)
    if errors:
        return await post_page(request, errors.errors, form, 422)
    return redirect(f"/post/{post_id}?notice=Comment+posted#comments")


async def toggle_like(request: Request):
    post_id = int_param(request.path_params["post_id"])
    with db(request) as conn:
        if not conn.execute("SELECT 1 FROM posts WHERE id = ?", (post_id,)).fetchone():
            return not_found(request, "That post")
        me = _me(conn)
        if conn.execute("DELETE FROM likes WHERE post_id = ? AND handle = ?", (post_id, me)).rowcount:
            log_event(conn, "post_unliked", post_id=post_id)
        else:
            conn.execute("INSERT INTO likes(post_id, handle) VALUES (?, ?)", (post_id, me))
            log_event(conn, "post_liked", post_id=post_id)
    back = (await form_data(request)).get("next", "/")
    return redirect(back if back.startswith("/") else "/")


async def delete_post(request: Request):
    post_id = int_param(request.path_params["post_id"])
    with db(request) as conn:
        post = conn.execute("SELECT * FROM posts WHERE id = ?", (post_id,)).fetchone()
        if post is None:
            return not_found(request, "That post")
        if post["author"] != _me(conn):
            return render(request, "not_found.html", status_code=403, what="You can only delete your own posts; this post")
        conn.execute("DELETE FROM posts WHERE id = ?", (post_id,))
        log_event(conn, "post_deleted", post_id=post_id, title=post["title"], body=post["body"])
    return redirect("/?notice=Post+deleted")


async def delete_comment(request: Request):
    comment_id = int_param(request.path_params["comment_id"])
    with db(request) as conn:
        c = conn.execute("SELECT * FROM comments WHERE id = ?", (comment_id,)).fetchone()
        if c is None:
            return not_found(request, "That comment")
        if c["author"] != _me(conn):
            return render(request, "not_found.html", status_code=403, what="You can only delete your own comments; this comment")
        conn.execute("DELETE FROM comments WHERE id = ?", (comment_id,))
        log_event(conn, "comment_deleted", comment_id=comment_id, post_id=c["post_id"], body=c["body"])
    return redirect(f"/post/{c['post_id']}?notice=Comment+deleted")


async def profile(request: Request):
    handle = request.path_params["handle"]
    with db(request) as conn:
        user = conn.execute("SELECT * FROM users WHERE handle = ?", (handle,)).fetchone()
        if user is None:
            return not_found(request, f"User @{handle}")
        posts = _posts(conn, "p.author = ? AND p.group_id IS NULL", (handle,))
        groups = _sidebar_groups(conn)
        me = _me(conn)
    return render(request, "social/profile.html", user=dict(user), posts=posts, my_groups=groups, my_handle=me)


async def inbox(request: Request):
    with db(request) as conn:
        me = _me(conn)
        rows = conn.execute(
            "SELECT CASE WHEN sender = ? THEN recipient ELSE sender END AS other, body, ts, sender "
            "FROM messages WHERE sender = ? OR recipient = ? ORDER BY ts DESC, id DESC", (me, me, me)).fetchall()
        seen: dict[str, dict] = {}
        for r in rows:
            seen.setdefault(r["other"], dict(r))
        names = dict(conn.execute("SELECT handle, name FROM users").fetchall())
        people = [dict(r) for r in conn.execute("SELECT * FROM users WHERE handle != ? ORDER BY name", (me,))]
        groups = _sidebar_groups(conn)
    threads = [{**t, "name": names[h]} for h, t in seen.items()]
    return render(request, "social/messages.html", threads=threads, people=people, my_groups=groups, my_handle=me)


async def thread(request: Request, errors: dict | None = None, values: dict | None = None, status: int = 200):
    handle = request.path_params["handle"]
    with db(request) as conn:
        other = conn.execute("SELECT * FROM users WHERE handle = ?", (handle,)).fetchone()
        if other is None:
            return not_found(request, f"User @{handle}")
        me = _me(conn)
        msgs = [dict(r) for r in conn.execute(
            "SELECT * FROM messages WHERE (sender = ? AND recipient = ?) OR (sender = ? AND recipient = ?) ORDER BY ts, id",
            (me, handle, handle, me))]
        groups = _sidebar_groups(conn)
    return render(request, "social/thread.html", status_code=status, other=dict(other), msgs=msgs, my_handle=me,
                  my_groups=groups, errors=errors or {}, values=values or {})


async def send_message(request: Request):
    handle = request.path_params["handle"]
    form = await form_data(request)
    body = form.get("body", "")
    errors = FormErrors()
    _check_body(errors, body, MAX_COMMENT, "message")
    with db(request) as conn:
        if conn.execute("SELECT 1 FROM users WHERE handle = ?", (handle,)).fetchone() is None:
            return not_found(request, f"User @{handle}")
        me = _me(conn)
        if handle == me:
            errors.add("_form", "You can't message yourself.")
        if not errors:
            conn.execute("INSERT INTO messages(sender, recipient, body, ts) VALUES (?, ?, ?, ?)", (me, handle, body, now_iso()))
            log_event(conn, "message_sent", to=handle, body=body)
    if errors:
        return await thread(request, errors.errors, form, 422)
    return redirect(f"/messages/{handle}")


async def groups_page(request: Request):
    with db(request) as conn:
        me = _me(conn)
        rows = [dict(r) for r in conn.execute(
            "SELECT g.*, (SELECT COUNT(*) FROM group_members m WHERE m.group_id = g.id) AS n_members, "
            "EXISTS(SELECT 1 FROM group_members m WHERE m.group_id = g.id AND m.handle = ?) AS joined "
            "FROM groups g ORDER BY g.name", (me,))]
        groups = _sidebar_groups(conn)
    return render(request, "social/groups.html", groups=rows, my_groups=groups)


async def group_page(request: Request, group_id: int | None = None, errors: dict | None = None,
                     values: dict | None = None, status: int = 200):
    group_id = group_id if group_id is not None else int_param(request.path_params["group_id"])
    with db(request) as conn:
        group = conn.execute("SELECT * FROM groups WHERE id = ?", (group_id,)).fetchone()
        if group is None:
            return not_found(request, "That group")
        me = _me(conn)
        members = [dict(r) for r in conn.execute(
            "SELECT u.* FROM users u JOIN group_members m ON m.handle = u.handle WHERE m.group_id = ? ORDER BY u.name", (group_id,))]
        posts = _posts(conn, "p.group_id = ?", (group_id,))
        groups = _sidebar_groups(conn)
        photos = _photos(conn)
    joined = any(m["handle"] == me for m in members)
    return render(request, "social/group.html", status_code=status, group=dict(group), members=members, posts=posts,
                  joined=joined, my_groups=groups, photos=photos, errors=errors or {}, values=values or {})


async def join_leave(request: Request):
    group_id = int_param(request.path_params["group_id"])
    action = request.path_params["action"]
    with db(request) as conn:
        group = conn.execute("SELECT * FROM groups WHERE id = ?", (group_id,)).fetchone()
        if group is None or action not in ("join", "leave"):
            return not_found(request, "That group")
        me = _me(conn)
        if action == "join":
            conn.execute("INSERT OR IGNORE INTO group_members(group_id, handle) VALUES (?, ?)", (group_id, me))
        else:
            conn.execute("DELETE FROM group_members WHERE group_id = ? AND handle = ?", (group_id, me))
        log_event(conn, f"group_{'joined' if action == 'join' else 'left'}", group=group["name"])
    notice = "You+joined+the+group" if action == "join" else "You+left+the+group"
    return redirect(f"/groups/{group_id}?notice={notice}")


class SocialApp(App):
    name = "social"
    title = "Social"
    schema = SCHEMA
    SeedModel = SocialSeed
    app_queries = queries
    nav = [("Home", "/", "home"), ("Messages", "/messages", "chat"), ("Groups", "/groups", "group")]

    @property
    def routes(self) -> list:
        return [
            Route("/", feed),
            Route("/posts", create_post, methods=["POST"]),
            Route("/post/{post_id:int}", post_page),
            Route("/post/{post_id:int}/comments", add_comment, methods=["POST"]),
            Route("/post/{post_id:int}/like", toggle_like, methods=["POST"]),
            Route("/post/{post_id:int}/delete", delete_post, methods=["POST"]),
            Route("/comment/{comment_id:int}/delete", delete_comment, methods=["POST"]),
            Route("/u/{handle}", profile),
            Route("/messages", inbox),
            Route("/messages/{handle}", thread),
            Route("/messages/{handle}", send_message, methods=["POST"]),
            Route("/groups", groups_page),
            Route("/groups/{group_id:int}", group_page),
            Route("/groups/{group_id:int}/{action:str}", join_leave, methods=["POST"]),
        ]

    def seed_content(self, conn: sqlite3.Connection, data: SocialSeed) -> None:
        me = next(u for u in data.users if u.handle == data.me)
        conn.execute("INSERT INTO meta(key, value) VALUES ('handle', ?)", (data.me,))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'user_name'", (me.name,))
        conn.executemany("INSERT INTO users(handle, name, title, bio) VALUES (?, ?, ?, ?)",
                         [(u.handle, u.name, u.title, u.bio) for u in data.users])
        group_ids = {}
        for g in data.groups:
            gid = conn.execute("INSERT INTO groups(name, description) VALUES (?, ?)", (g.name, g.description)).lastrowid
            group_ids[g.name] = gid
            conn.executemany("INSERT OR IGNORE INTO group_members(group_id, handle) VALUES (?, ?)", [(gid, h) for h in g.members])
        for p in data.posts:
            pid = conn.execute("INSERT INTO posts(id, author, title, body, ts, group_id, seeded) VALUES (?, ?, ?, ?, ?, ?, 1)",
                               (p.id, p.author, p.title, p.body, p.ts, group_ids.get(p.group or ""))).lastrowid
            conn.executemany("INSERT INTO comments(post_id, author, body, ts, seeded) VALUES (?, ?, ?, ?, 1)",
                             [(pid, c.author, c.body, c.ts) for c in p.comments])
            conn.executemany("INSERT OR IGNORE INTO likes(post_id, handle) VALUES (?, ?)", [(pid, h) for h in p.likes])
        conn.executemany("INSERT INTO messages(sender, recipient, body, ts, seeded) VALUES (?, ?, ?, ?, 1)",
                         [(m.sender, m.recipient, m.body, m.ts) for m in data.messages])
        conn.executemany("INSERT OR IGNORE INTO photos(filename) VALUES (?)", [(f,) for f in data.photos])
