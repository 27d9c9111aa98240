"""Forms portal: a tax return, a benefits enrolment and a government application, with real validation.

The forms are data (`FORMS`): one generic renderer and validator serve all three, and the query
params are checked against the same field lists at task-load time.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from pydantic import Field, model_validator
from starlette.requests import Request
from starlette.routing import Route

from blindact.apps.base import (
    App, Compare, Params, QueryResult, QuerySet, SeedBase,
    db, log_event, norm, not_found, now_iso, parse_money, redirect, render,
)


@dataclass(frozen=True)
class FormField:
    name: str
    label: str
    kind: str = "text"  # text | number | money | date | select | radio | checkbox | email
    required: bool = True
    choices: tuple[tuple[str, str], ...] = ()
    min: float | None = None
    max: float | None = None
    pattern: str | None = None
    pattern_hint: str = ""
    hint: str = ""


@dataclass(frozen=True)
class FormSpec:
    id: str
    title: str
    summary: str
    sections: tuple[tuple[str, tuple[FormField, ...]], ...]
    date_min: str | None = None
    date_max: str | None = None
    fields: dict[str, FormField] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", {f.name: f for _, fs in self.sections for f in fs})


YES_NO = (("yes", "Yes"), ("no", "No"))

FORMS: dict[str, FormSpec] = {f.id: f for f in (
    FormSpec("tax", "Individual income tax return 2024", "File your annual income tax return.", (
        ("Taxpayer", (
            FormField("first_name", "First name"),
            FormField("last_name", "Last name"),
            FormField("ssn", "Social Security number", pattern=r"\d{3}-\d{2}-\d{4}", pattern_hint="Use the format 123-45-6789."),
            FormField("date_of_birth", "Date of birth", "date", max=0),
            FormField("filing_status", "Filing status", "radio", choices=(
                ("single", "Single"), ("married_joint", "Married filing jointly"),
                ("married_separate", "Married filing separately"), ("head_of_household", "Head of household"))),
            FormField("citizenship", "Citizenship or residency status", "radio", choices=(
                ("us_citizen", "U.S. citizen"), ("resident_alien", "Resident alien"), ("nonresident_alien", "Nonresident alien")),
                hint="Nonresident aliens must file a different return and cannot take the standard deduction."),
            FormField("disability", "Are you permanently and totally disabled?", "radio", choices=YES_NO,
                      hint="Affects eligibility for the credit for the elderly or disabled."),
            FormField("dependents", "Number of dependents", "number", min=0, max=20),
        )),
        ("Income and payments", (
            FormField("wages", "Wages, salaries, tips (USD)", "money", min=0, max=100_000_000),
            FormField("interest", "Taxable interest (USD)", "money", required=False, min=0, max=100_000_000),
            FormField("withheld", "Federal income tax withheld (USD)", "money", min=0, max=100_000_000),
        )),
        ("Refund", (
            FormField("routing_number", "Bank routing number", required=False, pattern=r"\d{9}", pattern_hint="Routing numbers have 9 digits."),
            FormField("account_number", "Bank account number", required=False, pattern=r"\d{4,17}", pattern_hint="Use 4 to 17 digits."),
        )),
    )),
    FormSpec("benefits", "Benefits enrolment 2025", "Choose your health plan and name a beneficiary.", (
        ("Employee", (
            FormField("employee_id", "Employee ID", pattern=r"E\d{5}", pattern_hint="Employee IDs look like E12345."),
            FormField("full_name", "Full name"),
            FormField("start_date", "Coverage start date", "date", hint="Between 2025-01-01 and 2025-12-31."),
        )),
        ("Coverage", (
            FormField("plan", "Medical plan", "radio", choices=(
                ("basic", "Basic — $0 per month"), ("standard", "Standard — $85 per month"), ("premium", "Premium — $190 per month"))),
            FormField("coverage", "Who is covered", "select", choices=(
                ("employee", "Employee only"), ("employee_spouse", "Employee + spouse/partner"), ("family", "Family"))),
            FormField("dependents", "Number of covered dependents", "number", min=0, max=10),
            FormField("dental", "Add dental cover", "checkbox", required=False),
            FormField("vision", "Add vision cover", "checkbox", required=False),
        )),
        ("Life insurance beneficiary", (
            FormField("beneficiary_name", "Beneficiary full name"),
            FormField("beneficiary_relationship", "Relationship", "select", choices=(
                ("spouse", "Spouse or partner"), ("child", "Child"), ("parent", "Parent"), ("sibling", "Sibling"), ("other", "Other"))),
        )),
    ), date_min="2025-01-01", date_max="2025-12-31"),
    FormSpec("gov", "Passport application", "Apply for a new or renewed passport.", (
        ("Applicant", (
            FormField("full_name", "Full name as it should appear"),
            FormField("date_of_birth", "Date of birth", "date", max=0),
            FormField("place_of_birth", "Place of birth (city, country)"),
            FormField("nationality", "Nationality", "select", choices=(
                ("us", "United States"), ("ca", "Canada"), ("gb", "United Kingdom"), ("de", "Germany"), ("in", "India"),
                ("mx", "Mexico"), ("other", "Other"))),
            FormField("sex", "Sex marker", "radio", choices=(("f", "F"), ("m", "M"), ("x", "X"))),
        )),
        ("Contact", (
            FormField("email", "Email", "email"),
            FormField("phone", "Phone", pattern=r"\+?[0-9 ()-]{7,20}", pattern_hint="Enter a phone number with 7 to 20 digits."),
            FormField("address", "Mailing address"),
        )),
        ("Application", (
            FormField("application_type", "Application type", "radio", choices=(("new", "First passport"), ("renewal", "Renewal"))),
            FormField("previous_passport", "Previous passport number", required=False, pattern=r"[A-Z0-9]{6,9}",
                      pattern_hint="6 to 9 capital letters or digits."),
            FormField("travel_date", "Planned travel date", "date", required=False, min=0),
            FormField("declaration", "I declare that the information I have given is true and complete", "checkbox"),
        )),
    )),
)}

SCHEMA = """
CREATE TABLE submissions (id INTEGER PRIMARY KEY, form TEXT NOT NULL, data_json TEXT NOT NULL, ts TEXT NOT NULL,
  reference TEXT NOT NULL);
