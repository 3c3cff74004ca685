"""Every write to the literary library and to a book's research (seed 001), and the library search a caller runs
through its capabilities.

Library writes (sources, chunks, imports, re-indexing) need ``literary:write``: people
(their session or personal ``author`` key) and staff in the admin hold it; agents only
read. Research is proposed by the book's author or its agents (Sol, Terra, Luna; not
editors) and stays pending until the author admits or rejects it through
``approvals.services.approval_decide``, which also appends the decision to the book's
log.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from approvals.canon_record import CanonKind
from approvals.models import Approval, ApprovalKind
from approvals.services import approval_request, subject_decide
from approvals.subjects import PROPOSAL_VERDICTS, Decision, SubjectHandler
from discovery.access import BookAccess, Cap, principal_capabilities, refusal
from novelgraph.core import fetch
from novelgraph.core.auth import Principal
from novelgraph.core.digest import fingerprint
from novelgraph.core.errors import Conflict, Forbidden, Invalid
from novelgraph.core.schemas import limit

from . import search as search_index
from .models import KnowledgeChunk, KnowledgeSource, ResearchItem
from .schemas import ChunkIn, ResearchFromUrlIn, ResearchIn, SourceImportIn, SourceIn
from .seed import CURATED_ORIGIN

CHUNK_TARGET_CHARS = 1_500
CHUNK_MAX_CHARS = 2_000
IMPORT_BATCH = 500  # chunks per INSERT when importing a document
RESEARCH_KIND = ApprovalKind.RESEARCH_ADMISSION.value
RESEARCH_SUBJECT = "research"


def _require_write(principal: Principal | None, *, origin: str | None = None) -> None:
    """literary:write (authors and staff; agents only read). The curated craft library is
    staff-curated: through the API only staff may add to it or write under its origin.
    ``principal`` None is the admin or a management command, which staff run."""
    if principal is None:
        return
    if Cap.LITERARY_WRITE not in principal_capabilities(principal):
        raise refusal(principal.key_role, Cap.LITERARY_WRITE)
    if origin == CURATED_ORIGIN and not principal.user.is_staff:
        raise Forbidden(f"the {CURATED_ORIGIN} library is curated by staff in the admin", code="curated_by_staff")


# --- Sources and chunks ------------------------------------------------------


def source_create(*, principal: Principal | None, payload: SourceIn) -> KnowledgeSource:
    """Create a source. Rule: literary:write; (origin, title, version) is unique (409)."""
    _require_write(principal, origin=payload.origin)
    fields = payload.dict(include={"title", "origin", "license_note", "version"})
    if KnowledgeSource.objects.filter(
        origin=fields["origin"], title=fields["title"], version=fields["version"]
    ).exists():
        raise Conflict(
            f"a source {fields['title']!r} version {fields['version']} from {fields['origin']} already exists",
            code="duplicate_source",
        )
    try:
        with transaction.atomic():
            return KnowledgeSource.objects.create(**fields)
    except IntegrityError:
        raise Conflict("that source already exists", code="duplicate_source") from None


def chunk_add(
    *, principal: Principal | None, source: KnowledgeSource, payload: ChunkIn, position: int | None = None
) -> KnowledgeChunk:
    """Attach a cited chunk to a source. Rule: literary:write. The search index follows by database trigger."""
    _require_write(principal, origin=source.origin)
    with transaction.atomic():
        if position is None:
            last = source.chunks.order_by("-position").values_list("position", flat=True).first()
            position = (last or 0) + 1
        return KnowledgeChunk.objects.create(source=source, position=position, **payload.dict())


@dataclass(frozen=True)
class Section:
    heading: str  # "" for text before the first heading, or when there are none
    body: str


_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def split_sections(text: str) -> list[Section]:
    """Markdown sections by ATX (``# ...``) and setext headings; fenced code is never a heading."""
    sections: list[Section] = []
    heading, lines = "", []
    in_fence = False
    source_lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for index, line in enumerate(source_lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        if not in_fence:
            atx = _ATX.match(line)
            setext = (
                _SETEXT.match(source_lines[index + 1])
                if index + 1 < len(source_lines) and line.strip() and (not lines or not lines[-1].strip())
                else None
            )
            if atx and atx.group(2).strip():
                sections.append(Section(heading, "\n".join(lines).strip()))
                heading, lines = atx.group(2).strip(), []
                continue
            if setext and not _SETEXT.match(line):
                sections.append(Section(heading, "\n".join(lines).strip()))
                heading, lines = line.strip(), []
                continue
            if lines == [] and _SETEXT.match(line) and heading and sections:
                continue  # the underline of a setext heading just taken
        lines.append(line)
    sections.append(Section(heading, "\n".join(lines).strip()))
    return [s for s in sections if s.body or s.heading]


def group_paragraphs(text: str, *, target: int = CHUNK_TARGET_CHARS, maximum: int = CHUNK_MAX_CHARS) -> list[str]:
    """Paragraphs packed into pieces of about ``target`` characters (never above ``maximum``)."""
    paragraphs = [p.strip() for p in re.split(r"\n[ \t]*\n", text) if p.strip()]
    pieces: list[str] = []
    current = ""
    for paragraph in paragraphs:
        for part in _hard_split(paragraph, maximum):
            if current and len(current) + 2 + len(part) > maximum:
                pieces.append(current)
                current = part
            else:
                current = f"{current}\n\n{part}" if current else part
            if len(current) >= target:
                pieces.append(current)
                current = ""
    if current:
        pieces.append(current)
    return pieces


def _hard_split(paragraph: str, maximum: int) -> list[str]:
    """A paragraph longer than ``maximum``, cut at sentence ends (else at spaces)."""
    if len(paragraph) <= maximum:
        return [paragraph]
    parts, current = [], ""
    for sentence in re.split(r"(?<=[.!?])\s+", paragraph):
        while len(sentence) > maximum:
            cut = sentence.rfind(" ", 0, maximum)
            cut = cut if cut > 0 else maximum
            parts.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if current and len(current) + 1 + len(sentence) > maximum:
            parts.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        parts.append(current)
    return parts


def split_document(text: str, title: str) -> list[tuple[str, str]]:
    """(content, citation) pairs: by heading when the text has headings, else by paragraph groups.

    Citations: "<title> § <heading>" (", part N" when a long section is split), or
    "<title>, part N" for text without headings.
    """
    sections = split_sections(text)
    has_headings = any(s.heading for s in sections)
    chunks: list[tuple[str, str]] = []
    if not has_headings:
        pieces = group_paragraphs(text)
        return [(piece, f"{title}, part {n}") for n, piece in enumerate(pieces, start=1)]
    for section in sections:
        if not section.body:
            continue
        pieces = group_paragraphs(section.body)
        label = f"{title} § {section.heading}" if section.heading else f"{title} § Opening"
        for n, piece in enumerate(pieces, start=1):
            citation = label if len(pieces) == 1 else f"{label}, part {n}"
            content = f"{section.heading}\n\n{piece}" if section.heading else piece
            chunks.append((content, citation[:500]))
    return chunks


def source_import(
    *,
    principal: Principal | None,
    payload: SourceImportIn,
    progress: Callable[[int], None] | None = None,
) -> KnowledgeSource:
    """Create a source from a Markdown or plain-text document, one cited chunk per section.

    Rule: literary:write; the document must contain text. One transaction: if any
    chunk fails, neither the source nor any chunk remains.
    """
    _require_write(principal, origin=payload.origin)
    if not payload.text.strip():
        raise Invalid("the document is empty", field="file")
    pieces = split_document(payload.text.replace("\x00", ""), payload.title)
    if not pieces:
        raise Invalid("the document has no text to import", field="file")
    content_limit = limit(KnowledgeChunk, "content")
    with transaction.atomic():
        source = source_create(principal=None, payload=payload)
        # The chunks are inserted in batches: one multi-row INSERT per batch instead of a
        # savepoint and an INSERT per chunk (2.4x the raw-SQL floor before, see bench/RESULTS.md).
        # The index triggers fire per row.
        batch: list[KnowledgeChunk] = []
        for position, (content, citation) in enumerate(pieces, start=1):
            batch.append(
                KnowledgeChunk(
                    source=source,
                    position=position,
                    content=content[:content_limit],
                    topics=list(payload.topics),
                    applicability=list(payload.applicability),
                    citation=citation,
                )
            )
            if len(batch) == IMPORT_BATCH or position == len(pieces):
                KnowledgeChunk.objects.bulk_create(batch)
                if progress:
                    for _ in batch:  # progress still counts chunk by chunk
                        progress(1)
                batch = []
    return source


def source_reindex(*, principal: Principal | None, source_ids: Iterable[Any]) -> search_index.RebuildReport:
    """Rebuild the search index entries of the chunks of these sources. Rule: literary:write."""
    _require_write(principal)
    chunk_ids = list(KnowledgeChunk.objects.filter(source_id__in=list(source_ids)).values_list("pk", flat=True))
    return search_index.search_index_rebuild(chunk_ids=chunk_ids)


def library_search(
    *,
    principal: Principal,
    query: str | None,
    limit: int = search_index.DEFAULT_LIMIT,
    applicability: str | None = None,
    topic: str | None = None,
) -> search_index.SearchResponse:
    """Search the library. Rule: literary:read (not book-scoped)."""
    if Cap.LITERARY_READ not in principal_capabilities(principal):
        raise refusal(principal.key_role, Cap.LITERARY_READ)
    return search_index.search(query, limit=limit, applicability=applicability, topic=topic)


# --- Research --------------------------------------------------------------


def _research_digest(item: ResearchItem) -> str:
    return fingerprint(
        {
            "url": item.url,
            "title": item.title,
            "excerpt": item.excerpt,
            "source_snapshot": item.source_snapshot,
            "claim": item.claim,
            "citation": item.citation,
        }
    )


def _item_of(approval: Approval) -> ResearchItem | None:
    try:
        return ResearchItem.objects.get(pk=approval.subject_id, book_id=approval.book_id)
    except (ResearchItem.DoesNotExist, ValueError):
        return None


def _digest(approval: Approval) -> str:
    item = _item_of(approval)
    return _research_digest(item) if item else "missing"


def _apply(decision: Decision) -> None:
    item = ResearchItem.objects.select_for_update().get(pk=decision.approval.subject_id)
    if item.status != ResearchItem.Status.PENDING:
        raise Conflict(f"this research is already {item.status}", code="not_pending")
    item.status = ResearchItem.Status.ADMITTED if decision.verdict == "approve" else ResearchItem.Status.REJECTED
    item.approval = decision.approval
    item.save(update_fields=["status", "approval", "updated_at"])
    decision.detail.update({"research_id": str(item.pk), "status": item.status, "url": item.url})


def _describe(approval: Approval) -> dict:
    item = _item_of(approval)
    if item is None:
        return {}
    return {
        "research_id": str(item.pk),
        "title": item.title,
        "url": item.url,
        "claim": item.claim,
        "citation": item.citation,
        "status": item.status,
    }


def research_canon_rows(book, ids=None):
    """Each admitted research item (of the book, or ``ids``) with the fields its admission made citable."""
    rows = ResearchItem.objects.filter(status=ResearchItem.Status.ADMITTED)
    rows = rows.filter(book=book) if ids is None else rows.filter(pk__in=ids)
    columns = ("pk", "url", "title", "excerpt", "source_snapshot", "claim", "citation")
    for pk, *values in rows.order_by("created_at").values_list(*columns):
        yield str(pk), dict(zip(columns[1:], values, strict=True)), None


RESEARCH_HANDLER = SubjectHandler(
    kind=RESEARCH_KIND, verdicts=PROPOSAL_VERDICTS, digest=_digest, apply=_apply, describe=_describe
)


def research_statuses(ids) -> dict[str, str]:
    return {str(pk): status for pk, status in ResearchItem.objects.filter(pk__in=ids).values_list("pk", "status")}


RESEARCH_CANON = CanonKind(
    "research",
    "research item",
    research_canon_rows,
    statuses=research_statuses,
    marks=("canon", "research_id"),  # _apply names the item on every verdict
    approved=ResearchItem.Status.ADMITTED.value,
    rejected=ResearchItem.Status.REJECTED.value,
)


def research_propose(*, access: BookAccess, payload: ResearchIn) -> ResearchItem:
    """Propose research for a book: pending, with a pending research-admission approval.

    Rule: the book's author or its agents may propose (book:read plus discovery:write
    or scratchpad:write); editors may not.
    """
    access.require(Cap.BOOK_READ)
    access.require(Cap.DISCOVERY_WRITE, Cap.SCRATCHPAD_WRITE)
    with transaction.atomic():
        item = ResearchItem.objects.create(
            book=access.book, proposed_by=access.role, proposed_by_user=access.user, **payload.dict()
        )
        item.approval = _request_admission(item, role=access.role, user=access.user)
        item.save(update_fields=["approval", "updated_at"])
    return item


EXCERPT_CHARS = 2000


def extract_page(fetched: fetch.Fetched) -> tuple[str, str]:
    """The page's title and main text (trafilatura); a plain-text page is its own text, its first line the title."""
    if fetched.content_type == "text/plain":
        text = fetched.text.strip()
        return (text.splitlines()[0].strip() if text else ""), text
    import trafilatura

    extracted = trafilatura.bare_extraction(fetched.text, url=fetched.url, include_comments=False, with_metadata=True)
    if not extracted:
        return "", ""
    document = extracted.as_dict()
    return (document.get("title") or "").strip(), (document.get("text") or "").strip()


def research_page_collect(*, access: BookAccess, url: str) -> dict:
    """Collect a page for research, writing nothing: fetched through the address guards, its title and main text
    extracted. Returns ``{"url", "host", "title", "text"}``: the address it ended at (after redirects), its host,
    the title (the host when it has none) and the text as a research snapshot keeps it.

    Rules: as ``research_propose`` (checked before any request leaves); a refused URL (scheme, credentials, a
    non-public address at any hop, too many redirects), an unreachable page, a wrong content type, an oversize
    page or a page with no text is a 422 on ``url`` saying why."""
    access.require(Cap.BOOK_READ)
    access.require(Cap.DISCOVERY_WRITE, Cap.SCRATCHPAD_WRITE)
    fetched = fetch.fetch_page(url, field="url")
    title, text = extract_page(fetched)
    if not text:
        raise Invalid("The page has no readable text to collect.", field="url")
    host = fetch.check_url(fetched.url).host
    return {
        "url": fetched.url[: limit(ResearchItem, "url")],
        "host": host,
        "title": (title or host)[: limit(ResearchItem, "title")],
        "text": text[: limit(ResearchItem, "source_snapshot")],
    }


def _propose_collected(*, access: BookAccess, page: dict, claim: str, citation: str = "") -> ResearchItem:
    """Propose a page ``research_page_collect`` collected: pending, with a research-admission approval, like any
    research (the author still admits it with a rationale). The snapshot is the page's text, stored with its
    SHA-256; the citation, when none is given, is the page's title and site and the day it was collected."""
    snapshot = page["text"]
    citation = citation or f"{page['title']}, {page['host']}, collected {timezone.now():%-d %B %Y}"
    with transaction.atomic():
        item = ResearchItem.objects.create(
            book=access.book,
            proposed_by=access.role,
            proposed_by_user=access.user,
            url=page["url"],
            title=page["title"],
            excerpt=snapshot[:EXCERPT_CHARS],
            source_snapshot=snapshot,
            source_sha256=hashlib.sha256(snapshot.encode()).hexdigest(),
            claim=claim,
            citation=citation[: limit(ResearchItem, "citation")],
        )
        item.approval = _request_admission(item, role=access.role, user=access.user)
        item.save(update_fields=["approval", "updated_at"])
    return item


def research_propose_from_url(
    *, access: BookAccess, payload: ResearchFromUrlIn, collected: dict | None = None
) -> ResearchItem:
    """Propose research the server collects from ``payload.url`` (``research_page_collect``): pending, with a
    research-admission approval; the snapshot stored with its SHA-256. The same rules, and the same 422 on
    ``url`` for a page it refuses.

    ``collected``: the page ``research_page_collect`` already returned for that URL (Luna's run collects it before
    its write transaction, so no lock is held while a page is fetched); it is not fetched again."""
    access.require(Cap.BOOK_READ)
    access.require(Cap.DISCOVERY_WRITE, Cap.SCRATCHPAD_WRITE)
    page = collected if collected is not None else research_page_collect(access=access, url=payload.url)
    return _propose_collected(access=access, page=page, claim=payload.claim, citation=payload.citation)


def _request_admission(item: ResearchItem, *, role: str, user=None) -> Approval:
    return approval_request(
        book=item.book,
        kind=RESEARCH_KIND,
        subject_type=RESEARCH_SUBJECT,
        subject_id=item.pk,
        summary=f"Admit research: {item.title}",
        requested_by_role=role,
        requested_by_user=user,
        note=item.claim[:2000],
    )


def research_decide(*, access: BookAccess, item: ResearchItem, verdict: str, rationale: str) -> ResearchItem:
    """The author admits (verdict approve) or rejects research, with a rationale.

    Rules: only the author decides (403); a blank rationale is a 422; research that is no
    longer pending is a 409. The decision goes through approval_decide, which appends it to
    the book's decision log.
    """
    subject_decide(
        access=access,
        kind=RESEARCH_KIND,
        subject_type=RESEARCH_SUBJECT,
        subject_id=item.pk,
        subject_pending=item.status == ResearchItem.Status.PENDING,
        subject_label=f"this research ({item.status})",
        summary=f"Admit research: {item.title}",
        verdict=verdict,
        rationale=rationale,
        requested_by_role=item.proposed_by or "author",
        requested_by_user=item.proposed_by_user,
    )
    item.refresh_from_db()
    return item
