"""Blackboard slots and lens reviews.

Rules: a lens (Terra, Luna) writes ``draft`` or ``proposed`` slots only; asking to
write ``ratified`` is refused with 403 for everyone (a slot becomes ratified only
through the author's verdict at a gate), and ``stale``/``rejected`` come only from
the cascade (422). The version only rises. Text is stored as data: nothing in a
slot's content, a question or a review is ever read as an instruction.
"""

from __future__ import annotations

from django.db import transaction

from discovery.access import BookAccess
from discovery.selectors import VIEW_PAGE
from novelgraph.core.errors import Conflict, Forbidden, Invalid, NotFound
from novelgraph.core.pagination import rest_link

from ..models import (
    ArtifactStatus,
    BlackboardArtifact,
    LensRerun,
    LensReview,
    RerunStatus,
    RosterEntry,
)
from ..roster import lens_role_problem
from ..schemas import ArtifactIn, ReviewIn
from .base import lens_book, lock_meta, refresh

WRITABLE = {ArtifactStatus.DRAFT, ArtifactStatus.PROPOSED}
AGENTS = {"sol", "terra", "luna"}


def artifact_write(*, access: BookAccess, payload: ArtifactIn) -> BlackboardArtifact:
    """Create a slot, or write a new version of it (version + 1, back to ``proposed``)."""
    book, role = lens_book(access)
    slug, type, status, lens, parent = payload.slug, payload.type, payload.status, payload.lens, payload.parent
    content, path, untrusted, data_class = payload.content, payload.path, payload.untrusted, payload.data_class
    if status == ArtifactStatus.RATIFIED:
        raise Forbidden(
            f"{role} lacks the right to ratify: a slot becomes ratified only through the author's verdict at a gate",
            code="ratify_refused",
            field="status",
        )
    if status not in WRITABLE:
        raise Invalid("status must be draft or proposed; stale and rejected come from the cascade", field="status")
    if lens and not RosterEntry.objects.filter(slug=lens).exists():
        raise Invalid(f"unknown lens {lens!r}: the roster names the lenses", field="lens")
    with transaction.atomic():
        meta = lock_meta(book)
        parent_obj = None
        if parent:
            parent_obj = BlackboardArtifact.objects.filter(book=book, slug=parent).first()
            if parent_obj is None:
                raise Invalid(f"no slot {parent!r} to be the parent", field="parent")
        existing = BlackboardArtifact.objects.select_for_update(of=("self",)).filter(book=book, slug=slug).first()
        flagged = role in {"terra", "luna"} if untrusted is None else bool(untrusted)
        if existing is None:
            artifact = BlackboardArtifact.objects.create(
                book=book,
                slug=slug,
                type=type,
                status=status,
                produced_by=role,
                lens=lens,
                path=path,
                parent=parent_obj,
                round_last_touched=meta.round,
                untrusted=flagged,
                data_class=data_class,
                content=content,
            )
        elif existing.status == ArtifactStatus.RATIFIED:
            # A ratified version stays current until the author ratifies a successor at a gate: the new
            # version is proposed BESIDE it (``successor``), never over it.
            if existing.type != type:
                raise Invalid(f"slot {slug!r} is of type {existing.type}", field="type")
            artifact = existing
            artifact.successor = {
                "version": existing.version + 1,
                "status": ArtifactStatus.PROPOSED,
                "content": _keep_constraints(existing, content),
                "produced_by": role,
                "lens": lens or existing.lens,
                "round": meta.round,
                "untrusted": flagged,
                "data_class": data_class,
            }
            artifact.save(update_fields=["successor", "updated_at"])
        else:
            if existing.type != type:
                raise Invalid(f"slot {slug!r} is of type {existing.type}", field="type")
            existing.version += 1
            existing.status = status
            existing.content = _keep_constraints(existing, content)
            existing.produced_by = role
            existing.lens = lens or existing.lens
            existing.path = path or existing.path
            existing.parent = parent_obj or existing.parent
            existing.round_last_touched = meta.round
            existing.stale_reason = ""
            existing.untrusted = flagged
            existing.data_class = data_class
            existing.successor = {}
            existing.save()
            artifact = existing
        _settle_reruns(book, artifact)
        refresh(meta)
        return artifact


# The scope boundary's record of the author's constraints: the first ``VIEW_PAGE`` of them, how many there are,
# and the paged route with the rest (they all stay in the loop's meta and their decision-log rows).
RECORDED = ("constraints", "constraints_count", "constraints_rest")


