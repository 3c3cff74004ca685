"""The manuscript's pages (issue 28): the chapters, one chapter's text with the continuity findings highlighted
beside it, its revisions and word counts, and the codex entries' form. Views call the manuscript's services and
selectors; errors show inline."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from novelgraph.core.errors import DomainError, Invalid
from novelgraph.core.schemas import parse_form

from .access import BookAccess, Cap, page_access
from .manuscript_api import ChapterIn, ChapterTextIn, CodexEntryIn, FindingSettleIn
from .models import EntryKind
from .promises import promises_report
from .selectors import book_chapters, chapter_revisions, continuity_findings
from .services import manuscript
from .views import _render_codex as render_codex

SETTLED_WORDS = {
    "open": "Open",
    "fixed": "Fixed in the text",
    "intentional": "Intentional",
    "canon-change": "Canon change proposed",
}


def _segments(text: str, findings: list) -> list[dict]:
    """The text cut at the findings' spans: plain pieces and highlighted ones (overlaps join the first)."""
    pieces, at = [], 0
    for finding in sorted(findings, key=lambda f: (f.span_start, f.span_end)):
        if finding.span_start < at or finding.span_end > len(text):
            continue
        if finding.span_start > at:
            pieces.append({"text": text[at : finding.span_start]})
        pieces.append({"text": text[finding.span_start : finding.span_end], "finding": finding})
        at = finding.span_end
    pieces.append({"text": text[at:]})
    return [p for p in pieces if p["text"]]


def _chapters_page(request: HttpRequest, access: BookAccess, *, error: dict | None = None, status: int = 200):
    chapters = list(book_chapters(access.book))
    return render(
        request,
        "discovery/chapters.html",
        {"book": access.book, "role": access.role, "chapters": chapters, "error": error},
        status=status,
    )


