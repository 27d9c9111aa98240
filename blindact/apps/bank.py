"""Online banking: accounts, payees, transfers (never beyond the balance), invoices."""

from __future__ import annotations

import re
import sqlite3

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.routing import Route

from blindact.apps.base import (
    App, Compare, FormErrors, Params, QueryResult, QuerySet, SeedBase,
    db, form_data, int_param, log_event, not_found, now_iso, parse_money, redirect, render, resolve,
)

SCHEMA = """
CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, number TEXT NOT NULL UNIQUE,
  balance_cents INTEGER NOT NULL CHECK (balance_cents >= 0));
CREATE TABLE payees (id INTEGER PRIMARY KEY, name TEXT NOT NULL, account_number TEXT NOT NULL, bank TEXT NOT NULL,
  seeded INTEGER NOT NULL DEFAULT 0);
CREATE TABLE transactions (id INTEGER PRIMARY KEY, account_id INTEGER NOT NULL REFERENCES accounts(id), ts TEXT NOT NULL,
  description TEXT NOT NULL, amount_cents INTEGER NOT NULL, payee_id INTEGER REFERENCES payees(id),
  memo TEXT NOT NULL DEFAULT '', seeded INTEGER NOT NULL DEFAULT 0);
CREATE TABLE invoices (id INTEGER PRIMARY KEY, number TEXT NOT NULL UNIQUE, vendor TEXT NOT NULL, description TEXT NOT NULL,
  amount_cents INTEGER NOT NULL, due TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('open', 'paid')),
  payee_id INTEGER REFERENCES payees(id));
"""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Account(_Strict):
    name: str
    number: str
    balance: float = Field(ge=0)


class Payee(_Strict):
    name: str
    account_number: str
    bank: str = "First National"


class Txn(_Strict):
    account: str
    description: str
    amount: float
    ts: str = "2025-03-01T12:00:00"


class Invoice(_Strict):
    number: str
    vendor: str
    description: str
    amount: float = Field(gt=0)
    due: str
    status: str = Field("open", pattern="^(open|paid)$")


class BankSeed(SeedBase):
    accounts: list[Account] = Field(default_factory=lambda: [
        Account(name="Everyday Checking", number="4021-1187", balance=3240.55),
        Account(name="Savings", number="4021-5530", balance=12800.00),
    ])
    payees: list[Payee] = Field(default_factory=lambda: [
        Payee(name="Greenfield Property Management", account_number="88120045", bank="Metro Bank"),
        Payee(name="City Power & Light", account_number="55010972", bank="First National"),
        Payee(name="Contoso Supplies", account_number="77304418", bank="Harbor Credit Union"),
    ])
    transactions: list[Txn] = Field(default_factory=lambda: [
        Txn(account="Everyday Checking", description="Salary — Northwind Ltd", amount=4120.00, ts="2025-02-28T09:00:00"),
        Txn(account="Everyday Checking", description="Greenfield Property Management — rent", amount=-1850.00, ts="2025-03-01T08:00:00"),
        Txn(account="Everyday Checking", description="Grocer's Market", amount=-86.42, ts="2025-03-02T18:20:00"),
        Txn(account="Savings", description="Interest", amount=21.33, ts="2025-02-28T00:00:00"),
    ])
    invoices: list[Invoice] = Field(default_factory=lambda: [
        Invoice(number="INV-20931", vendor="Contoso Supplies", description="Office chairs (4)", amount=1196.00, due="2025-03-20"),
        Invoice(number="CPL-7781", vendor="City Power & Light", description="Electricity, February", amount=142.18, due="2025-03-12"),
        Invoice(number="INV-20544", vendor="Contoso Supplies", description="Printer paper", amount=64.90, due="2025-02-15", status="paid"),
    ])


# --------------------------------------------------------------------------- queries

queries = QuerySet()


class TransferParams(Params):
    payee: str
    amount_min: float | None = None
    amount_max: float | None = None
    memo_contains: str | None = None


