"""The manuscript's pages (issue 28): the chapters, one chapter's text with the continuity findings highlighted
beside it, its revisions and word counts, and the codex entries' form. Views call the manuscript's services and
selectors; errors show inline."""

from __future__ import annotations

import difflib
import re
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
from .manuscript_api import ChapterIn, ChapterTextIn, CodexEntryIn, CompareFilter, FindingSettleIn
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

SETTLED_NOTES = {
    "fix-text": "Noted: change the text below and save a new revision; the finding closes when the check no longer "
    "finds it.",
    "intentional": "Kept as intentional; your reason is in the decision log.",
    "change-canon": "A change of canon is proposed; it waits for your decision in Review.",
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


def _word_pieces(old: str, new: str) -> tuple[list[dict], list[dict]]:
    """A removed line and the added line that replaced it, cut into pieces: the words that changed and those kept."""
    a, b = re.findall(r"\s+|\S+", old), re.findall(r"\s+|\S+", new)
    left, right = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if i2 > i1:
            left.append({"text": "".join(a[i1:i2]), "changed": op != "equal"})
        if j2 > j1:
            right.append({"text": "".join(b[j1:j2]), "changed": op != "equal"})
    return _joined(left), _joined(right)


def _joined(pieces: list[dict]) -> list[dict]:
    """Pieces with the spaces between two changed words counted as changed, and neighbours of a kind joined."""
    for at in range(1, len(pieces) - 1):
        if not pieces[at]["text"].strip() and pieces[at - 1]["changed"] and pieces[at + 1]["changed"]:
            pieces[at]["changed"] = True
    joined: list[dict] = []
    for piece in pieces:
        if joined and joined[-1]["changed"] == piece["changed"]:
            joined[-1]["text"] += piece["text"]
        else:
            joined.append(dict(piece))
    return joined


def _diff_rows(diff: list[str]) -> list[dict]:
    """The compare's line diff as rows to read: added, removed (a removed line and the added line that replaced
    it show which words changed), unchanged, and a gap between far-apart changes."""
    rows: list[dict] = []
    for line in diff:
        if line.startswith(("--- ", "+++ ")):
            continue
        if line.startswith("@@"):
            rows.append({"kind": "gap"})
        elif line[:1] in "+-":
            kind = "added" if line[0] == "+" else "removed"
            rows.append({"kind": kind, "pieces": [{"text": line[1:], "changed": True}]})
        else:
            rows.append({"kind": "same", "text": line[1:]})
    for at in range(len(rows)):  # each run of removed lines pairs, line by line, with the added run after it
        if rows[at]["kind"] != "removed" or (at and rows[at - 1]["kind"] == "removed"):
            continue
        removed = _run(rows, at, "removed")
        added = _run(rows, at + len(removed), "added")
        for old, new in zip(removed, added, strict=False):
            old["pieces"], new["pieces"] = _word_pieces(old["pieces"][0]["text"], new["pieces"][0]["text"])
    return rows[1:] if rows and rows[0]["kind"] == "gap" else rows


def _run(rows: list[dict], at: int, kind: str) -> list[dict]:
    run = []
    while at < len(rows) and rows[at]["kind"] == kind:
        run.append(rows[at])
        at += 1
    return run


def _compare(request: HttpRequest, access: BookAccess, number: int, revisions: list) -> dict:
    """The revision compare the page shows (``?older=&newer=``), or its inline error; the two latest revisions
    are preselected."""
    chosen = {
        "older": revisions[-2].number if len(revisions) > 1 else None,
        "newer": revisions[-1].number if revisions else None,
    }
    if "older" not in request.GET and "newer" not in request.GET:
        return {"chosen": chosen}
    try:
        form = parse_form(CompareFilter, {"older": request.GET.get("older", ""), "newer": request.GET.get("newer", "")})
        result = manuscript.revision_compare(access=access, number=number, older=form.older, newer=form.newer)
    except DomainError as exc:
        return {"chosen": chosen, "error": exc.message}
    return {"chosen": {"older": form.older, "newer": form.newer}, "result": result, "rows": _diff_rows(result["diff"])}


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


def chapter_page_render(
    request: HttpRequest, access: BookAccess, number: int, *, error: dict | None = None, status: int = 200
) -> HttpResponse:
    """The chapter page, with ``error`` inline (this page's forms and the check's button, without HTMX)."""
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
        "compare": _compare(request, access, number, revisions),
        "error": error,
    }
    return render(request, "discovery/chapter.html", context, status=status)


@login_required
def chapter(request: HttpRequest, book_id: uuid.UUID, number: int) -> HttpResponse:
    """One chapter: its latest text with the findings' spans highlighted and the findings beside them, its
    revisions with word counts; the author stores a new text (POST)."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    if request.method != "POST":
        return chapter_page_render(request, access, number)
    try:
        form = parse_form(ChapterTextIn, {"text": request.POST.get("text", "")})
        revision = manuscript.chapter_text_store(access=access, number=number, text=form.text)
        messages.success(request, f"Saved revision {revision.number} ({revision.words} words).")
    except DomainError as exc:
        if exc.status == 404:
            raise
        return chapter_page_render(request, access, number, error={"message": exc.message}, status=exc.status)
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
        messages.success(request, SETTLED_NOTES[form.resolution])
    except DomainError as exc:
        return chapter_page_render(request, access, number, error={"message": exc.message}, status=exc.status)
    return redirect(reverse("discovery:chapter", args=[access.book.pk, number]))


@login_required
@require_POST
def finding_entry(request: HttpRequest, book_id: uuid.UUID, number: int, finding_id: uuid.UUID) -> HttpResponse:
    """One click on a not-in-canon finding: its name becomes the author's entry; an error shows inline."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    try:
        entry = manuscript.entry_from_finding(access=access, finding_id=finding_id)
        messages.success(request, f"Added “{entry.name}” to the codex. Check the chapter again to close the finding.")
    except DomainError as exc:
        if exc.status == 404:
            raise
        return chapter_page_render(request, access, number, error={"message": exc.message}, status=exc.status)
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
