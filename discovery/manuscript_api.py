"""The manuscript's routes (issue 28): codex entries, chapters, chapter text and its revisions, the continuity
check's findings and how the author settles them. Luna's check itself is queued through the agents' routes."""

import uuid
from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Field, File, Query, Router, Schema, UploadedFile
from ninja.pagination import paginate
from ninja.responses import Status

from novelgraph.core.auth import principal_of
from novelgraph.core.schemas import ERRORS, LONG_TEXT, JsonValue, Text, TextList

from .access import BookAccess, Cap, book_access
from .models import CodexEntry, EntryKind, FindingKind, FindingStatus
from .promises import promises_report
from .schemas import ChapterOut, FindingsIn
from .selectors import chapter_revisions, codex_entries, continuity_findings
from .services import manuscript

router = Router(tags=["manuscript"])
MAX_CHAPTER_TEXT = 1_000_000


def _access(request: HttpRequest, book_id, *caps: Cap) -> BookAccess:
    return book_access(principal_of(request), book_id, *caps)


# --- Codex entries --------------------------------------------------------------------------------------------


class CodexEntryIn(Schema):
    name: Text(300)
    kind: EntryKind = EntryKind.UNSORTED
    aliases: TextList(item_length=300) = Field(default_factory=list)


class CodexEntryEditIn(Schema):
    name: Text(300) | None = None
    kind: EntryKind | None = None
    aliases: TextList(item_length=300) | None = None


class CodexEntryOut(Schema):
    id: uuid.UUID
    name: str
    kind: str
    aliases: list[str]
    status: str = Field(description="approved (in the codex), proposed (an agent's, awaiting the author) or rejected")
    created_by: str
    claim_ids: list[uuid.UUID] = Field(default_factory=list)

    @staticmethod
    def resolve_claim_ids(obj: CodexEntry) -> list:
        return getattr(obj, "claim_ids", [])


@router.get("/books/{book_id}/codex/entries", response={200: list[CodexEntryOut], **ERRORS}, summary="Codex entries")
@paginate
def entries_list(request: HttpRequest, book_id: uuid.UUID):
    return codex_entries(_access(request, book_id, Cap.BOOK_READ).book)


@router.post("/books/{book_id}/codex/entries", response={201: CodexEntryOut, **ERRORS}, summary="Add an entry")
def entries_create(request: HttpRequest, book_id: uuid.UUID, payload: CodexEntryIn):
    """The author's entry goes into the codex; an agent's (Sol's) is proposed, with a pending approval that the
    author decides in her inbox."""
    access = _access(request, book_id)
    return Status(
        201, manuscript.entry_add(access=access, name=payload.name, kind=payload.kind, aliases=payload.aliases)
    )


@router.patch(
    "/books/{book_id}/codex/entries/{entry_id}", response={200: CodexEntryOut, **ERRORS}, summary="Edit an entry"
)
def entries_edit(request: HttpRequest, book_id: uuid.UUID, entry_id: uuid.UUID, payload: CodexEntryEditIn):
    access = _access(request, book_id)
    return manuscript.entry_edit(
        access=access, entry_id=entry_id, name=payload.name, kind=payload.kind, aliases=payload.aliases
    )


# --- Chapters ---------------------------------------------------------------------------------------------------


class ChapterIn(Schema):
    title: Text(200)
    spec: Text(LONG_TEXT, required=False) = ""
    number: int | None = Field(None, ge=1, description="where it goes; the end when left out")


class ChapterEditIn(Schema):
    title: Text(200) | None = None
    number: int | None = Field(None, ge=1, description="move the chapter to this place")


def chapter_add(request: HttpRequest, book_id: uuid.UUID, payload: ChapterIn):
    access = _access(request, book_id)
    return Status(
        201, manuscript.chapter_add(access=access, title=payload.title, spec=payload.spec, number=payload.number)
    )


@router.patch(
    "/books/{book_id}/chapters/{number}", response={200: ChapterOut, **ERRORS}, summary="Retitle or move a chapter"
)
def chapter_edit(request: HttpRequest, book_id: uuid.UUID, number: int, payload: ChapterEditIn):
    access = _access(request, book_id)
    return manuscript.chapter_edit(access=access, number=number, title=payload.title, move_to=payload.number)