def _transfers(conn: sqlite3.Connection, payee_id: int) -> list[sqlite3.Row]:
    return conn.execute("SELECT * FROM transactions WHERE payee_id = ? AND seeded = 0 AND amount_cents < 0 ORDER BY id",
                        (payee_id,)).fetchall()


@queries.add("transfer_made", TransferParams)
def transfer_made(conn: sqlite3.Connection, p: TransferParams) -> QueryResult:
    """A transfer (or invoice payment) to the payee happened during the episode, within the amount bounds."""
    payee = resolve(conn, "payees", "name", p.payee)
    if payee is None:
        return QueryResult(passed=False, detail=f"no payee {p.payee!r}")
    rows = _transfers(conn, payee["id"])
    amounts = [-r["amount_cents"] / 100 for r in rows
               if (p.memo_contains is None or p.memo_contains.lower() in r["memo"].lower())]
    hits = [a for a in amounts if (p.amount_min is None or a >= p.amount_min) and (p.amount_max is None or a <= p.amount_max)]
    if hits:
        return QueryResult(passed=True, value=hits, detail=f"paid {payee['name']}: " + ", ".join(f"${a:,.2f}" for a in hits))
    return QueryResult(passed=False, value=amounts, detail=f"no matching transfer to {payee['name']} (made: {amounts or 'none'})")


class TotalParams(Compare):
    payee: str


@queries.add("transfer_total", TotalParams)
def transfer_total(conn: sqlite3.Connection, p: TotalParams) -> QueryResult:
    """Total paid to the payee during the episode, with comparisons."""
    payee = resolve(conn, "payees", "name", p.payee)
    if payee is None:
        return QueryResult(passed=False, detail=f"no payee {p.payee!r}")
    return p.check(sum(-r["amount_cents"] for r in _transfers(conn, payee["id"])) / 100, f"total paid to {payee['name']}")


class BalanceParams(Compare):
    account: str


@queries.add("balance", BalanceParams)
def balance(conn: sqlite3.Connection, p: BalanceParams) -> QueryResult:
    """The account's balance in dollars, with comparisons."""
    acct = resolve(conn, "accounts", "name", p.account) or resolve(conn, "accounts", "number", p.account)
    if acct is None:
        return QueryResult(passed=False, detail=f"no account {p.account!r}")
    return p.check(acct["balance_cents"] / 100, f"{acct['name']} balance")


class PayeeParams(Params):
    name: str
    account_number: str | None = None


@queries.add("payee_added", PayeeParams)
def payee_added(conn: sqlite3.Connection, p: PayeeParams) -> QueryResult:
    """A new payee with this name (and account number) was added during the episode."""
    rows = [r for r in conn.execute("SELECT * FROM payees WHERE seeded = 0")
            if p.name.lower() in r["name"].lower() and (p.account_number is None or r["account_number"] == p.account_number)]
    return QueryResult(passed=bool(rows), value=[r["name"] for r in rows], detail=f"{len(rows)} matching new payee(s)")


class InvoiceParams(Params):
    number: str


@queries.add("invoice_paid", InvoiceParams)
def invoice_paid(conn: sqlite3.Connection, p: InvoiceParams) -> QueryResult:
    """The invoice's status is paid."""
    inv = conn.execute("SELECT * FROM invoices WHERE number = ?", (p.number,)).fetchone()
    if inv is None:
        return QueryResult(passed=False, detail=f"no invoice {p.number!r}")
    return QueryResult(passed=inv["status"] == "paid", value=inv["status"], detail=f"invoice {p.number} is {inv['status']}")


# --------------------------------------------------------------------------- pages


def _accounts(conn: sqlite3.Connection) -> list[dict]:
    return [dict(r) for r in conn.execute("SELECT * FROM accounts ORDER BY id")]


