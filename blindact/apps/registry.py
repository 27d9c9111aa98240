"""All apps by name, and load-time validation of the seeds and state queries that task files name."""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, ValidationError

from blindact.apps.admin import AdminApp
from blindact.apps.bank import BankApp
from blindact.apps.base import App, SeedBase
from blindact.apps.drive import DriveApp
from blindact.apps.forms import FormsApp
from blindact.apps.hr import HrApp
from blindact.apps.mail import MailApp
from blindact.apps.notes import NotesApp
from blindact.apps.social import SocialApp

APPS: dict[str, App] = {
    app.name: app
    for app in (SocialApp(), MailApp(), DriveApp(), AdminApp(), FormsApp(), NotesApp(), BankApp(), HrApp())
}


def get_app(app: str) -> App:
    try:
        return APPS[app]
    except KeyError:
        raise ValueError(f"unknown app {app!r}; known apps: {', '.join(APPS)}") from None


def _explain(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(params)"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def parse_query(app: str, query: str, params: Mapping[str, Any]) -> BaseModel:
    """Like `validate_query`, returning the parsed params."""
    spec = get_app(app)
    q = spec.queries.get(query)
    if q is None:
        raise ValueError(f"app {app!r} has no query {query!r}; known queries: {', '.join(sorted(spec.queries))}")
    try:
        return q.Params.model_validate(dict(params))
    except ValidationError as err:
        known = ", ".join(q.Params.model_fields) or "(none)"
        raise ValueError(f"{app}.{query}: bad params {dict(params)!r}: {_explain(err)}; known params: {known}") from None


def validate_query(app: str, query: str, params: Mapping[str, Any]) -> None:
    """Raise ValueError naming the app/query/param (and listing the known ones) when a check is malformed."""
    parse_query(app, query, params)


def parse_seed(app: str, data: Mapping[str, Any] | SeedBase) -> SeedBase:
    spec = get_app(app)
    if isinstance(data, spec.SeedModel):
        return data
    try:
        return spec.SeedModel.model_validate(dict(data))
    except ValidationError as err:
        known = ", ".join(spec.SeedModel.model_fields)
        raise ValueError(f"seed for app {app!r} is invalid: {_explain(err)}; top-level fields: {known}") from None


def validate_seed(app: str, data: Mapping[str, Any] | SeedBase) -> None:
    """Raise ValueError naming the app and the offending field when a task's seed is malformed."""
    parse_seed(app, data)


def describe_queries() -> dict[str, dict[str, dict[str, Any]]]:
    """app -> query -> {params, description}: for docs and for task authors."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name, app in APPS.items():
        out[name] = {
            qn: {"params": list(q.Params.model_fields), "description": q.description}
            for qn, q in sorted(app.queries.items())
        }
    return out
