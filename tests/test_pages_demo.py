"""`manage.py demo`: the demo mystery, made through the services, and idempotent."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.loop.models import Candidate, LoopMeta, OpenQuestion, PlanNode
from discovery.loop.services import trace_lint
from discovery.models import (
    Book,
    ContextDossier,
    KnowledgeClaim,
    ScratchpadEntry,
    Series,
    StoryCharter,
    ThrustCandidate,
    Turn,
)
from library.models import ResearchItem

pytestmark = pytest.mark.django_db


def _counts() -> dict:
    models = [
        Book,
        Series,
        Turn,
        ScratchpadEntry,
        ThrustCandidate,
        StoryCharter,
        KnowledgeClaim,
        ResearchItem,
        Approval,
        DecisionLogEntry,
        ContextDossier,
        PlanNode,
        Candidate,
        OpenQuestion,
        get_user_model(),
    ]
    return {m.__name__: m.objects.count() for m in models}


def test_demo_builds_a_mystery_in_mid_discovery():
    out = StringIO()
    call_command("demo", stdout=out)
    text = out.getvalue()
    assert "author / novelgraph-author" in text and "editor / novelgraph-editor" in text

    book = Book.objects.get(title="The Lighthouse Letter")
    assert book.owner.username == "author" and list(book.editors.values_list("username", flat=True)) == ["editor"]
    entries = ScratchpadEntry.objects.filter(session__book=book)
    for role in ("sol", "terra", "luna"):
        kinds = set(entries.filter(agent_role=role).values_list("kind", flat=True))
        assert kinds == {"observation", "hypothesis", "question", "contradiction", "alternative", "digest"}, role
    assert all(e.source_refs for e in entries)
    assert Turn.objects.filter(session__book=book, observations__isnull=False).distinct().count() == 3
    assert ThrustCandidate.objects.filter(session__book=book).count() == 3
    charter = StoryCharter.objects.get(book=book)
    assert charter.status == "proposed" and charter.approval.status == "pending"
    claims = KnowledgeClaim.objects.all()
    assert claims.filter(status="proposed", base__scope="series").count() == 1
    assert claims.filter(status="approved").count() == 3
    assert Approval.objects.filter(book=book, kind="canon-promotion", status="pending").count() == 1
    assert sorted(ResearchItem.objects.filter(book=book).values_list("status", flat=True)) == ["admitted", "pending"]
    assert set(ContextDossier.objects.filter(book=book).values_list("agent_role", flat=True)) == {"sol", "luna"}

    meta = LoopMeta.objects.get(book=book)
    assert meta.gate == "G1.5"
    assert PlanNode.objects.filter(book=book).count() == 3
    assert Candidate.objects.filter(node__book=book).count() == 3
    assert OpenQuestion.objects.filter(book=book).count() == 2
    findings = trace_lint(book, strict=False).findings
    assert [(f["code"], f["nodes"]) for f in findings] == [("orphan", ["subplot-harbour"])]

    log = DecisionLogEntry.objects.filter(book=book)
    assert log.count() >= 3
    assert decision_log_verify(book).ok is True


def test_running_the_demo_twice_duplicates_nothing():
    call_command("demo", stdout=StringIO())
    before = _counts()
    out = StringIO()
    call_command("demo", stdout=out)
    assert _counts() == before
    assert "already exists; nothing duplicated" in out.getvalue()


def test_the_demo_accounts_can_log_in():
    call_command("demo", stdout=StringIO())
    assert Client().login(username="author", password="novelgraph-author")
    assert Client().login(username="editor", password="novelgraph-editor")


def test_if_empty_leaves_a_database_with_books_alone(author, book):
    out = StringIO()
    call_command("demo", "--if-empty", stdout=out)
    assert not Book.objects.filter(title="The Lighthouse Letter").exists()
    assert "was not loaded" in out.getvalue()
