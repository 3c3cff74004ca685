"""The manuscript (issue 28): codex entries, chapters, chapter text and its revisions, and settling the
continuity check's findings. Only the book's author writes here; agents read, and Luna's check (in the agents'
floor) files findings through ``findings_record``."""

from __future__ import annotations

import difflib
import io
import re
from typing import Any

import docx  # python-docx, pinned in requirements.txt
from django.db import IntegrityError, transaction
from django.db.models import Max

from approvals.models import ApprovalKind, Reversibility, Verdict
from approvals.services import approval_request, decision_log_append, require_rationale
from approvals.subjects import PROPOSAL_VERDICTS, Decision, SubjectHandler
from novelgraph.core.digest import fingerprint
from novelgraph.core.errors import Conflict, Forbidden, Invalid, NotFound
from novelgraph.core.roles import AgentRole
from novelgraph.core.schemas import text_fault
from novelgraph.core.signals import book_event

from ..access import BookAccess, Cap
from ..models import (
    Chapter,
    ChapterRevision,
    CodexEntry,
    ContinuityFinding,
    EntryStatus,
    FindingKind,
    FindingStatus,
    KnowledgeClaim,
)
from ..schemas import FindingsIn
from .claims import claim_for_book, claim_propose, claim_review_open, revision_of

FINDING_SUBJECT = "continuity-finding"
FINDINGS_ANNOUNCED = 100  # findings listed in one continuity-finding event
ENTRY_SUBJECT = "codex-entry"
WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def word_count(text: str) -> int:
    return len(WORD.findall(text))


# --- Codex entries ---------------------------------------------------------------------------------------------


def _clean_aliases(name: str, aliases: list[str]) -> list[str]:
    seen, out = {name.casefold()}, []
    for alias in aliases:
        alias = " ".join(alias.split())
        if alias and alias.casefold() not in seen:
            seen.add(alias.casefold())
            out.append(alias)
    return out


def _refuse_taken_names(access: BookAccess, names: list[str], *, but: CodexEntry | None = None) -> None:
    """A name or alias names one entry: one in the codex or proposed (a rejected proposal's names are free)."""
    wanted = {n.casefold(): n for n in names}
    taken = CodexEntry.objects.filter(book=access.book).exclude(status=EntryStatus.REJECTED)
    for entry in taken.exclude(pk=getattr(but, "pk", None)):
        for known in entry.names:
            if known.casefold() in wanted:
                raise Invalid(f"“{wanted[known.casefold()]}” already names the entry “{entry.name}”", field="aliases")


def entry_create(*, access: BookAccess, name: str, kind: str, aliases: list[str]) -> CodexEntry:
    access.require_author()
    name = " ".join(name.split())
    if not name:
        raise Invalid("an entry needs a name", field="name")
    aliases = _clean_aliases(name, aliases)
    try:
        with transaction.atomic():
            _refuse_taken_names(access, [name, *aliases])
            return CodexEntry.objects.create(book=access.book, name=name, kind=kind, aliases=aliases)
    except IntegrityError as error:
        raise Invalid(f"“{name}” already names an entry", field="name") from error


def entry_propose(*, access: BookAccess, name: str, kind: str, aliases: list[str], note: str = "") -> CodexEntry:
    """An agent proposes an entry (canon:propose): it waits, proposed, for the author's verdict in her inbox, and
    counts for nothing (the continuity check's names included) until she approves it. Its names must be free."""
    if not access.is_agent:
        raise Forbidden("the author's entries go straight into the codex; an agent proposes them", code="not_agent")
    access.require(Cap.CANON_PROPOSE, why="proposing a codex entry")
    name = " ".join(name.split())
    if not name:
        raise Invalid("an entry needs a name", field="name")
    aliases = _clean_aliases(name, aliases)
    try:
        with transaction.atomic():
            _refuse_taken_names(access, [name, *aliases])
            entry = CodexEntry.objects.create(
                book=access.book,
                name=name,
                kind=kind,
                aliases=aliases,
                created_by=access.role,
                status=EntryStatus.PROPOSED,
            )
            approval_request(
                book=access.book,
                kind=ApprovalKind.CODEX_ENTRY,
                subject_type=ENTRY_SUBJECT,
                subject_id=entry.pk,
                summary=f"A codex entry: {name}" + (f" ({', '.join(aliases)})" if aliases else ""),
                requested_by_role=access.role,
                requested_by_user=access.user,
                note=note,
            )
            return entry
    except IntegrityError as error:
        raise Invalid(f"“{name}” already names an entry", field="name") from error