async def overview(request: Request):
    with db(request) as conn:
        accounts = _accounts(conn)
        txns = [dict(r) for r in conn.execute(
            "SELECT t.*, a.name AS account FROM transactions t JOIN accounts a ON a.id = t.account_id ORDER BY t.ts DESC, t.id DESC LIMIT 20")]
        n_open = conn.execute("SELECT COUNT(*) FROM invoices WHERE status = 'open'").fetchone()[0]
    return render(request, "bank/overview.html", accounts=accounts, txns=txns, n_open=n_open)


async def transfer_page(request: Request, errors: dict | None = None, values: dict | None = None, status: int = 200):
    with db(request) as conn:
        accounts = _accounts(conn)
        payees = [dict(r) for r in conn.execute("SELECT * FROM payees ORDER BY name")]
    values = values if values is not None else {"payee_id": request.query_params.get("payee", "")}
    return render(request, "bank/transfer.html", status_code=status, accounts=accounts,
                  payee_options=[(str(p["id"]), p["name"]) for p in payees],
                  errors=errors or {}, values=values)


def _pay(conn: sqlite3.Connection, account: sqlite3.Row, payee: sqlite3.Row, cents: int, memo: str) -> None:
    conn.execute("UPDATE accounts SET balance_cents = balance_cents - ? WHERE id = ?", (cents, account["id"]))
    conn.execute("INSERT INTO transactions(account_id, ts, description, amount_cents, payee_id, memo) VALUES (?, ?, ?, ?, ?, ?)",
                 (account["id"], now_iso(), f"Transfer to {payee['name']}", -cents, payee["id"], memo))


async def make_transfer(request: Request):
    form = await form_data(request)
    errors = FormErrors()
    cents = parse_money(form.get("amount", ""))
    with db(request) as conn:
        account = conn.execute("SELECT * FROM accounts WHERE id = ?", (int_param(form.get("account_id", "")),)).fetchone()
        payee = conn.execute("SELECT * FROM payees WHERE id = ?", (int_param(form.get("payee_id", "")),)).fetchone()
        if account is None:
            errors.add("account_id", "Choose the account to pay from.")
        if payee is None:
            errors.add("payee_id", "Choose who to pay.")
        if cents is None:
            errors.add("amount", "Enter an amount like 250.00.")
        elif cents <= 0:
            errors.add("amount", "The amount must be more than $0.00.")
        elif account is not None and cents > account["balance_cents"]:
            errors.add("amount", f"Insufficient funds: {account['name']} has ${account['balance_cents'] / 100:,.2f} available.")
        if len(form.get("memo", "")) > 140:
            errors.add("memo", "Memos can be at most 140 characters.")
        if errors:
            log_event(conn, "transfer_refused", amount=form.get("amount", ""), payee=payee["name"] if payee else None, reason=errors.errors)
        else:
            _pay(conn, account, payee, cents, form.get("memo", ""))
            log_event(conn, "transfer_made", payee=payee["name"], amount=cents / 100, account=account["name"], memo=form.get("memo", ""))
    if errors:
        return await transfer_page(request, errors.errors, form, 422)
    return redirect("/?notice=Transfer+sent")


async def payees_page(request: Request, errors: dict | None = None, values: dict | None = None, status: int = 200):
    with db(request) as conn:
        payees = [dict(r) for r in conn.execute("SELECT * FROM payees ORDER BY name")]
    return render(request, "bank/payees.html", status_code=status, payees=payees, errors=errors or {}, values=values or {})


async def add_payee(request: Request):
    form = await form_data(request)
    errors = FormErrors()
    if not form.get("name"):
        errors.add("name", "Enter the payee's name.")
    if not re.fullmatch(r"\d{8,12}", form.get("account_number", "")):
        errors.add("account_number", "Account numbers have 8 to 12 digits.")
    if not form.get("bank"):
        errors.add("bank", "Enter the payee's bank.")
    with db(request) as conn:
        if not errors:
            conn.execute("INSERT INTO payees(name, account_number, bank) VALUES (?, ?, ?)",
                         (form["name"], form["account_number"], form["bank"]))
            log_event(conn, "payee_added", name=form["name"], account_number=form["account_number"], bank=form["bank"])
    if errors:
        return await payees_page(request, errors.errors, form, 422)
    return redirect("/payees?notice=Payee+added")