# --- Chapter text -----------------------------------------------------------------------------------------------


class ChapterTextIn(Schema):
    text: Text(MAX_CHAPTER_TEXT, required=False)


class RevisionOut(Schema):
    chapter: int
    revision: int
    words: int
    created_at: datetime
    text: str | None = None

    @staticmethod
    def resolve_chapter(obj) -> int:
        return obj.chapter.number

    @staticmethod
    def resolve_revision(obj) -> int:
        return obj.number


class FindingOut(Schema):
    id: uuid.UUID
    kind: FindingKind
    chapter: int
    revision: int
    span: list[int]
    quote: str
    claim_ids: list[uuid.UUID]
    entry_ids: list[uuid.UUID]
    message: str
    status: FindingStatus
    rationale: str
    proposal_id: uuid.UUID | None

    @staticmethod
    def resolve_chapter(obj) -> int:
        return obj.chapter.number

    @staticmethod
    def resolve_revision(obj) -> int:
        return obj.revision.number

    @staticmethod
    def resolve_span(obj) -> list[int]:
        return [obj.span_start, obj.span_end]


class RevisionFilter(Schema):
    revision: int | None = Field(None, ge=1, description="which revision; the latest when left out")


class FindingsFiledOut(Schema):
    filed: list[FindingOut]


class CompareFilter(Schema):
    older: int = Field(ge=1, description="the earlier revision's number")
    newer: int = Field(ge=1, description="the later revision's number")


class CompareOut(Schema):
    chapter: int
    older: int
    newer: int
    words_added: int
    words_removed: int
    diff: list[str]


class UploadOut(Schema):
    chapters: list[RevisionOut]


@router.put(
    "/books/{book_id}/chapters/{number}/text",
    response={201: RevisionOut, **ERRORS},
    summary="Store a new revision of the chapter's text (Markdown)",
)
def chapter_text_put(request: HttpRequest, book_id: uuid.UUID, number: int, payload: ChapterTextIn):
    access = _access(request, book_id)
    revision = manuscript.chapter_text_store(access=access, number=number, text=payload.text)
    revision.text = revision.text
    return Status(201, revision)


@router.get(
    "/books/{book_id}/chapters/{number}/text",
    response={200: RevisionOut, **ERRORS},
    summary="The chapter's latest text, or `revision`",
)
def chapter_text_get(request: HttpRequest, book_id: uuid.UUID, number: int, filters: Query[RevisionFilter]):
    return chapter_text_read(_access(request, book_id, Cap.BOOK_READ), number, filters.revision)


def chapter_text_read(access: BookAccess, number: int, revision: int | None):
    """A revision of the chapter's text (the latest when ``revision`` is None)."""
    if revision is None:
        revisions = chapter_revisions(manuscript.chapter_get(access, number))
        if not revisions:
            raise manuscript.NotFound("this chapter has no text yet", field="number")
        revision = revisions[-1].number
    return manuscript.revision_get(access, number, revision)


def revisions_read(access: BookAccess, number: int) -> list:
    """The chapter's revisions, oldest first, without their text (the route and the chapter_revisions tool)."""
    rows = chapter_revisions(manuscript.chapter_get(access, number))
    for row in rows:
        row.text = None
    return rows


@router.get(
    "/books/{book_id}/chapters/{number}/revisions",
    response={200: list[RevisionOut], **ERRORS},
    summary="The chapter's revisions, oldest first (without their text)",
)
@paginate
def chapter_revisions_list(request: HttpRequest, book_id: uuid.UUID, number: int):
    return revisions_read(_access(request, book_id, Cap.BOOK_READ), number)


@router.get(
    "/books/{book_id}/chapters/{number}/compare",
    response={200: CompareOut, **ERRORS},
    summary="Compare two revisions of a chapter",
)
def chapter_compare(request: HttpRequest, book_id: uuid.UUID, number: int, filters: Query[CompareFilter]):
    return manuscript.revision_compare(
        access=_access(request, book_id, Cap.BOOK_READ), number=number, older=filters.older, newer=filters.newer
    )