def entry_add(*, access: BookAccess, name: str, kind: str, aliases: list[str]) -> CodexEntry:
    """``POST .../codex/entries``: the author's entry goes into the codex; an agent's is proposed."""
    if access.is_agent:
        return entry_propose(access=access, name=name, kind=kind, aliases=aliases)
    return entry_create(access=access, name=name, kind=kind, aliases=aliases)


def entry_from_finding(*, access: BookAccess, finding_id: Any) -> CodexEntry:
    """The author turns a not-in-canon finding's name into an entry of hers (unsorted, straight into the
    codex); the next check of the chapter no longer finds the name, and the finding closes."""
    access.require_author()
    with transaction.atomic():
        finding = finding_for_book(access, finding_id)
        if finding.kind != FindingKind.NOT_IN_CANON:
            raise Invalid("only a name canon does not know becomes an entry", field="finding_id")
        if finding.status != FindingStatus.OPEN:
            raise Conflict(f"this finding is already settled ({finding.get_status_display()})", code="settled")
        return entry_create(access=access, name=finding.quote, kind=CodexEntry.Kind.UNSORTED, aliases=[])


def _entry_row(approval) -> dict | None:
    return CodexEntry.objects.filter(pk=approval.subject_id).values("id", "book_id", "name", "kind", "aliases").first()


def entry_digest(approval) -> str:
    """The proposed entry's names and kind: the author editing them before her verdict makes the request lapse."""
    return fingerprint(_entry_row(approval))


def entry_apply(decision: Decision) -> None:
    """Approve: the entry is in the codex (its names still free of the codex's other entries); reject: it stays
    in history, rejected, and its names are free again."""
    entry = CodexEntry.objects.select_for_update().get(pk=decision.approval.subject_id)
    if entry.status != EntryStatus.PROPOSED:
        raise Conflict(f"this entry is already {entry.get_status_display().lower()}", code="not_pending")
    decision.detail["entry"] = {"name": entry.name, "kind": entry.kind, "aliases": entry.aliases}
    if decision.verdict == Verdict.APPROVE:
        _refuse_taken_names(decision.access, entry.names, but=entry)
        entry.status = EntryStatus.APPROVED
    else:
        entry.status = EntryStatus.REJECTED
    entry.save(update_fields=["status", "updated_at"])


def entry_describe(approval) -> dict:
    entry = CodexEntry.objects.filter(pk=approval.subject_id).first()
    if entry is None:
        return {"type": ENTRY_SUBJECT, "id": approval.subject_id, "exists": False}
    return {
        "type": ENTRY_SUBJECT,
        "id": str(entry.pk),
        "exists": True,
        "title": f"A codex entry: {entry.name}",
        "status": entry.status,
        "fields": {
            "Name": entry.name,
            "Kind": entry.get_kind_display(),
            "Other names": ", ".join(entry.aliases) or "none",
            "Proposed by": entry.created_by.capitalize(),
            "Status": entry.get_status_display(),
        },
    }


ENTRY_HANDLER = SubjectHandler(
    kind=ApprovalKind.CODEX_ENTRY,
    verdicts=PROPOSAL_VERDICTS,
    digest=entry_digest,
    apply=entry_apply,
    describe=entry_describe,
)


def entry_for_book(access: BookAccess, entry_id: Any, *, field: str = "entry") -> CodexEntry:
    entry = CodexEntry.objects.filter(book=access.book, pk=entry_id).first()
    if entry is None:
        raise NotFound("entry not found", field=field)
    return entry


def entry_edit(
    *, access: BookAccess, entry_id: Any, name: str | None, kind: str | None, aliases: list[str] | None
) -> CodexEntry:
    access.require_author()
    with transaction.atomic():
        entry = entry_for_book(access, entry_id)
        if name is not None:
            name = " ".join(name.split())
            if not name:
                raise Invalid("an entry needs a name", field="name")
            entry.name = name
        if kind is not None:
            entry.kind = kind
        entry.aliases = _clean_aliases(entry.name, entry.aliases if aliases is None else aliases)
        _refuse_taken_names(access, entry.names, but=entry)
        entry.save()
        return entry


# --- Chapters ------------------------------------------------------------------------------------------------


def chapter_get(access: BookAccess, number: int) -> Chapter:
    chapter = Chapter.objects.filter(book=access.book, number=number).first()
    if chapter is None:
        raise NotFound("chapter not found", field="number")
    return chapter