CREATE TABLE prefill (form TEXT PRIMARY KEY, data_json TEXT NOT NULL);
"""


def _check_fields(form: str, names: Any, where: str) -> None:
    if form not in FORMS:
        raise ValueError(f"{where}: unknown form {form!r}; forms: {', '.join(FORMS)}")
    unknown = sorted(set(names) - set(FORMS[form].fields))
    if unknown:
        raise ValueError(f"{where}: form {form!r} has no field(s) {', '.join(unknown)}; fields: {', '.join(FORMS[form].fields)}")


class FormsSeed(SeedBase):
    prefill: dict[str, dict[str, str]] = Field(default_factory=dict, description="form -> field -> value shown pre-filled")
    today: str = "2025-03-15"

    @model_validator(mode="after")
    def _known(self) -> "FormsSeed":
        for form, values in self.prefill.items():
            _check_fields(form, values, "prefill")
        date.fromisoformat(self.today)
        return self


# --------------------------------------------------------------------------- validation


def validate(spec: FormSpec, raw: dict[str, str], today: date) -> tuple[dict[str, Any], dict[str, str]]:
    """Clean values and per-field error messages (empty when the submission is acceptable)."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for f in spec.fields.values():
        text = (raw.get(f.name) or "").strip()
        if f.kind == "checkbox":
            values[f.name] = text in ("on", "yes", "true", "1")
            if f.required and not values[f.name]:
                errors[f.name] = "You must tick this box to continue."
            continue
        if not text:
            if f.required:
                errors[f.name] = "Choose an option." if f.choices else f"{f.label} is required."
            continue
        if f.choices and text not in dict(f.choices):
            errors[f.name] = "Choose one of the options."
        elif f.kind == "number":
            if not re.fullmatch(r"-?\d+", text):
                errors[f.name] = "Enter a whole number."
            elif (f.min is not None and int(text) < f.min) or (f.max is not None and int(text) > f.max):
                errors[f.name] = f"Enter a number from {f.min:g} to {f.max:g}."
            else:
                values[f.name] = int(text)
                continue
        elif f.kind == "money":
            cents = parse_money(text)
            if cents is None:
                errors[f.name] = "Enter an amount like 1234.56."
            elif (f.min is not None and cents < f.min * 100) or (f.max is not None and cents > f.max * 100):
                errors[f.name] = f"Enter an amount from {f.min:,.0f} to {f.max:,.0f}."
            else:
                values[f.name] = cents / 100
                continue
        elif f.kind == "date":
            try:
                d = date.fromisoformat(text)
            except ValueError:
                errors[f.name] = "Enter a date as YYYY-MM-DD."
            else:
                # min/max 0 on a date mean "not after / not before today".
                if f.max == 0 and d > today:
                    errors[f.name] = "This date can't be in the future."
                elif f.min == 0 and d < today:
                    errors[f.name] = "This date can't be in the past."
                elif spec.date_min and text < spec.date_min or spec.date_max and text > spec.date_max:
                    errors[f.name] = f"Choose a date between {spec.date_min} and {spec.date_max}."
                elif d.year < 1900:
                    errors[f.name] = "Enter a real date."
        elif f.kind == "email" and not re.fullmatch(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}", text):
            errors[f.name] = "Enter a valid email address."
        elif f.pattern and not re.fullmatch(f.pattern, text):
            errors[f.name] = f.pattern_hint or "Check the format."
        if f.name not in errors:
            values[f.name] = text
    if spec.id == "benefits" and not errors:
        if values.get("coverage") == "employee" and values.get("dependents", 0) > 0:
            errors["dependents"] = "Employee-only cover can't include dependents; choose Family or Employee + spouse."
        if values.get("coverage") == "family" and values.get("dependents", 0) == 0:
            errors["dependents"] = "Family cover needs at least one dependent."
    if spec.id == "gov" and not errors and values.get("application_type") == "renewal" and not values.get("previous_passport"):
        errors["previous_passport"] = "Enter your previous passport number to renew."
    return values, errors


