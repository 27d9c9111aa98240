"""The text of a PDF, page by page (pypdf, pure Python, the same on the host and in the image), with its
metadata, its annotations' comments, its form fields' values and the files attached to it."""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from blindact.content.limits import Budget, LimitReached

# an agent's PDF may be broken in many small ways: pypdf's warnings about it become notes on the
# Extracted (collected per reading thread), not log lines
_LOG = logging.getLogger("pypdf")
_LOG.propagate = False
_LOG.setLevel(logging.WARNING)


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.thread = threading.get_ident()
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread and len(self.seen) < 20:
            self.seen.append(record.getMessage().splitlines()[0][:200] if record.getMessage() else "")


@dataclass
class PdfText:
    pages: list[str] = field(default_factory=list)
    page_count: int | None = None  # as the page tree declares it
    extra: list[str] = field(default_factory=list)  # metadata, comments, form values
    attachments: list[tuple[str, bytes]] = field(default_factory=list)
    truncated: str | None = None
    errors: list[str] = field(default_factory=list)  # pages that could not be read, pypdf's warnings


def _pages(reader, budget: Budget) -> Iterator:
    """The page objects in order, walking the page tree lazily (pypdf's own list flattens the whole tree
    first, which a PDF of 100,000 pages makes slow): inherited resources are applied as pypdf does."""
    from pypdf import PageObject
    from pypdf.generic import NameObject

    inheritable = ("/Resources", "/MediaBox", "/CropBox", "/Rotate")
    root = reader.trailer["/Root"]["/Pages"]
    stack = [(root, {}, 0)]
    seen = 0
    while stack:
        node, inherited, depth = stack.pop()
        budget.check_time()
        seen += 1
        if depth > 64 or seen > budget.limits.pages * 50:
            raise LimitReached("the page tree is too deep or too large")
        node = node.get_object()
        kind = node.get("/Type")
        if kind == "/Pages" or ("/Kids" in node and kind != "/Page"):
            here = {**inherited, **{k: node[k] for k in inheritable if k in node}}
            kids = node.get("/Kids") or []
            stack.extend((kid, here, depth + 1) for kid in reversed(list(kids)))
        else:
            ref = getattr(node, "indirect_reference", None)
            page = PageObject(reader, ref)
            page.update(node)
            for key, value in inherited.items():
                if key not in page:
                    page[NameObject(key)] = value
            yield page


def read_pdf(data: bytes, budget: Budget) -> PdfText:
    warnings = _Warnings()
    _LOG.addHandler(warnings)
    try:
        out = _read(data, budget)
    finally:
        _LOG.removeHandler(warnings)
    out.errors += [w for w in dict.fromkeys(warnings.seen) if w]
    return out


def _read(data: bytes, budget: Budget) -> PdfText:
    from pypdf import PdfReader, apply_configuration
    from pypdf.errors import DependencyError, LimitReachedError, PdfReadError, PyPdfError

    out = PdfText()
    per_stream = max(1, min(budget.bytes_left(), 75_000_000))
    with apply_configuration(zlib_maximum_output_length=per_stream, lzw_maximum_output_length=per_stream,
                             run_length_maximum_output_length=per_stream, jbig2dec_binary=None):
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            try:
                if not reader.decrypt(""):
                    raise PdfReadError("encrypted with a password")
            except (NotImplementedError, DependencyError) as exc:
                raise PdfReadError(f"encrypted ({exc})") from None
        try:
            out.page_count = int(reader.trailer["/Root"]["/Pages"].get("/Count", 0))
        except (KeyError, TypeError, ValueError):
            out.page_count = None
        meta = reader.metadata or {}
        out.extra += [str(v) for k, v in meta.items() if k in ("/Title", "/Subject", "/Author", "/Keywords") and v]
        try:
            for n, page in enumerate(_pages(reader, budget)):
                if n >= budget.limits.pages:
                    out.truncated = f"page limit ({budget.limits.pages:,}) reached of {out.page_count or '?'} pages"
                    break
                try:
                    contents = page.get_contents()
                    if contents is not None:
                        contents.get_data()  # a stream over the limit raises here (extract_text would say nothing)
                    text = page.extract_text() or ""
                    out.extra += [str(a["/Contents"]) for a in (x.get_object() for x in page.get("/Annots") or [])
                                  if a.get("/Contents")]
                except LimitReachedError as exc:
                    text = ""
                    out.truncated = out.truncated or f"page {n + 1}: {exc}"
                except (PyPdfError, KeyError, ValueError, TypeError, AttributeError, IndexError) as exc:
                    text = ""
                    out.errors.append(f"page {n + 1}: {type(exc).__name__}: {exc}")
                budget.take_bytes(len(text))
                out.pages.append(text)
        except LimitReached as stop:
            out.truncated = str(stop)
            if stop.whole:
                return out
        try:
            fields = reader.get_fields() or {}
            out.extra += [f"{k}: {v.get('/V')}" for k, v in fields.items() if v.get("/V") not in (None, "")]
            for name, contents in (reader.attachments or {}).items():
                for blob in contents:
                    budget.take_bytes(len(blob))
                    out.attachments.append((name, blob))
        except (PyPdfError, KeyError, ValueError, TypeError, AttributeError, IndexError) as exc:
            out.errors.append(f"form fields or attachments: {type(exc).__name__}: {exc}")
        except LimitReached as stop:
            out.truncated = str(stop)
    return out
