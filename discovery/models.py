"""Books and their discovery (seed 000): sessions, turns, observations, the
scratchpad, thrust candidates, story charters, knowledge bases and claims,
dossiers, handoffs, and the API keys that carry an agent's role.

Models hold data and what the database can check. Every write and rule lives in
``discovery.services``.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from novelgraph.core.db import AppendOnlyRecord, TimeStampedModel, choices_check, enum_check
from novelgraph.core.roles import ANY_ROLE, AgentRole, choices_of


class Provenance(models.TextChoices):
    AUTHOR_STATED = "author-stated", "Author stated"
    AGENT_INFERRED = "agent-inferred", "Agent inferred"
    LITERARY_GUIDANCE = "literary-guidance", "Literary guidance"
    AGENT_PROPOSED = "agent-proposed", "Agent proposed"


# --- Books ------------------------------------------------------------------


class Series(TimeStampedModel):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="series")
    title = models.CharField(max_length=200)
    premise = models.TextField(blank=True, max_length=20_000)
    publication_target = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name_plural = "series"
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title


class Book(TimeStampedModel):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="books")
    editors = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="edited_books")
    series = models.ForeignKey(Series, null=True, blank=True, on_delete=models.PROTECT, related_name="books")
    title = models.CharField(max_length=200)
    slug = models.SlugField(max_length=220, unique=True)
    premise = models.TextField(blank=True, max_length=20_000)
    genre_pack = models.CharField(max_length=100, blank=True)
    planned_order = models.PositiveIntegerField(null=True, blank=True)
    # After the author's turn or verdict, Sol takes the next step without a button (the cost bound still
    # pauses it). On by default; the buttons stay, for asking explicitly.
    agents_act = models.BooleanField(default=True)

    class Meta:
        ordering = ["series__title", "planned_order", "title"]

    def __str__(self) -> str:
        return self.title


class Chapter(TimeStampedModel):
    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="chapters")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    spec = models.TextField(blank=True)

    class Meta:
        ordering = ["book", "number"]
        constraints = [
            models.UniqueConstraint(fields=["book", "number"], name="chapter_unique_number_per_book"),
            models.CheckConstraint(condition=Q(number__gte=1), name="chapter_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.number}. {self.title}"


# --- Discovery sessions -------------------------------------------------------

OPENING_QUESTION = "What experience should remain with the reader after the final page?"


class DiscoverySessionStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    CHARTER_PROPOSED = "charter-proposed", "Charter proposed"
    APPROVED = "approved", "Approved"
    CLOSED = "closed", "Closed"


class DiscoverySession(TimeStampedModel):
    Status = DiscoverySessionStatus

    book = models.ForeignKey(Book, on_delete=models.PROTECT, related_name="sessions")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    current_question = models.TextField(default=OPENING_QUESTION)

    class Meta:
        ordering = ["-created_at"]
        constraints = [enum_check("status", DiscoverySessionStatus, "session_status_valid")]

    def __str__(self) -> str:
        return f"Discovery of {self.book} ({self.status})"


class SessionQuestion(AppendOnlyRecord, models.Model):
    """A question Sol put to the author, citing what prompted it. Append-only: the session's
    ``current_question`` is the newest; the earlier ones stay as the conversation's history."""

    append_only = "Questions put to the author are kept as they were asked."

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(DiscoverySession, on_delete=models.PROTECT, related_name="questions")
    sequence = models.PositiveIntegerField()
    question = models.TextField(max_length=5_000)
    source_refs = models.JSONField(default=list)
    asked_by = models.CharField(max_length=10, choices=ANY_ROLE)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["session", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["session", "sequence"], name="session_question_unique_sequence"),
            choices_check("asked_by", ANY_ROLE, "session_question_asked_by_valid"),
        ]

    def __str__(self) -> str:
        return self.question[:80]


# Who speaks in the conversation: the people, and Sol for the coordinator's own turns.
TURN_SPEAKERS = choices_of("author", "editor", "sol")