async def invoices_page(request: Request, error: str = "", status: int = 200):
    with db(request) as conn:
        invoices = [dict(r) for r in conn.execute("SELECT * FROM invoices ORDER BY status, due")]
        accounts = _accounts(conn)
    return render(request, "bank/invoices.html", status_code=status, invoices=invoices, accounts=accounts,
                  errors={"_form": error} if error else {})


async def pay_invoice(request: Request):
    form = await form_data(request)
    with db(request) as conn:
        inv = conn.execute("SELECT * FROM invoices WHERE id = ?", (request.path_params["iid"],)).fetchone()
        if inv is None:
            return not_found(request, "That invoice")
        account = conn.execute("SELECT * FROM accounts WHERE id = ?", (int_param(form.get("account_id", "")),)).fetchone()
        payee = conn.execute("SELECT * FROM payees WHERE id = ?", (inv["payee_id"],)).fetchone()
        error = ""
        if inv["status"] == "paid":
            error = f"Invoice {inv['number']} is already paid."
        elif account is None:
            error = "Choose the account to pay from."
        elif payee is None:
            error = f"Add {inv['vendor']} as a payee before paying this invoice."
        elif inv["amount_cents"] > account["balance_cents"]:
            error = f"Insufficient funds: {account['name']} has ${account['balance_cents'] / 100:,.2f} available."
        if error:
            log_event(conn, "invoice_refused", number=inv["number"], reason=error)
        else:
            _pay(conn, account, payee, inv["amount_cents"], f"Invoice {inv['number']}")
            conn.execute("UPDATE invoices SET status = 'paid' WHERE id = ?", (inv["id"],))
            log_event(conn, "invoice_paid", number=inv["number"], vendor=inv["vendor"], amount=inv["amount_cents"] / 100)
    if error:
        return await invoices_page(request, error, 422)
    return redirect("/invoices?notice=Invoice+paid")


class BankApp(App):
    name = "bank"
    title = "Harbor Bank"
    schema = SCHEMA
    SeedModel = BankSeed
    app_queries = queries
    nav = [("Accounts", "/", "bank"), ("Transfer", "/transfer", "transfer"), ("Payees", "/payees", "contacts"),
           ("Invoices", "/invoices", "receipt")]

    @property
    def routes(self) -> list:
        return [
            Route("/", overview),
            Route("/transfer", transfer_page),
            Route("/transfer", make_transfer, methods=["POST"]),
            Route("/payees", payees_page),
            Route("/payees", add_payee, methods=["POST"]),
            Route("/invoices", invoices_page),
            Route("/invoices/{iid:int}/pay", pay_invoice, methods=["POST"]),
        ]

    def seed_content(self, conn: sqlite3.Connection, data: BankSeed) -> None:
        ids = {}
        for a in data.accounts:
            ids[a.name] = conn.execute("INSERT INTO accounts(name, number, balance_cents) VALUES (?, ?, ?)",
                                       (a.name, a.number, round(a.balance * 100))).lastrowid
        payees = {}
        for p in data.payees:
            payees[p.name.lower()] = conn.execute("INSERT INTO payees(name, account_number, bank, seeded) VALUES (?, ?, ?, 1)",
                                                  (p.name, p.account_number, p.bank)).lastrowid
        for t in data.transactions:
            if t.account not in ids:
                raise ValueError(f"bank seed: transaction {t.description!r} names unknown account {t.account!r}")
            conn.execute("INSERT INTO transactions(account_id, ts, description, amount_cents, seeded) VALUES (?, ?, ?, ?, 1)",
                         (ids[t.account], t.ts, t.description, round(t.amount * 100)))
        conn.executemany("INSERT INTO invoices(number, vendor, description, amount_cents, due, status, payee_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [(i.number, i.vendor, i.description, round(i.amount * 100), i.due, i.status, payees.get(i.vendor.lower()))
                          for i in data.invoices])