def _keep_constraints(existing: BlackboardArtifact, content: dict) -> dict:
    """The author's recorded constraints in a slot (the scope boundary's) are never emptied or rewritten by
    a write: only the author's verdicts add them (``verdicts._record_constraint``)."""
    stored = existing.content if isinstance(existing.content, dict) else {}
    if not stored.get("constraints"):
        return content
    return {**content, **{key: stored[key] for key in RECORDED if key in stored}}


def boundary_recording(content: dict, item: dict, book_id) -> dict:
    """The scope boundary's content with one more recorded constraint, bounded: it names the first ``VIEW_PAGE``
    constraints; past that only ``constraints_count`` grows and ``constraints_rest`` links
    ``GET .../loop/constraints?kind=constraint`` from the next page (oldest first, as recorded)."""
    page = list(content.get("constraints") or [])
    count = int(content.get("constraints_count") or len(page)) + 1
    if len(page) < VIEW_PAGE:
        page.append(item)
    rest = None
    if count > VIEW_PAGE:
        rest = rest_link(f"books/{book_id}/loop/constraints", kind="constraint")
    return {**content, "constraints": page, "constraints_count": count, "constraints_rest": rest}


def ratify_successor(slot: BlackboardArtifact) -> bool:
    """The author ratified the slot at a gate: a waiting successor becomes the current, ratified version."""
    nxt = slot.successor or {}
    if not nxt:
        return False
    slot.version = max(int(nxt.get("version") or 0), slot.version + 1)
    slot.content = _keep_constraints(slot, nxt.get("content") or {})
    slot.produced_by = nxt.get("produced_by") or slot.produced_by
    slot.lens = nxt.get("lens") or slot.lens
    slot.untrusted = bool(nxt.get("untrusted"))
    slot.data_class = nxt.get("data_class") or slot.data_class
    slot.successor = {}
    return True


def _settle_reruns(book, artifact: BlackboardArtifact) -> None:
    for rerun in LensRerun.objects.select_for_update(of=("self",)).filter(book=book, status=RerunStatus.QUEUED):
        if artifact.slug in rerun.artifacts and (not artifact.lens or artifact.lens == rerun.lens):
            rerun.artifacts = [s for s in rerun.artifacts if s != artifact.slug]
            if not rerun.artifacts:
                rerun.status = RerunStatus.DONE
            rerun.save()


def rerun_done(*, access: BookAccess, rerun_id) -> LensRerun:
    """The lens that was queued reports its re-run finished (as the role the roster names for it).

    A re-run queued by the author's constraint or a cascade holds the next gate; no other role may clear it
    (writing the re-run's slots clears it too)."""
    book, role = lens_book(access)
    with transaction.atomic():
        meta = lock_meta(book)
        rerun = LensRerun.objects.select_for_update(of=("self",)).filter(book=book, pk=rerun_id).first()
        if rerun is None:
            raise NotFound("re-run not found")
        named = RosterEntry.objects.filter(slug=rerun.lens).values_list("agent_role", flat=True).first()
        if role not in {"author", named or role}:
            raise Forbidden(f"the {rerun.lens} re-run is reported done by {named}, not {role}", code="not_this_lens")
        rerun.status = RerunStatus.DONE
        rerun.save()
        refresh(meta)
        return rerun


def lens_review_record(*, access: BookAccess, payload: ReviewIn, untrusted: bool | None = None) -> LensReview:
    """A lens review at a gate: each finding resolved or deferred, with a reason. Zero findings is allowed
    (a required lens degrades in depth, never to nothing: the review itself must exist)."""
    book, role = lens_book(access)
    lens = payload.lens
    entry = RosterEntry.objects.filter(slug=lens, kind="lens").first()
    if entry is None:
        raise Invalid(f"unknown lens {lens!r}", field="lens")
    # Each review is filed by the lens the roster names for it, and that role must read what it checks.
    if role != entry.agent_role:
        raise Forbidden(
            f"the {lens} review is filed by {entry.agent_role or 'the role the roster names'}, not {role}",
            code="not_this_lens",
            field="lens",
        )
    problem = lens_role_problem(entry.slug, entry.agent_role)
    if problem:
        raise Conflict(problem, code="lens_cannot_read", field="lens")
    cleaned = [finding.model_dump(mode="json") for finding in payload.findings]
    with transaction.atomic():
        meta = lock_meta(book)
        review = LensReview.objects.create(
            book=book,
            lens=entry,
            gate=payload.gate,
            round=meta.round,
            reviewer_role=role,
            summary=payload.summary,
            findings=cleaned,
            untrusted=(role in {"terra", "luna"}) if untrusted is None else bool(untrusted),
        )
        refresh(meta)
        return review
