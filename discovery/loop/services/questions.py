"""Open questions: the only way lenses ask each other things.

Raise (any loop writer), route (the controller sends it to a discipline), resolve
(a resolution cites its referent, which must exist: ``artifact:<slug>``,
``trace:<node id>``, ``decision:<sequence>``, ``question:<id>`` or ``node:<id>``),
surface (the controller puts it before the author).

Value conflicts and conflicts with series canon are the author's to settle (seed 002): only the author,
as herself, resolves one, and her resolution is a decision-log row. A lens or the controller may raise
and surface them, and route them only to the author. Until the author settles one it is a risk trigger
at G1 and blocks G2 (``gates``).
"""

from __future__ import annotations

import uuid

from django.db import transaction

from approvals.models import DecisionLogEntry
from approvals.services import decision_log_append
from discovery.access import BookAccess, Cap, refusal
from discovery.signals import person_acted
from novelgraph.core.errors import Conflict, Invalid, NotFound

from ..models import (
    BlackboardArtifact,
    OpenQuestion,
    PlanNode,
    QuestionStatus,
    RosterEntry,
    TraceNode,
)
from ..requirements import AUTHORS_TO_SETTLE
from ..schemas import QuestionIn, QuestionResolveIn, RouteIn
from .base import controller_book, lens_book, lock_meta, refresh


def _discipline(value: str, field: str) -> str:
    if value not in {"author", "sol"} and not RosterEntry.objects.filter(slug=value).exists():
        raise Invalid(f"unknown discipline {value!r}: name a roster entry, sol or author", field=field)
    return value


def question_raise(*, access: BookAccess, payload: QuestionIn) -> OpenQuestion:
    book, role = lens_book(access)
    kind, text = payload.kind, payload.question
    target = _discipline(payload.target_discipline, "target_discipline")
    with transaction.atomic():
        meta = lock_meta(book)
        q = OpenQuestion.objects.create(
            book=book,
            kind=kind,
            raised_by=role,
            target_discipline=target,
            question=text,
            round=meta.round,
            untrusted=role in {"terra", "luna"},
        )
        refresh(meta)
        return q


def _question(book, question_id) -> OpenQuestion:
    q = OpenQuestion.objects.select_for_update().filter(book=book, pk=question_id).first()
    if q is None:
        raise NotFound("question not found")
    return q


def question_route(*, access: BookAccess, question_id, payload: RouteIn) -> OpenQuestion:
    book, _ = controller_book(access)
    target = _discipline(payload.target_discipline, "target_discipline")
    with transaction.atomic():
        meta = lock_meta(book)
        q = _question(book, question_id)
        if q.status == QuestionStatus.RESOLVED:
            raise Conflict("the question is already resolved", code="resolved")
        if q.kind in AUTHORS_TO_SETTLE and target != "author":
            raise Invalid(f"a {q.kind} is the author's to settle: route it to author", field="target_discipline")
        q.status = QuestionStatus.ROUTED
        q.target_discipline = target
        q.save()
        refresh(meta)
        return q


def referent_exists(book, ref: str) -> bool:
    kind, _, value = (ref or "").partition(":")
    if not value:
        return False
    if kind == "artifact":
        return BlackboardArtifact.objects.filter(book=book, slug=value).exists()
    if kind == "trace":
        return TraceNode.objects.filter(book=book, node_id=value).exists()
    if kind == "decision":
        return value.isdigit() and DecisionLogEntry.objects.filter(book=book, sequence=int(value)).exists()
    if kind in {"question", "node"}:
        try:
            pk = uuid.UUID(value)
        except ValueError:
            return False
        model = OpenQuestion if kind == "question" else PlanNode
        return model.objects.filter(book=book, pk=pk).exists()
    return False


def question_resolve(*, access: BookAccess, question_id, payload: QuestionResolveIn) -> OpenQuestion:
    book, role = lens_book(access)
    text, cites = payload.resolution, payload.cites
    with transaction.atomic():
        meta = lock_meta(book)
        q = _question(book, question_id)
        if q.status == QuestionStatus.RESOLVED:
            raise Conflict("the question is already resolved", code="resolved")
        if q.kind in AUTHORS_TO_SETTLE and not access.is_author:
            raise refusal(access.role, Cap.DECIDE, f"a {q.kind} is the author's to settle; surface it to her")
        if not referent_exists(book, cites):
            raise Invalid(
                "a resolution cites what settles it: artifact:<slug>, trace:<id>, decision:<n>, "
                "question:<id> or node:<id> of this book",
                field="cites",
            )
        q.status = QuestionStatus.RESOLVED
        q.resolution = text
        q.resolution_ref = cites
        q.resolved_by = f"author:{access.user.get_username()}" if access.is_author else role
        q.save()
        if q.kind in AUTHORS_TO_SETTLE:
            decision_log_append(
                book=book,
                decision="approve",
                subject_type="loop-question",
                subject_id=q.pk,
                rationale=text,
                ratified_by_user=access.user,
                gate=meta.gate,
                detail={"kind": q.kind, "question": q.question[:500], "cites": cites, "settled": True},
            )
        refresh(meta)
    if access.is_author or access.role in ("author", "editor"):
        # Her answer may be what the loop waited for: Sol takes the next step (when the book lets him).
        person_acted.send(sender=OpenQuestion, book=book, user=access.user, act="answer-question")
    return q


def question_surface(*, access: BookAccess, question_id) -> OpenQuestion:
    book, _ = controller_book(access)
    with transaction.atomic():
        meta = lock_meta(book)
        q = _question(book, question_id)
        if q.status == QuestionStatus.RESOLVED:
            raise Conflict("the question is already resolved", code="resolved")
        q.status = QuestionStatus.SURFACED
        q.target_discipline = "author"
        q.save()
        refresh(meta)
        return q