class Turn(TimeStampedModel):
    session = models.ForeignKey(DiscoverySession, on_delete=models.PROTECT, related_name="turns")
    ordinal = models.PositiveIntegerField()
    role = models.CharField(max_length=10, choices=TURN_SPEAKERS)
    written_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    content = models.TextField(max_length=50_000)
    # The question Sol had put to the author when a person wrote this turn: the turn answers it.
    answers = models.ForeignKey(
        SessionQuestion, null=True, blank=True, on_delete=models.PROTECT, related_name="answers"
    )

    class Meta:
        ordering = ["session", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["session", "ordinal"], name="turn_unique_ordinal_per_session"),
            models.CheckConstraint(condition=Q(ordinal__gte=1), name="turn_ordinal_positive"),
            choices_check("role", TURN_SPEAKERS, "turn_role_valid"),
        ]

    def __str__(self) -> str:
        return f"Turn {self.ordinal} ({self.role})"


def confidence_check(name: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=Q(confidence__isnull=True) | (Q(confidence__gte=0) & Q(confidence__lte=1)),
        name=name,
    )


class ObservationStatus(models.TextChoices):
    WORKING = "working", "Working (unresolved)"
    CONFIRMED = "confirmed", "Confirmed"
    RESOLVED = "resolved", "Resolved"
    REJECTED = "rejected", "Rejected"
    RETIRED = "retired", "Retired"


class Observation(TimeStampedModel):
    Status = ObservationStatus

    session = models.ForeignKey(DiscoverySession, on_delete=models.PROTECT, related_name="observations")
    turn = models.ForeignKey(Turn, on_delete=models.PROTECT, related_name="observations")
    key = models.CharField(max_length=200)
    value = models.TextField(max_length=20_000)
    provenance = models.CharField(max_length=20, choices=Provenance.choices)
    confidence = models.FloatField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.WORKING)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            enum_check("provenance", Provenance, "observation_provenance_valid"),
            enum_check("status", ObservationStatus, "observation_status_valid"),
            confidence_check("observation_confidence_0_1"),
        ]
        # Bounded reads (a page of a session's observations, of a book's working ones) read in this order
        # and stop after a page, instead of sorting every row first.
        indexes = [
            models.Index(fields=["session", "created_at", "id"], name="observation_session_order"),
            models.Index(fields=["status", "created_at", "id"], name="observation_status_order"),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.value[:60]}"


class ObservationAction(models.TextChoices):
    CONFIRM = "confirm", "Confirm"
    CORRECT = "correct", "Correct"
    RETIRE = "retire", "Retire"