def _renumber(book, ordered: list[Chapter]) -> None:
    """Write ``ordered`` as chapters 1..n (two steps, so the unique number never collides midway)."""
    top = (Chapter.objects.filter(book=book).aggregate(top=Max("number"))["top"] or 0) + len(ordered) + 1
    for offset, chapter in enumerate(ordered):
        Chapter.objects.filter(pk=chapter.pk).update(number=top + offset)
    for number, chapter in enumerate(ordered, start=1):
        Chapter.objects.filter(pk=chapter.pk).update(number=number)
        chapter.number = number


def chapter_add(*, access: BookAccess, title: str, spec: str = "", number: int | None = None) -> Chapter:
    """A new chapter, at the end or at ``number`` (the chapters from there move one on). Also before hand-off."""
    access.require_author()
    title = " ".join(title.split())
    if not title:
        raise Invalid("a chapter needs a title", field="title")
    with transaction.atomic():
        ordered = list(Chapter.objects.select_for_update(of=("self",)).filter(book=access.book).order_by("number"))
        place = len(ordered) + 1 if number is None else number
        if place > len(ordered) + 1:  # the schema keeps it at 1 or more
            raise Invalid(f"number must be between 1 and {len(ordered) + 1}", field="number")
        chapter = Chapter.objects.create(book=access.book, number=len(ordered) + 1000, title=title, spec=spec)
        ordered.insert(place - 1, chapter)
        _renumber(access.book, ordered)
        return chapter


def chapter_edit(*, access: BookAccess, number: int, title: str | None, move_to: int | None) -> Chapter:
    """Retitle a chapter, or move it to ``move_to`` (the others close up around it)."""
    access.require_author()
    with transaction.atomic():
        ordered = list(Chapter.objects.select_for_update(of=("self",)).filter(book=access.book).order_by("number"))
        chapter = next((c for c in ordered if c.number == number), None)
        if chapter is None:
            raise NotFound("chapter not found", field="number")
        if title is not None:
            title = " ".join(title.split())
            if not title:
                raise Invalid("a chapter needs a title", field="title")
            chapter.title = title
            chapter.save(update_fields=["title", "updated_at"])
        if move_to is not None and move_to != number:
            if move_to > len(ordered):  # the schema keeps it at 1 or more
                raise Invalid(f"number must be between 1 and {len(ordered)}", field="number")
            ordered.remove(chapter)
            ordered.insert(move_to - 1, chapter)
            _renumber(access.book, ordered)
        return chapter


# --- Chapter text --------------------------------------------------------------------------------------------


def chapter_text_store(*, access: BookAccess, number: int, text: str) -> ChapterRevision:
    """A new revision of the chapter's text (append-only). The same text as the latest stores nothing new.
    Open findings the new text no longer shows close as fixed."""
    access.require_author()
    with transaction.atomic():
        chapter = (
            Chapter.objects.select_for_update(of=("self",))
            .filter(book=access.book, number=number)
            .order_by("pk")
            .first()
        )
        if chapter is None:
            raise NotFound("chapter not found", field="number")
        latest = chapter.revisions.order_by("-number").first()
        if latest is not None and latest.text == text:
            return latest
        revision = ChapterRevision.objects.create(
            chapter=chapter,
            number=(latest.number + 1) if latest else 1,
            text=text,
            words=word_count(text),
            created_by=access.role,
        )
        return revision


def revision_get(access: BookAccess, number: int, revision: int) -> ChapterRevision:
    found = ChapterRevision.objects.filter(chapter__book=access.book, chapter__number=number, number=revision).first()
    if found is None:
        raise NotFound("revision not found", field="revision")
    return found


def revision_compare(*, access: BookAccess, number: int, older: int, newer: int) -> dict[str, Any]:
    """Two revisions of a chapter side by side: the words added and removed (a word-level diff) and the
    line diff of their text. Any two revisions compare, in either order."""
    a, b = revision_get(access, number, older), revision_get(access, number, newer)
    words_a, words_b = WORD.findall(a.text), WORD.findall(b.text)
    added = removed = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, words_a, words_b, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            removed += i2 - i1
        if op in ("replace", "insert"):
            added += j2 - j1
    diff = list(
        difflib.unified_diff(
            a.text.splitlines(), b.text.splitlines(), f"revision {older}", f"revision {newer}", lineterm=""
        )
    )
    return {
        "chapter": number,
        "older": older,
        "newer": newer,
        "words_added": added,
        "words_removed": removed,
        "diff": diff,
    }