@router.post(
    "/books/{book_id}/manuscript",
    response={201: UploadOut, **ERRORS},
    summary="Upload a manuscript (.md, .txt, .docx), split at its chapter headings",
)
def manuscript_upload(request: HttpRequest, book_id: uuid.UUID, file: File[UploadedFile]):
    access = _access(request, book_id)
    stored = manuscript.manuscript_upload(access=access, filename=file.name or "", data=file.read())
    return Status(201, {"chapters": stored})


# --- Continuity findings ----------------------------------------------------------------------------------------


class FindingFilter(Schema):
    chapter: int | None = Field(None, ge=1)
    status: FindingStatus | None = None


class FindingSettleIn(Schema):
    resolution: Literal["fix-text", "intentional", "change-canon"]
    rationale: Text(LONG_TEXT, required=False) = ""
    value: JsonValue | None = Field(None, description="with change-canon: the claim's new value")


@router.post(
    "/books/{book_id}/chapters/{number}/findings",
    response={201: FindingsFiledOut, **ERRORS},
    summary="Luna files what her continuity check of a revision found (a finding already filed is not filed again)",
)
def continuity_file(request: HttpRequest, book_id: uuid.UUID, number: int, payload: FindingsIn):
    access = _access(request, book_id, Cap.BOOK_READ)
    return Status(201, {"filed": manuscript.findings_record(access=access, number=number, payload=payload)})


@router.get(
    "/books/{book_id}/continuity",
    response={200: list[FindingOut], **ERRORS},
    summary="The continuity check's findings (by `chapter`, `status`)",
)
@paginate
def continuity_list(request: HttpRequest, book_id: uuid.UUID, filters: Query[FindingFilter]):
    access = _access(request, book_id, Cap.BOOK_READ)
    return continuity_findings(access.book, chapter=filters.chapter, status=filters.status)


@router.post(
    "/books/{book_id}/continuity/{finding_id}/settle",
    response={200: FindingOut, **ERRORS},
    summary="The author settles a finding: fix the text, intentional (with a rationale), or change canon",
)
def continuity_settle(request: HttpRequest, book_id: uuid.UUID, finding_id: uuid.UUID, payload: FindingSettleIn):
    access = _access(request, book_id)
    return manuscript.finding_settle(
        access=access,
        finding_id=finding_id,
        resolution=payload.resolution,
        rationale=payload.rationale,
        value=payload.value,
    )


# --- Reader promises --------------------------------------------------------------------------------------------


class PromisesFilter(Schema):
    chapter: int | None = Field(None, ge=1, description="the report as of this chapter; the last when left out")


class PromiseOut(Schema):
    kind: Literal["reveal", "clue", "promise"]
    claim_id: uuid.UUID | None
    entry_id: uuid.UUID | None
    reveal_id: uuid.UUID | None = Field(description="a clue's reveal")
    words: str
    planned_chapter: int | None = Field(description="canon's planned first_shown_chapter")
    first_shown_in_text: int | None = Field(description="the first chapter (up to this one) whose text shows it")
    planted_in: int | None
    paid_off_in: int | None
    status: Literal["open", "overdue", "never-planted", "paid-off", "to-come", "untraceable"]


class PromisesOut(Schema):
    chapter: int
    chapters: int
    chapters_with_text: list[int]
    items: list[PromiseOut]
    open: list[PromiseOut]
    overdue: list[PromiseOut]
    never_planted: list[PromiseOut]
    paid_off: list[PromiseOut]
    to_come: list[PromiseOut]
    untraceable: list[PromiseOut]


@router.get(
    "/books/{book_id}/promises",
    response={200: PromisesOut, **ERRORS},
    summary="Reader promises as of a chapter: what is open, overdue, never planted and paid off",
)
def promises_get(request: HttpRequest, book_id: uuid.UUID, filters: Query[PromisesFilter]):
    return promises_report(_access(request, book_id, Cap.BOOK_READ), filters.chapter)