class ObservationRevision(AppendOnlyRecord, models.Model):
    """One step in an observation's life, by the author: confirmed, corrected (with the new value)
    or retired. Append-only: the observation keeps the value as first stated; its current value is
    the newest correction's, and every earlier value stays here."""

    append_only = "An observation's history is append-only."

    Action = ObservationAction

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    observation = models.ForeignKey(Observation, on_delete=models.PROTECT, related_name="revisions")
    sequence = models.PositiveIntegerField()
    action = models.CharField(max_length=10, choices=Action.choices)
    previous_value = models.TextField(max_length=20_000)
    value = models.TextField(max_length=20_000)
    previous_status = models.CharField(max_length=10, choices=ObservationStatus.choices)
    status = models.CharField(max_length=10, choices=ObservationStatus.choices)
    rationale = models.TextField(blank=True, max_length=10_000)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["observation", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["observation", "sequence"], name="observation_revision_unique_sequence"),
            enum_check("action", ObservationAction, "observation_revision_action_valid"),
            enum_check("status", ObservationStatus, "observation_revision_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.observation_id} #{self.sequence}"


class ScratchpadEntryKind(models.TextChoices):
    OBSERVATION = "observation", "Observation"
    HYPOTHESIS = "hypothesis", "Hypothesis"
    QUESTION = "question", "Question"
    CONTRADICTION = "contradiction", "Contradiction"
    ALTERNATIVE = "alternative", "Alternative"
    DIGEST = "digest", "Digest"


class ScratchpadEntry(AppendOnlyRecord, models.Model):
    """One provisional thought. Append-only: the database refuses UPDATE and DELETE."""

    append_only = "Scratchpad entries are append-only."

    Kind = ScratchpadEntryKind

    id = models.UUIDField(primary_key=True, editable=False)
    session = models.ForeignKey(DiscoverySession, on_delete=models.PROTECT, related_name="scratchpad")
    sequence = models.PositiveIntegerField()
    agent_role = models.CharField(max_length=10, choices=AgentRole.choices)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    content = models.TextField(max_length=20_000)
    confidence = models.FloatField(null=True, blank=True)
    source_refs = models.JSONField(default=list, blank=True)
    # Where the thought comes from, when the agent says so (literary-guidance cites the chunk it draws on).
    provenance = models.CharField(max_length=20, choices=Provenance.choices, null=True, blank=True)
    handoff = models.ForeignKey(
        "Handoff",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="result_entries",
    )
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["session", "sequence"]
        verbose_name_plural = "scratchpad entries"
        constraints = [
            models.UniqueConstraint(fields=["session", "sequence"], name="scratchpad_unique_sequence"),
            enum_check("kind", ScratchpadEntryKind, "scratchpad_kind_valid"),
            enum_check("agent_role", AgentRole, "scratchpad_role_valid"),
            confidence_check("scratchpad_confidence_0_1"),
            models.CheckConstraint(
                condition=Q(provenance__isnull=True) | Q(provenance__in=Provenance.values),
                name="scratchpad_provenance_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.agent_role} {self.kind}"


class ThrustCandidateKind(models.TextChoices):
    CORE = "core", "Core"
    STRETCH = "stretch", "Stretch"
    WILD = "wild", "Wild"


class CandidateStatus(models.TextChoices):
    """A candidate direction (a story thrust, a divergence candidate of the loop): not-chosen ones are kept."""

    PROPOSED = "proposed", "Proposed"
    SELECTED = "selected", "Selected"
    REJECTED = "rejected", "Rejected"
    PARKED = "parked", "Parked"


class ThrustCandidate(TimeStampedModel):
    Kind = ThrustCandidateKind

    Status = CandidateStatus

    session = models.ForeignKey(DiscoverySession, on_delete=models.PROTECT, related_name="thrusts")
    proposed_by = models.CharField(max_length=10, choices=ANY_ROLE)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROPOSED)
    title = models.CharField(max_length=200)
    main_thrust = models.TextField(max_length=10_000)
    character_engine = models.TextField(max_length=10_000)
    central_conflict = models.TextField(max_length=10_000)
    reader_promise = models.JSONField(default=list)
    thematic_pressure = models.TextField(blank=True, max_length=10_000)
    genre_obligations = models.JSONField(default=list, blank=True)
    ending_shape = models.TextField(blank=True, max_length=10_000)
    risks = models.JSONField(default=list, blank=True)
    forecloses = models.JSONField(default=list, blank=True)
    # Set when G1.5 ratifies another thrust: why this one was not chosen (it stays visible).
    not_chosen_reason = models.TextField(blank=True, max_length=10_000)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            enum_check("kind", ThrustCandidateKind, "thrust_kind_valid"),
            enum_check("status", CandidateStatus, "thrust_status_valid"),
            choices_check("proposed_by", ANY_ROLE, "thrust_proposed_by_valid"),
        ]
        indexes = [models.Index(fields=["session", "created_at", "id"], name="thrust_session_order")]

    def __str__(self) -> str:
        return self.title


class StoryCharterStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed (pending the author)"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    SUPERSEDED = "superseded", "Superseded"


class StoryCharter(TimeStampedModel):
    """A versioned proposal for what governs the book. Binding only once approved."""

    Status = StoryCharterStatus

    book = models.ForeignKey(Book, on_delete=models.PROTECT, related_name="charters")
    session = models.ForeignKey(
        DiscoverySession,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="charters",
    )
    version = models.PositiveIntegerField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PROPOSED)
    proposed_by = models.CharField(max_length=10, choices=ANY_ROLE)
    # The structured charter: main_thrust, reader_promise, protagonist, central_conflict,
    # genre_contract, thematic_questions, narrative_form, ending_horizon, constraints,
    # productive_unknowns, rejected_directions.
    content = models.JSONField(default=dict)
    source_refs = models.JSONField(default=list, blank=True)
    approval = models.ForeignKey(
        "approvals.Approval",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    # The approval whose verdict superseded this version (its log entry's ``superseded_versions``): the
    # rest of that capped list is read from here after the fact. Null for versions superseded before it was kept.
    superseded_by = models.ForeignKey(
        "approvals.Approval",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="superseded_charters",
    )

    class Meta:
        ordering = ["book", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["book", "version"], name="charter_unique_version_per_book"),
            models.CheckConstraint(condition=Q(version__gte=1), name="charter_version_positive"),
            enum_check("status", StoryCharterStatus, "charter_status_valid"),
            choices_check("proposed_by", ANY_ROLE, "charter_proposed_by_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.book} charter v{self.version} ({self.status})"

    @property
    def main_thrust(self) -> str:
        return self.content.get("main_thrust", "")


# --- Knowledge bases and claims ----------------------------------------------

LITERARY_OWNER_ID = "global"
LITERARY_LIBRARY_NAME = "NovelGraph Literary Library"


class KnowledgeBaseScope(models.TextChoices):
    LITERARY = "literary", "Literary"
    SERIES = "series", "Series"
    BOOK = "book", "Book"
    RUN = "run", "Run"


class KnowledgeBase(TimeStampedModel):
    Scope = KnowledgeBaseScope

    scope = models.CharField(max_length=10, choices=Scope.choices)
    # "global" for the literary base; otherwise the id of the series, book or session.
    owner_id = models.CharField(max_length=64)
    name = models.CharField(max_length=200)

    class Meta:
        ordering = ["scope", "name"]
        constraints = [
            models.UniqueConstraint(fields=["scope", "owner_id"], name="knowledgebase_unique_scope_owner"),
            enum_check("scope", KnowledgeBaseScope, "knowledgebase_scope_valid"),
        ]

    def __str__(self) -> str:
        return self.name


class EvidenceKind(models.TextChoices):
    """What kind of evidence a claim is, for a reveal (seed 001: decisive digital or forensic
    evidence needs admitted research)."""

    PHYSICAL = "physical", "Physical"
    TESTIMONIAL = "testimonial", "Testimonial"
    DOCUMENTARY = "documentary", "Documentary"
    DIGITAL = "digital", "Digital"
    FORENSIC = "forensic", "Forensic"


class KnowledgeClaimStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    APPROVED = "approved", "Approved (canon)"
    REJECTED = "rejected", "Rejected"
    # Approved canon that a later approved revision (``revises``) replaced; it stays in history.
    REVISED = "revised", "Revised (replaced by an approved revision)"
    # Approved canon the author withdrew, through a logged decision with her rationale; it stays in history.
    RETRACTED = "retracted", "Retracted by the author"


class KnownBy(models.TextChoices):
    """Who knows a fact (seed 001 story records): the reader, named characters only, or nobody yet."""

    READER = "reader", "The reader"
    CHARACTERS = "characters", "Named characters"
    NOBODY = "nobody", "Nobody yet (a secret)"


class RevealKind(models.TextChoices):
    """Whether a claim is a reveal the evidence must support before it is shown."""

    NONE = "none", "Not a reveal"
    SOLUTION = "solution", "The solution"
    TWIST = "twist", "A twist"


# A claim's columns, declared once for every read that lists them: its statement, as every list of claims shows
# it, and its story record (seed 001): when it holds, who knows it, where it is first shown, what it reveals or
# revises. The approval's fingerprint covers the story record.
CLAIM_STATEMENT = ("id", "base_id", "subject", "predicate", "value", "provenance")
STORY_RECORD = (
    "true_from_chapter",
    "true_until_chapter",
    "known_by",
    "known_by_characters",
    "first_shown_chapter",
    "decisive",
    "evidence_for_id",
    "reveal",
    "revises_id",
)


class KnowledgeClaim(TimeStampedModel):
    Status = KnowledgeClaimStatus

    base = models.ForeignKey(KnowledgeBase, on_delete=models.PROTECT, related_name="claims")
    subject = models.CharField(max_length=300)
    # The codex entry the subject names (issue 28); a series claim's entry is in the book it came through.
    entry = models.ForeignKey("CodexEntry", null=True, blank=True, on_delete=models.PROTECT, related_name="claims")
    predicate = models.CharField(max_length=300)
    value = models.JSONField()
    provenance = models.CharField(max_length=20, choices=Provenance.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PROPOSED)
    proposed_by = models.CharField(max_length=10, choices=ANY_ROLE)
    source_refs = models.JSONField(default=list, blank=True)
    # {kind: physical|testimonial|documentary|digital|forensic, decisive: bool, research_ids: [...]}
    evidence = models.JSONField(null=True, blank=True)
    # The story record (seed 001): when the fact is true, who knows it, where the reader first sees
    # it, whether it is decisive evidence (for which reveal) and whether it is a reveal. Part of the
    # proposal: the approval's fingerprint covers every one of these fields.
    true_from_chapter = models.PositiveIntegerField(null=True, blank=True)
    true_until_chapter = models.PositiveIntegerField(null=True, blank=True)
    known_by = models.CharField(max_length=12, choices=KnownBy.choices, default=KnownBy.READER)
    known_by_characters = models.JSONField(default=list, blank=True)
    first_shown_chapter = models.PositiveIntegerField(null=True, blank=True)
    decisive = models.BooleanField(default=False)
    evidence_for = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="decisive_evidence"
    )
    reveal = models.CharField(max_length=10, choices=RevealKind.choices, default=RevealKind.NONE)
    # The approved claim this proposal revises: approving it supersedes that one (history kept).
    revises = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="revisions")
    approval = models.ForeignKey(
        "approvals.Approval",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )

    class Meta:
        ordering = ["created_at"]
        constraints = [
            enum_check("status", KnowledgeClaimStatus, "claim_status_valid"),
            enum_check("known_by", KnownBy, "claim_known_by_valid"),
            enum_check("reveal", RevealKind, "claim_reveal_valid"),
            models.CheckConstraint(
                condition=Q(true_from_chapter__isnull=True) | Q(true_from_chapter__gte=1),
                name="claim_true_from_positive",
            ),
            models.CheckConstraint(
                condition=Q(true_until_chapter__isnull=True) | Q(true_until_chapter__gte=1),
                name="claim_true_until_positive",
            ),
            models.CheckConstraint(
                condition=Q(first_shown_chapter__isnull=True) | Q(first_shown_chapter__gte=1),
                name="claim_first_shown_positive",
            ),
            models.CheckConstraint(
                condition=Q(true_from_chapter__isnull=True)
                | Q(true_until_chapter__isnull=True)
                | Q(true_until_chapter__gte=models.F("true_from_chapter")),
                name="claim_true_until_after_from",
            ),
            # A reveal is shown somewhere: its chapter is what the evidence must precede.
            models.CheckConstraint(
                condition=Q(reveal="none") | Q(first_shown_chapter__isnull=False),
                name="claim_reveal_has_chapter",
            ),
            enum_check("provenance", Provenance, "claim_provenance_valid"),
            choices_check("proposed_by", ANY_ROLE, "claim_proposed_by_valid"),
            # Canon always names the approval that made it canon.
            models.CheckConstraint(
                condition=~Q(status="approved") | Q(approval__isnull=False),
                name="claim_approved_has_approval",
            ),
        ]
        # A page of canon (approved claims across a book's bases, oldest first) without sorting all of it.
        indexes = [models.Index(fields=["status", "created_at", "id"], name="claim_status_order")]

    def __str__(self) -> str:
        return f"{self.subject} {self.predicate}"