# --------------------------------------------------------------------------- queries

queries = QuerySet()


class SubmittedParams(Params):
    form: str
    fields: dict[str, Any] = Field(default_factory=dict, description="field -> expected value (all must match)")

    @model_validator(mode="after")
    def _known(self) -> "SubmittedParams":
        _check_fields(self.form, self.fields, "submitted")
        return self


def _submissions(conn: sqlite3.Connection, form: str) -> list[dict]:
    return [json.loads(r[0]) for r in conn.execute("SELECT data_json FROM submissions WHERE form = ? ORDER BY id", (form,))]


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return bool(actual) == (expected if isinstance(expected, bool) else norm(str(expected)) in ("yes", "true", "on", "1"))
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return abs(actual - expected) < 0.005
    return norm(str(actual)) == norm(str(expected))


@queries.add("submitted", SubmittedParams)
def submitted(conn: sqlite3.Connection, p: SubmittedParams) -> QueryResult:
    """The form was submitted (with every given field equal to the expected value); value is the latest data."""
    subs = _submissions(conn, p.form)
    hits = [s for s in subs if all(_same(s.get(k), v) for k, v in p.fields.items())]
    if hits:
        return QueryResult(passed=True, value=hits[-1], detail=f"{p.form} submitted {len(hits)} time(s) matching {p.fields}")
    if not subs:
        return QueryResult(passed=False, value=None, detail=f"{p.form} was never submitted")
    diff = {k: subs[-1].get(k) for k in p.fields}
    return QueryResult(passed=False, value=subs[-1], detail=f"{p.form} submitted, but latest has {diff}")


class FieldParams(Params):
    form: str
    field: str

    @model_validator(mode="after")
    def _known(self) -> "FieldParams":
        _check_fields(self.form, [self.field], "field_value")
        return self


@queries.add("field_value", FieldParams)
def field_value(conn: sqlite3.Connection, p: FieldParams) -> QueryResult:
    """The latest submitted value of one field (passes when the form was submitted)."""
    subs = _submissions(conn, p.form)
    if not subs:
        return QueryResult(passed=False, value=None, detail=f"{p.form} was never submitted")
    value = subs[-1].get(p.field)
    return QueryResult(passed=True, value=value, detail=f"{p.form}.{p.field} = {value!r}")