@login_required
def chapters(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The book's chapters; the author adds one or uploads a manuscript (POST)."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    if request.method != "POST":
        return _chapters_page(request, access)
    try:
        if "file" in request.FILES:
            upload = request.FILES["file"]
            stored = manuscript.manuscript_upload(access=access, filename=upload.name or "", data=upload.read())
            messages.success(request, f"Uploaded {len(stored)} chapter(s).")
        else:
            form = parse_form(ChapterIn, {"title": request.POST.get("title", "")})
            manuscript.chapter_add(access=access, title=form.title)
            messages.success(request, "Chapter added.")
    except DomainError as exc:
        return _chapters_page(request, access, error={"message": exc.message, "field": exc.field}, status=exc.status)
    return redirect(reverse("discovery:chapters", args=[access.book.pk]))


def _chapter_page(request, access: BookAccess, number: int, *, error: dict | None = None, status: int = 200):
    chapter = manuscript.chapter_get(access, number)
    revisions = chapter_revisions(chapter)
    latest = revisions[-1] if revisions else None
    findings = continuity_findings(access.book, chapter=number)
    shown = [f for f in findings if latest is not None and f.revision_id == latest.pk and f.status != "fixed"]
    for finding in findings:
        finding.status_words = SETTLED_WORDS.get(finding.status, finding.status)
    context = {
        "book": access.book,
        "role": access.role,
        "chapter": chapter,
        "revisions": list(reversed(revisions)),
        "latest": latest,
        "segments": _segments(latest.text, shown) if latest else [],
        "findings": findings,
        "error": error,
    }
    return render(request, "discovery/chapter.html", context, status=status)


@login_required
def chapter(request: HttpRequest, book_id: uuid.UUID, number: int) -> HttpResponse:
    """One chapter: its latest text with the findings' spans highlighted and the findings beside them, its
    revisions with word counts; the author stores a new text (POST)."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    if request.method != "POST":
        return _chapter_page(request, access, number)
    try:
        form = parse_form(ChapterTextIn, {"text": request.POST.get("text", "")})
        revision = manuscript.chapter_text_store(access=access, number=number, text=form.text)
        messages.success(request, f"Saved revision {revision.number} ({revision.words} words).")
    except DomainError as exc:
        if exc.status == 404:
            raise
        return _chapter_page(request, access, number, error={"message": exc.message}, status=exc.status)
    return redirect(reverse("discovery:chapter", args=[access.book.pk, number]))


@login_required
@require_POST
def finding_settle(request: HttpRequest, book_id: uuid.UUID, number: int, finding_id: uuid.UUID) -> HttpResponse:
    """The author settles a finding from the chapter page; an error shows inline and nothing changes."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    try:
        form = parse_form(
            FindingSettleIn,
            {
                "resolution": request.POST.get("resolution", ""),
                "rationale": request.POST.get("rationale", ""),
                **({"value": request.POST["value"]} if request.POST.get("value") else {}),
            },
        )
        manuscript.finding_settle(
            access=access, finding_id=finding_id, resolution=form.resolution, rationale=form.rationale, value=form.value
        )
        messages.success(request, "Finding settled.")
    except DomainError as exc:
        return _chapter_page(request, access, number, error={"message": exc.message}, status=exc.status)
    return redirect(reverse("discovery:chapter", args=[access.book.pk, number]))


PROMISE_SECTIONS = (
    ("overdue", "Overdue", "Its planned chapter has come, and the text has not shown it yet."),
    ("never_planted", "Never planted", "A clue a reveal needs, which no chapter before the reveal shows."),
    ("open", "Open", "Planted in the text, not paid off yet."),
    ("paid_off", "Paid off", "Planted and paid off in the text."),
    ("to_come", "Still to come", "Not in the text yet, and not due yet."),
    (
        "untraceable",
        "Not traceable in the text",
        "Its words name no codex entry, or its value is not words a text can show (such as yes or no).",
    ),
)
KIND_WORDS = {"reveal": "Reveal", "clue": "Clue", "promise": "The charter's promise"}


@login_required
def promises(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """Reader promises as of a chapter (``?chapter=N``, the last when left out): what is open, overdue, never
    planted and paid off, in words. A chapter the book does not have shows inline."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    chapters = list(book_chapters(access.book))
    raw = request.GET.get("chapter", "").strip()
    error, report, status = None, None, 200
    try:
        if raw and not raw.isdigit():
            raise Invalid("choose a chapter by its number", field="chapter")
        if chapters or raw:  # a book without chapters has nothing to report yet: the page says so
            report = promises_report(access, int(raw) if raw else None)
    except DomainError as exc:
        error, status = {"message": exc.message, "field": exc.field}, exc.status
    sections = []
    if report is not None:
        for key, title, help_text in PROMISE_SECTIONS:
            for item in report[key]:
                item["kind_words"] = KIND_WORDS[item["kind"]]
            sections.append({"key": key, "title": title, "help": help_text, "items": report[key]})
    context = {
        "book": access.book,
        "role": access.role,
        "chapters": chapters,
        "report": report,
        "sections": sections,
        "error": error,
    }
    return render(request, "discovery/promises.html", context, status=status)


@login_required
@require_POST
def entry_add(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """The codex page's entry form: the author adds an entry (aliases one a line, or comma-separated)."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    raw = request.POST.get("aliases", "").replace("\n", ",")
    try:
        form = parse_form(
            CodexEntryIn,
            {
                "name": request.POST.get("name", ""),
                "kind": request.POST.get("kind", EntryKind.UNSORTED),
                "aliases": [a.strip() for a in raw.split(",") if a.strip()],
            },
        )
        manuscript.entry_create(access=access, name=form.name, kind=form.kind, aliases=form.aliases)
        messages.success(request, f"Added “{form.name}” to the codex.")
    except DomainError as exc:
        messages.error(request, exc.message)
        return render_codex(request, access, status=exc.status)
    return redirect(reverse("discovery:codex", args=[access.book.pk]) + "#entries")