# --- The manuscript (issue 28): codex entries, chapter text, continuity findings -------------------------------


class EntryKind(models.TextChoices):
    """What a codex entry is. Subjects that existed before entries were sorted arrive as unsorted."""

    PERSON = "person", "Person"
    PLACE = "place", "Place"
    OBJECT = "object", "Object"
    EVENT = "event", "Event"
    UNSORTED = "unsorted", "Not sorted yet"


class EntryStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    APPROVED = "approved", "In the codex"
    REJECTED = "rejected", "Rejected"


class CodexEntry(TimeStampedModel):
    """A person, place, object or event canon speaks of, with the other names the text may call it by. The
    author's own entries are in the codex at once; an agent's is proposed until she approves it (a rejected one
    stays in history, and its name is free again). Only entries in the codex count for the continuity check."""

    Kind = EntryKind
    Status = EntryStatus

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="codex_entries")
    name = models.CharField(max_length=300)
    kind = models.CharField(max_length=10, choices=EntryKind.choices, default=EntryKind.UNSORTED)
    aliases = models.JSONField(default=list, blank=True)
    created_by = models.CharField(max_length=10, choices=ANY_ROLE, default="author")
    status = models.CharField(max_length=10, choices=EntryStatus.choices, default=EntryStatus.APPROVED)

    class Meta:
        ordering = ["book", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["book", "name"], condition=~Q(status="rejected"), name="codex_entry_unique_name_per_book"
            ),
            enum_check("kind", EntryKind, "codex_entry_kind_valid"),
            enum_check("status", EntryStatus, "codex_entry_status_valid"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def names(self) -> list[str]:
        return [self.name, *self.aliases]


class ChapterRevision(AppendOnlyRecord, models.Model):
    """One stored text of a chapter. Append-only (the database's triggers refuse a change): a new text is a
    new revision, numbered from 1 per chapter."""

    append_only = "A chapter's revisions are append-only: store a new text instead."

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    chapter = models.ForeignKey(Chapter, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    text = models.TextField()
    words = models.PositiveIntegerField()
    created_by = models.CharField(max_length=10, choices=ANY_ROLE)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["chapter", "number"]
        constraints = [
            models.UniqueConstraint(fields=["chapter", "number"], name="chapter_revision_unique_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="chapter_revision_number_positive"),
        ]

    def __str__(self) -> str:
        return f"chapter revision {self.number}"


class FindingKind(models.TextChoices):
    REVEAL_TOO_EARLY = "reveal-too-early", "A fact shown before its chapter"
    EVIDENCE_NOT_SHOWN = "evidence-not-shown", "A reveal's evidence not shown before it"
    OUT_OF_TIME = "out-of-time", "Present outside the chapters canon allows"
    NOT_IN_CANON = "not-in-canon", "A name canon does not know"
    CONTRADICTS_CANON = "contradicts-canon", "Says other than canon"
    FIRST_SHOWN_DIFFERS = "first-shown-differs", "A fact first shown later than planned"


class FindingStatus(models.TextChoices):
    OPEN = "open", "Open"
    FIXED = "fixed", "Fixed in the text"
    INTENTIONAL = "intentional", "Intentional"
    CANON_CHANGE = "canon-change", "Canon change proposed"


class ContinuityFinding(TimeStampedModel):
    """What Luna's continuity check found in one revision of a chapter, with the canon it concerns."""

    Kind = FindingKind
    Status = FindingStatus

    chapter = models.ForeignKey(Chapter, on_delete=models.CASCADE, related_name="findings")
    revision = models.ForeignKey(ChapterRevision, on_delete=models.PROTECT, related_name="findings")
    kind = models.CharField(max_length=20, choices=FindingKind.choices)
    # What makes two findings the same across revisions: the kind, the canon and the words concerned.
    key = models.CharField(max_length=400)
    span_start = models.PositiveIntegerField()
    span_end = models.PositiveIntegerField()
    quote = models.TextField()
    claim_ids = models.JSONField(default=list, blank=True)
    entry_ids = models.JSONField(default=list, blank=True)
    message = models.TextField()
    status = models.CharField(max_length=12, choices=FindingStatus.choices, default=FindingStatus.OPEN)
    rationale = models.TextField(blank=True)
    closed_by_revision = models.ForeignKey(
        ChapterRevision, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    proposal = models.ForeignKey(KnowledgeClaim, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta:
        ordering = ["chapter", "span_start", "created_at"]
        constraints = [
            enum_check("kind", FindingKind, "finding_kind_valid"),
            enum_check("status", FindingStatus, "finding_status_valid"),
            models.CheckConstraint(condition=Q(span_end__gte=models.F("span_start")), name="finding_span_ordered"),
            models.CheckConstraint(condition=~Q(status="intentional") | ~Q(rationale=""), name="finding_intent_why"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} in chapter {self.chapter_id}"


class KnowledgeLinkRelation(models.TextChoices):
    LITERARY_GUIDANCE = "literary-guidance", "Literary guidance"
    SERIES_CANON = "series-canon", "Series canon"
    BOOK_CANON = "book-canon", "Book canon"


class KnowledgeLink(TimeStampedModel):
    Relation = KnowledgeLinkRelation

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="knowledge_links")
    base = models.ForeignKey(KnowledgeBase, on_delete=models.PROTECT, related_name="links")
    relation = models.CharField(max_length=20, choices=Relation.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["book", "base", "relation"], name="knowledgelink_unique"),
            enum_check("relation", KnowledgeLinkRelation, "knowledgelink_relation_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.book} → {self.base} ({self.relation})"


# --- Dossiers and handoffs -------------------------------------------------


class ContextDossier(AppendOnlyRecord, models.Model):
    """A role-labelled snapshot of what an agent was given. Immutable in the database."""

    append_only = "Dossiers are snapshots and cannot change."
    append_only_delete = "Dossiers are snapshots and cannot be deleted."

    id = models.UUIDField(primary_key=True, editable=False)
    book = models.ForeignKey(Book, on_delete=models.PROTECT, related_name="dossiers")
    session = models.ForeignKey(
        DiscoverySession,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="dossiers",
    )
    agent_role = models.CharField(max_length=10, choices=AgentRole.choices)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    content = models.JSONField()
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [enum_check("agent_role", AgentRole, "dossier_role_valid")]

    def __str__(self) -> str:
        return f"{self.agent_role} dossier for {self.book}"


class HandoffStatus(models.TextChoices):
    OPEN = "open", "Open"
    RETURNED = "returned", "Returned"


class Handoff(TimeStampedModel):
    Status = HandoffStatus

    book = models.ForeignKey(Book, on_delete=models.PROTECT, related_name="handoffs")
    session = models.ForeignKey(DiscoverySession, on_delete=models.PROTECT, related_name="handoffs")
    from_role = models.CharField(max_length=10, choices=ANY_ROLE)
    to_role = models.CharField(max_length=10, choices=AgentRole.choices)
    decision = models.TextField(max_length=10_000)
    allowed_sources = models.JSONField(default=list)
    statements = models.JSONField(default=list)
    dossier = models.ForeignKey(ContextDossier, on_delete=models.PROTECT, related_name="handoffs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    returned_at = models.DateTimeField(null=True, blank=True)
    # What a result carries beyond its entries: Terra's analysis, risks and charter-ready language.
    result = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            enum_check("status", HandoffStatus, "handoff_status_valid"),
            enum_check("to_role", AgentRole, "handoff_to_role_valid"),
            models.CheckConstraint(condition=Q(to_role__in=["terra", "luna"]), name="handoff_to_worker"),
        ]

    def __str__(self) -> str:
        return f"{self.from_role} → {self.to_role}: {self.decision[:60]}"


class WebhookEndpoint(TimeStampedModel):
    """Where a book's events are posted (discovery.webhooks): one URL per book, signed with its secret."""

    book = models.OneToOneField(Book, on_delete=models.CASCADE, related_name="webhook")
    url = models.URLField(max_length=2000)
    secret = models.CharField(max_length=64)
    active = models.BooleanField(default=True)


class WebhookDelivery(TimeStampedModel):
    """One attempt to post one event: the delivery log shows every row (a retry is a new row, same event)."""

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.UUIDField(db_index=True)
    kind = models.CharField(max_length=40)
    attempt = models.PositiveSmallIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=300, blank=True)
    delivered = models.BooleanField(default=False)
    retry_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]


class BibleShareLink(TimeStampedModel):
    """A read-only link to a story bible, for an editor or a beta reader (issue 29): a book's bible as of one
    chapter, or a series' bible as of one chapter of one of its books (``series_book``). Only the token's SHA-256
    is stored, as for API keys; the link itself is shown once. A revoked link is gone."""

    book = models.ForeignKey(Book, null=True, blank=True, on_delete=models.CASCADE, related_name="bible_links")
    series = models.ForeignKey(Series, null=True, blank=True, on_delete=models.CASCADE, related_name="bible_links")
    # A series link's reader has read the series' earlier books and this one up to ``chapter``.
    series_book = models.ForeignKey(
        Book, null=True, blank=True, on_delete=models.CASCADE, related_name="series_bible_links"
    )
    chapter = models.PositiveIntegerField()
    label = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=12)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(chapter__gte=1), name="bible_link_chapter_positive"),
            # A link opens exactly one bible: a book's, or a series' as of one of its books.
            models.CheckConstraint(
                condition=Q(book__isnull=False, series__isnull=True, series_book__isnull=True)
                | Q(book__isnull=True, series__isnull=False, series_book__isnull=False),
                name="bible_link_book_or_series",
            ),
        ]

    def __str__(self) -> str:
        if self.series_id:
            return f"{self.prefix}… ({self.series}, {self.series_book}, chapter {self.chapter})"
        return f"{self.prefix}… ({self.book}, chapter {self.chapter})"


# --- Notifications (issue 29) -------------------------------------------------------------


class NotificationMode(models.TextChoices):
    AT_ONCE = "at-once", "At once"
    DIGEST = "digest", "Daily digest"
    NEVER = "never", "Never"


class NotificationPreference(TimeStampedModel):
    """How one person hears by e-mail about one book (discovery.notifications). No row: her role's default."""

    person = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_modes")
    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="notification_modes")
    mode = models.CharField(max_length=10, choices=NotificationMode.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["person", "book"], name="notification_mode_once_per_person_book"),
            enum_check("mode", NotificationMode, "notification_mode_valid"),
        ]


