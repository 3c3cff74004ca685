"""factory-boy factories for every model, shared by all tests (and the benchmarks)."""

from __future__ import annotations

import uuid

import factory
from django.contrib.auth import get_user_model
from django.utils import timezone
from factory.django import DjangoModelFactory

from approvals.models import Approval
from discovery.agents.models import AgentRun
from discovery.models import (
    Book,
    Chapter,
    ContextDossier,
    DiscoverySession,
    Handoff,
    KnowledgeBase,
    KnowledgeClaim,
    KnowledgeLink,
    Observation,
    ScratchpadEntry,
    Series,
    StoryCharter,
    ThrustCandidate,
    Turn,
)
from library.models import KnowledgeChunk, KnowledgeSource, ResearchItem

PASSWORD = "correct-horse-battery"


class UserFactory(DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.test")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class SeriesFactory(DjangoModelFactory):
    class Meta:
        model = Series

    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda n: f"Series {n}")
    premise = "A run of cases in a drowned city."
    publication_target = "2027"


class BookFactory(DjangoModelFactory):
    class Meta:
        model = Book
        skip_postgeneration_save = True

    owner = factory.SubFactory(UserFactory)
    series = factory.SubFactory(SeriesFactory, owner=factory.SelfAttribute("..owner"))
    title = factory.Sequence(lambda n: f"Book {n}")
    slug = factory.Sequence(lambda n: f"book-{n}-{uuid.uuid4().hex[:6]}")
    premise = "A lighthouse keeper finds a letter addressed to her future self."
    genre_pack = "mystery"
    planned_order = 1

    @factory.post_generation
    def editors(obj, create, extracted, **kwargs):
        if create and extracted:
            obj.editors.set(extracted)


class ChapterFactory(DjangoModelFactory):
    class Meta:
        model = Chapter

    book = factory.SubFactory(BookFactory)
    number = factory.Sequence(lambda n: n + 1)
    title = factory.Sequence(lambda n: f"Chapter {n + 1}")


class DiscoverySessionFactory(DjangoModelFactory):
    class Meta:
        model = DiscoverySession

    book = factory.SubFactory(BookFactory)


class TurnFactory(DjangoModelFactory):
    class Meta:
        model = Turn

    session = factory.SubFactory(DiscoverySessionFactory)
    ordinal = factory.Sequence(lambda n: n + 1)
    role = "author"
    content = "I want the reader to close the book uneasy about who they trusted."


class ObservationFactory(DjangoModelFactory):
    class Meta:
        model = Observation

    turn = factory.SubFactory(TurnFactory)
    session = factory.SelfAttribute("turn.session")
    key = "reader-aftertaste"
    value = "unease about trust"
    provenance = "author-stated"


class ScratchpadEntryFactory(DjangoModelFactory):
    class Meta:
        model = ScratchpadEntry

    id = factory.LazyFunction(uuid.uuid4)
    session = factory.SubFactory(DiscoverySessionFactory)
    sequence = factory.Sequence(lambda n: n + 1)
    agent_role = "terra"
    kind = "hypothesis"
    content = "The keeper's unreliability could be the engine of the book."
    created_at = factory.LazyFunction(timezone.now)


class ThrustCandidateFactory(DjangoModelFactory):
    class Meta:
        model = ThrustCandidate

    session = factory.SubFactory(DiscoverySessionFactory)
    proposed_by = "terra"
    kind = "core"
    title = factory.Sequence(lambda n: f"Thrust {n}")
    main_thrust = "A keeper must prove a drowning was murder."
    character_engine = "Her need to be believed versus her habit of lying."
    central_conflict = "The harbour master wants the case closed."
    reader_promise = ["a fair-play puzzle"]


class StoryCharterFactory(DjangoModelFactory):
    class Meta:
        model = StoryCharter

    book = factory.SubFactory(BookFactory)
    version = factory.Sequence(lambda n: n + 1)
    proposed_by = "sol"
    content = factory.LazyFunction(
        lambda: {
            "main_thrust": "A keeper must prove a drowning was murder.",
            "reader_promise": ["a fair-play puzzle"],
            "protagonist": {"name": "Mara", "want": "to be believed"},
            "central_conflict": "The harbour master wants the case closed.",
        }
    )


class KnowledgeBaseFactory(DjangoModelFactory):
    class Meta:
        model = KnowledgeBase

    scope = "book"
    owner_id = factory.LazyFunction(lambda: str(uuid.uuid4()))
    name = factory.Sequence(lambda n: f"Knowledge base {n}")


class KnowledgeClaimFactory(DjangoModelFactory):
    class Meta:
        model = KnowledgeClaim

    base = factory.SubFactory(KnowledgeBaseFactory)
    subject = "Mara"
    predicate = "fears"
    value = "deep water"
    provenance = "agent-proposed"
    proposed_by = "sol"


class KnowledgeLinkFactory(DjangoModelFactory):
    class Meta:
        model = KnowledgeLink

    book = factory.SubFactory(BookFactory)
    base = factory.SubFactory(KnowledgeBaseFactory)
    relation = "series-canon"


class ContextDossierFactory(DjangoModelFactory):
    class Meta:
        model = ContextDossier

    id = factory.LazyFunction(uuid.uuid4)
    book = factory.SubFactory(BookFactory)
    agent_role = "luna"
    content = factory.LazyFunction(dict)
    created_at = factory.LazyFunction(timezone.now)


class HandoffFactory(DjangoModelFactory):
    class Meta:
        model = Handoff

    book = factory.SubFactory(BookFactory)
    session = factory.SubFactory(DiscoverySessionFactory, book=factory.SelfAttribute("..book"))
    from_role = "sol"
    to_role = "luna"
    decision = "Which named places recur in the author's turns?"
    dossier = factory.SubFactory(ContextDossierFactory, book=factory.SelfAttribute("..book"))


class KnowledgeSourceFactory(DjangoModelFactory):
    class Meta:
        model = KnowledgeSource

    title = factory.Sequence(lambda n: f"Craft notes {n}")
    origin = "test-origin"
    license_note = "CC BY 4.0"
    version = "1.0"


class KnowledgeChunkFactory(DjangoModelFactory):
    class Meta:
        model = KnowledgeChunk

    source = factory.SubFactory(KnowledgeSourceFactory)
    content = "Tension rises when the character's goal meets an opposing force."
    topics = factory.LazyFunction(lambda: ["tension", "conflict"])
    applicability = factory.LazyFunction(lambda: ["general"])
    citation = factory.Sequence(lambda n: f"Craft notes, section {n}")


class ResearchItemFactory(DjangoModelFactory):
    class Meta:
        model = ResearchItem

    book = factory.SubFactory(BookFactory)
    proposed_by = "sol"
    url = "https://example.org/tides"
    title = "Tide tables of the northern coast"
    excerpt = "High water at 06:12."
    claim = "High tide that morning was at 06:12."
    citation = "Coastal Almanac 2025, p. 14"


class ApprovalFactory(DjangoModelFactory):
    class Meta:
        model = Approval

    book = factory.SubFactory(BookFactory)
    kind = "story-charter"
    subject_type = "charter"
    subject_id = factory.LazyFunction(lambda: str(uuid.uuid4()))
    subject_digest = "0" * 64
    summary = "Charter v1"
    requested_by_role = "sol"


class AgentRunFactory(DjangoModelFactory):
    """A recorded run (queued); real runs come from ``discovery.agents.services.agent_run_start``."""

    class Meta:
        model = AgentRun

    book = factory.SubFactory(BookFactory)
    role = "luna"
    task = "contradictions"
    provider = "offline"
    model = "rules-1"
    requested_by_role = "author"