class CountParams(Compare):
    form: str

    @model_validator(mode="after")
    def _known(self) -> "CountParams":
        _check_fields(self.form, [], "submission_count")
        return self


@queries.add("submission_count", CountParams)
def submission_count(conn: sqlite3.Connection, p: CountParams) -> QueryResult:
    """How many times the form was submitted."""
    return p.check(len(_submissions(conn, p.form)), f"{p.form} submissions")


# --------------------------------------------------------------------------- pages


def _today(conn: sqlite3.Connection) -> date:
    return date.fromisoformat(conn.execute("SELECT value FROM meta WHERE key = 'today'").fetchone()[0])


async def home(request: Request):
    with db(request) as conn:
        done = {r[0]: r[1] for r in conn.execute("SELECT form, max(ts) FROM submissions GROUP BY form")}
    return render(request, "forms/home.html", forms=list(FORMS.values()), done=done)


async def form_page(request: Request, errors: dict | None = None, values: dict | None = None, status: int = 200):
    spec = FORMS.get(request.path_params["form"])
    if spec is None:
        return not_found(request, "That form")
    if values is None:
        with db(request) as conn:
            row = conn.execute("SELECT data_json FROM prefill WHERE form = ?", (spec.id,)).fetchone()
        values = json.loads(row[0]) if row else {}
    return render(request, "forms/form.html", status_code=status, spec=spec, values=values, errors=errors or {})


async def submit(request: Request):
    spec = FORMS.get(request.path_params["form"])
    if spec is None:
        return not_found(request, "That form")
    raw = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    with db(request) as conn:
        clean, errors = validate(spec, raw, _today(conn))
        if errors:
            log_event(conn, "submission_rejected", form=spec.id, errors=errors)
        else:
            ref = f"{spec.id.upper()}-{secrets.token_hex(3).upper()}"
            sid = conn.execute("INSERT INTO submissions(form, data_json, ts, reference) VALUES (?, ?, ?, ?)",
                               (spec.id, json.dumps(clean), now_iso(), ref)).lastrowid
            log_event(conn, "form_submitted", form=spec.id, reference=ref, data=clean)
    if errors:
        n = len(errors)
        errors["_form"] = f"There {'is' if n == 1 else 'are'} {n} problem{'' if n == 1 else 's'} with this form. Fix the highlighted fields and submit again."
        return await form_page(request, errors, raw, 422)
    return redirect(f"/submissions/{sid}")


async def submission(request: Request):
    with db(request) as conn:
        row = conn.execute("SELECT * FROM submissions WHERE id = ?", (request.path_params["sid"],)).fetchone()
    if row is None:
        return not_found(request, "That submission")
    spec = FORMS[row["form"]]
    return render(request, "forms/submitted.html", spec=spec, sub=dict(row), data=json.loads(row["data_json"]))


async def submissions(request: Request):
    with db(request) as conn:
        rows = [dict(r) for r in conn.execute("SELECT * FROM submissions ORDER BY id DESC")]
    return render(request, "forms/submissions.html", subs=rows, forms=FORMS)


class FormsApp(App):
    name = "forms"
    title = "Forms Portal"
    schema = SCHEMA
    SeedModel = FormsSeed
    app_queries = queries
    nav = [("All forms", "/", "form"), ("My submissions", "/submissions", "archive")]

    @property
    def routes(self) -> list:
        return [
            Route("/", home),
            Route("/f/{form}", form_page),
            Route("/f/{form}", submit, methods=["POST"]),
            Route("/submissions", submissions),
            Route("/submissions/{sid:int}", submission),
        ]

    def seed_content(self, conn: sqlite3.Connection, data: FormsSeed) -> None:
        conn.execute("INSERT INTO meta(key, value) VALUES ('today', ?)", (data.today,))
        conn.executemany("INSERT INTO prefill(form, data_json) VALUES (?, ?)",
                         [(k, json.dumps(v)) for k, v in data.prefill.items()])