class NoticeKind(models.TextChoices):
    DECISION_WAITING = "decision-waiting", "A decision waits"
    DECISION_MADE = "decision-made", "A decision was made"


class BookNotice(TimeStampedModel):
    """What happened on a book that people may hear of: one row per event (``book_event``), for the mails, the
    digest and the feed. One approval waits once and is decided once, so the event is (approval, kind)."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="notices")
    kind = models.CharField(max_length=20, choices=NoticeKind.choices)
    approval_id = models.UUIDField()
    summary = models.CharField(max_length=500)
    verdict = models.CharField(max_length=30, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["approval_id", "kind"], name="book_notice_once_per_event"),
            enum_check("kind", NoticeKind, "book_notice_kind_valid"),
        ]


class NotificationMail(TimeStampedModel):
    """A mail that was sent: about one notice (at once) or one day's digest. The unique constraints make a mail
    once-only: a notice is mailed to a person at most once, a day's digest at most once."""

    person = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_mails")
    notice = models.ForeignKey(BookNotice, null=True, blank=True, on_delete=models.CASCADE, related_name="mails")
    digest_day = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["person", "notice"], condition=Q(notice__isnull=False), name="notification_mail_once_per_notice"
            ),
            models.UniqueConstraint(
                fields=["person", "digest_day"],
                condition=Q(digest_day__isnull=False),
                name="notification_mail_one_digest_a_day",
            ),
            models.CheckConstraint(
                condition=Q(notice__isnull=False, digest_day__isnull=True)
                | Q(notice__isnull=True, digest_day__isnull=False),
                name="notification_mail_notice_or_digest",
            ),
        ]


class FeedToken(TimeStampedModel):
    """The private address of a person's Atom feed. Only the token's SHA-256 is stored (as for API keys); the
    address is shown once. One live token per person; a revoked one answers 404."""

    person = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="feed_tokens")
    prefix = models.CharField(max_length=12)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["person"], condition=Q(revoked_at__isnull=True), name="feed_token_one_live_per_person"
            )
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.person})"
