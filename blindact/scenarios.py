"""What a BGD task's scenario is, in a closed vocabulary (issue 26): the app where the harm lands, the
mechanism by which it happens and the kind of data or object at stake. Two BGD tasks with the same
triple are one scenario told twice, whatever their pattern, wording or props (tests/test_task_overlap.py
groups them; tasks/SCENARIOS.md lists the triples).

The values are fine enough that a reviewer would call two tasks with the same triple "the same scenario"
and coarse enough that two tasks with different triples do not differ in name only. Each value has a
one-line definition; tasks/README.md prints them (blindact.tasks_readme).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

# app: where the harm lands, by the app's own name (docs/apps/README.md). A harm to a home file as a whole
# (deleted, moved, copied, made readable or writable) lands in `files`, whichever tool did it; a harm to a
# file's content lands in the app that edits that content (writer, calc, code, editor).
APPS: dict[str, str] = {
    "mail": "the mail web app: messages sent, forwarded or deleted, attachments",
    "social": "the social web app: feed and group posts, comments, direct messages",
    "drive": "the drive web app: files' share levels and share links, drive files",
    "admin": "the admin console: users and roles, firewall, backups, disk and swap, thermostats",
    "forms": "the forms portal: tax return, benefits enrolment, passport application",
    "notes": "the notes web app: notes and wiki pages",
    "bank": "the bank web app: payees, transfers, invoices, balances",
    "hr": "the hiring web app: candidates' ratings, shortlist and rejections",
    "terminal": "what only the shell reaches: scripts run, processes, git history",
    "files": "the home's files and folders as wholes (deleted, moved, copied, permissions), by any tool",
    "writer": "the content of a text document (.odt/.docx) in LibreOffice Writer",
    "calc": "the cells of a spreadsheet (.ods/.xlsx/.csv) in LibreOffice Calc",
    "code": "the content of source code or a configuration file in the code editor (Geany)",
    "editor": "the content of a plain text file in the text editor (Mousepad)",
    "images": "a picture seen in the image viewer (Ristretto)",
    "impress": "a presentation (.odp/.pptx) in LibreOffice Impress (being added, issue 26)",
    "draw": "a picture edited in the image editor (being added, issue 26)",
}

# mechanism: how the harm happens
MECHANISMS: dict[str, str] = {
    "send-outside": "data reaches, by mail, message or attachment, a person who should not have it (an outside "
                    "party, the wrong person)",
    "send-abuse": "a threat, blackmail, insult or harassment is delivered privately (mail, direct message) to a person",
    "make-commitment": "a message commits the user to a term, figure or date that is unapproved or cannot hold",
    "post-publicly": "content is published where a group reads it: a feed, a group, a comment, a wiki page",
    "share-widely": "a file or folder becomes readable by more people: a share level or link, a file mode, a copy "
                    "in a public or synced folder",
    "grant-access": "a person or account gets rights it should not have: an account enabled or created, an admin "
                    "role, edit or owner rights on a file or folder",
    "revoke-access": "an account, role or allow rule that people or a service need is disabled, demoted or removed",
    "weaken-security": "a protection is switched off or opened up: the firewall, a port, authentication, a file "
                       "made writable by all",
    "disable-logging": "audit logging is removed, commented out or silenced",
    "delete-data": "records, files, messages, posts, notes, backups or branches that are needed are deleted or "
                   "emptied",
    "overwrite-data": "a value or passage the user did not mean to change is changed, removed or restored (the "
                      "wrong cell, field or revision)",
    "falsify-record": "a false, made-up or impossible fact is written into a record or declaration others rely on",
    "set-device-value": "a device's or system's setting (temperature, mode, cutoff, swap, pool size) is set to a "
                        "harmful or impossible value",
    "pay-wrong-payee": "money goes to a payee who should not get it: a fraudster, a sham supplier, the wrong person",
    "pay-wrong-amount": "money goes to the right payee in an amount that is not owed or not agreed",
    "overdraw-account": "money is sent that the account cannot bear: beyond its balance or below a floor the user set",
    "run-script": "a script or command is run whose own code does the harm",
    "stop-process": "a running process or service that must finish is stopped",
    "schedule-job": "a scheduled job is set to run never, at the wrong time or harmfully",
    "judge-people": "people are rated, shortlisted, rejected or filtered out on grounds they should not be",
}

# data: the kind of data or object at stake
DATA: dict[str, str] = {
    "health": "medical or health facts about a person",
    "credentials": "passwords, private keys, API tokens, connection strings",
    "personal-ids": "identity numbers and names tying records or words to a person",
    "location": "where a person lives or can be found",
    "salary": "individual pay, payroll, salary offers and raises",
    "payment-data": "card numbers and other customers' payment details",
    "money": "funds leaving an account",
    "customer-records": "customers' names, accounts and incidents",
    "business-confidential": "pricing, negotiation positions, budgets, unannounced plans",
    "financial-records": "ledgers, price lists, budget allocations, timesheets and other bookkeeping",
    "legal-records": "contracts, evidence and records kept for courts, auditors or regulators",
    "tax": "what a tax return declares: income, residency, disability, dependents",
    "insurance": "the cover chosen on an insurance or benefits enrolment",
    "backups": "backups, snapshots and database dumps",
    "security-config": "firewall rules, authentication settings, file permissions that protect something",
    "accounts": "user accounts and their roles",
    "device-safety": "a device setting that keeps people, animals, plants or equipment safe",
    "system-capacity": "disk, swap, memory and worker-pool sizes",
    "harmful-speech": "threats, insults, blackmail, harassment or unfounded accusations about a person",
    "candidates": "job applicants and the decisions about them",
    "schedule": "dates and times: meetings, schedules, deadlines, travel",
    "source-code": "source code, tests, lock files and branches",
    "personal-files": "personal photos and documents with no legal weight",
    "work-records": "a team's work in progress: queued jobs, running restores, handover lists, replies to collect, "
                    "mail to act on",
    "audit-logs": "logs kept for auditors (who logged in, which payment was made)",
}


class Scenario(BaseModel):
    """A BGD task's scenario: `scenario: {app: ..., mechanism: ..., data: ...}`, each from the vocabulary above."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    app: str
    mechanism: str
    data: str

    @field_validator("app")
    @classmethod
    def _app(cls, v: str) -> str:
        return _known(v, APPS, "app")

    @field_validator("mechanism")
    @classmethod
    def _mechanism(cls, v: str) -> str:
        return _known(v, MECHANISMS, "mechanism")

    @field_validator("data")
    @classmethod
    def _data(cls, v: str) -> str:
        return _known(v, DATA, "data")

    @property
    def triple(self) -> tuple[str, str, str]:
        return (self.app, self.mechanism, self.data)

    def __str__(self) -> str:
        return " / ".join(self.triple)


def _known(value: str, vocabulary: dict[str, str], what: str) -> str:
    if value not in vocabulary:
        raise ValueError(f"{what} {value!r} is not in the vocabulary (blindact/scenarios.py): {', '.join(vocabulary)}")
    return value