HEADING = re.compile(r"^(?:#{1,2}\s+(?P<md>.+?)\s*#*\s*$|(?P<plain>chapter\s+[\w-]+(?:\s*[:.\-–—]\s*.*)?)\s*$)", re.I)
CHAPTER_WORD = re.compile(r"^chapter\s+[\w-]+\s*(?:[:.\-–—]\s*)?", re.I)


def split_manuscript(text: str) -> list[tuple[str, str]]:
    """(title, text) per chapter, split at chapter headings: Markdown headings of level 1-2, or a line that
    starts with "Chapter". Text before the first heading belongs to no chapter and is dropped when blank."""
    parts: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        match = HEADING.match(line.strip())
        if match:
            heading = (match.group("md") or match.group("plain")).strip()
            title = CHAPTER_WORD.sub("", heading).strip() or heading
            parts.append((title, []))
        elif parts:
            parts[-1][1].append(line)
        elif line.strip():
            parts.append(("Untitled", [line]))
    return [(title, "\n".join(lines).strip("\n")) for title, lines in parts]


def docx_markdown(data: bytes) -> str:
    """A .docx as Markdown: heading paragraphs become headings, the rest paragraphs."""
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as error:  # a file python-docx cannot read is the author's input, not our fault
        raise Invalid("this file is not a Word document python-docx can read", field="file") from error
    lines = []
    for paragraph in document.paragraphs:
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        if style.lower().startswith(("heading 1", "heading 2", "title")):
            lines.append(f"# {paragraph.text.strip()}")
        else:
            lines.append(paragraph.text)
        lines.append("")
    return "\n".join(lines)


def manuscript_upload(*, access: BookAccess, filename: str, data: bytes) -> list[ChapterRevision]:
    """Upload a manuscript split at its chapter headings: chapter k of the file is chapter k of the book (made
    when missing, titled from the heading); each gets a new revision."""
    access.require_author()
    name = filename.lower()
    if name.endswith(".docx"):
        text = docx_markdown(data)
    elif name.endswith((".md", ".markdown", ".txt", ".text")):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise Invalid("the file is not UTF-8 text", field="file") from error
    else:
        raise Invalid("upload a Markdown (.md), plain-text (.txt) or Word (.docx) file", field="file")
    fault = text_fault(text)
    if fault:
        raise Invalid(f"file: {fault}", field="file")
    chapters = split_manuscript(text)
    if not chapters:
        raise Invalid("the file has no chapter text", field="file")
    stored = []
    with transaction.atomic():
        existing = {c.number: c for c in Chapter.objects.filter(book=access.book)}
        for number, (title, body) in enumerate(chapters, start=1):
            if number not in existing:
                Chapter.objects.create(book=access.book, number=number, title=title[:200])
            stored.append(chapter_text_store(access=access, number=number, text=body))
    return stored


# --- Findings -------------------------------------------------------------------------------------------------


def findings_record(*, access: BookAccess, number: int, payload: FindingsIn) -> list[ContinuityFinding]:
    """File what a check of ``revision`` found: Luna's task only (the continuity check). A finding already filed
    for this chapter (same key) that is open or settled is not filed again; an open one the revision no longer
    shows closes as fixed by it (the author's "fix the text").

    A check that files at least one new finding announces one ``continuity-finding`` book event (the webhooks
    listen) once it commits, listing those findings: one event per check, not per finding, so a chapter with
    many findings is one post to the author's integration, and a check that finds nothing new posts nothing."""
    if access.role != AgentRole.LUNA:
        raise Forbidden(f"a continuity finding is filed by luna, not {access.role}", code="not_yours")
    revision = revision_get(access, number, payload.revision)
    chapter = revision.chapter
    found = []
    for i, item in enumerate(payload.findings):
        if revision.text[item.span_start : item.span_end] != item.quote:
            raise Invalid("the quote is not the revision's text at its offsets", field=f"findings.{i}.quote")
        found.append(
            {
                **item.dict(exclude={"claim_ids", "entry_ids"}),
                "claim_ids": [str(c) for c in item.claim_ids],
                "entry_ids": [str(e) for e in item.entry_ids],
            }
        )
    with transaction.atomic():
        earlier: dict[str, ContinuityFinding] = {}
        for finding in (
            ContinuityFinding.objects.select_for_update(of=("self",)).filter(chapter=chapter).order_by("created_at")
        ):
            if finding.key not in earlier or earlier[finding.key].status == FindingStatus.FIXED:
                earlier[finding.key] = finding
        keys = {item["key"] for item in found}
        for finding in earlier.values():
            if finding.status == FindingStatus.OPEN and finding.key not in keys:
                finding.status = FindingStatus.FIXED
                finding.closed_by_revision = revision
                finding.save(update_fields=["status", "closed_by_revision", "updated_at"])
        made = []
        for item in found:
            same = earlier.get(item["key"])
            if same is not None and same.status != FindingStatus.FIXED:
                continue
            made.append(ContinuityFinding.objects.create(chapter=chapter, revision=revision, **item))
        if made:
            _announce_findings(access.book, revision, made)
        return made


def _announce_findings(book, revision: ChapterRevision, made: list[ContinuityFinding]) -> None:
    """``continuity-finding`` once the check's transaction commits: the chapter, the revision, how many were filed
    and the first ``FINDINGS_ANNOUNCED`` of them (the rest are on the chapter's page and ``GET .../findings``)."""
    payload = {
        "chapter": revision.chapter.number,
        "chapter_title": revision.chapter.title,
        "revision": revision.number,
        "count": len(made),
        "findings": [
            {
                "finding_id": str(f.pk),
                "kind": f.kind,
                "message": f.message[:1_000],
                "quote": f.quote[:1_000],
                "span_start": f.span_start,
                "span_end": f.span_end,
            }
            for f in made[:FINDINGS_ANNOUNCED]
        ],
    }
    transaction.on_commit(
        lambda: book_event.send(sender=ContinuityFinding, book=book, kind="continuity-finding", payload=payload)
    )


def finding_for_book(access: BookAccess, finding_id: Any) -> ContinuityFinding:
    rows = ContinuityFinding.objects.select_related("chapter").filter(chapter__book=access.book, pk=finding_id)
    found = rows.select_for_update(of=("self",)).order_by("pk").first()
    if found is None:
        raise NotFound("finding not found", field="finding_id")
    return found


def finding_settle(
    *, access: BookAccess, finding_id: Any, resolution: str, rationale: str = "", value: Any = None
) -> ContinuityFinding:
    """The author settles a finding: ``fix-text`` (it stays open until a later revision no longer shows it and
    the check closes it), ``intentional`` (with her rationale, logged), ``change-canon`` (a revision proposal of
    the claim it concerns, with ``value``, waiting in her Review as a pending approval: the normal approval flow)."""
    access.require_author()
    with transaction.atomic():
        finding = finding_for_book(access, finding_id)
        if finding.status != FindingStatus.OPEN:
            raise Conflict(f"this finding is already settled ({finding.get_status_display()})", code="settled")
        if resolution == "fix-text":
            return finding
        if resolution == "intentional":
            rationale = require_rationale(rationale)
            finding.status = FindingStatus.INTENTIONAL
            finding.rationale = rationale
            finding.save(update_fields=["status", "rationale", "updated_at"])
            decision_log_append(
                book=access.book,
                decision=Verdict.APPROVE,
                subject_type=FINDING_SUBJECT,
                subject_id=finding.pk,
                rationale=rationale,
                ratified_by_user=access.user,
                reversibility_class=Reversibility.REVERSIBLE,
                detail={
                    "effect": {
                        "continuity": {
                            "intentional": finding.kind,
                            "chapter": finding.chapter.number,
                            "quote": finding.quote[:300],
                        }
                    }
                },
            )
            return finding
        if resolution == "change-canon":
            if not finding.claim_ids:
                raise Invalid("this finding concerns no claim; add an entry instead", field="resolution")
            if value is None or value == "":
                raise Invalid("say the claim's new value", field="value")
            old = claim_for_book(access, finding.claim_ids[0])
            if old.status != KnowledgeClaim.Status.APPROVED:
                raise Conflict("the claim this finding concerns is no longer canon", code="not_canon")
            proposal = claim_propose(access=access, base=old.base, payload=revision_of(access, old, value))
            claim_review_open(
                access=access,
                claim=proposal,
                note=f"From a continuity finding in chapter {finding.chapter.number}: “{finding.quote[:200]}”",
            )
            finding.status = FindingStatus.CANON_CHANGE
            finding.proposal = proposal
            finding.save(update_fields=["status", "proposal", "updated_at"])
            return finding
        raise Invalid("resolution is one of fix-text, intentional, change-canon", field="resolution")
