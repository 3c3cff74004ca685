"""Typed state of a book's discovery loop (seed 002, LOOP.md).

One set per book: the meta block (round, cost, gate, status, bounds), the
blackboard (typed artifact slots), open questions, the traceability graph, the
plan-tree (nodes, candidates, validation hooks), the validation plan, option cards
raised at gates and bounds, lens reviews, the lens re-run queue, and the roster.
Every record carries ``schema_version``; every enumeration is a database check.
Writes and rules live in ``discovery.loop.services``.
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from approvals.models import Gate, Reversibility, Verdict
from discovery.models import CandidateStatus
from novelgraph.core.db import AboveValidator, TimeStampedModel, choices_check, enum_check
from novelgraph.core.roles import choices_of

SCHEMA_VERSION = "0.1"
GATE_ORDER = Gate.values  # the gates in order


def schema_version_field() -> models.CharField:
    return models.CharField(max_length=10, default=SCHEMA_VERSION)


# --- Enumerations (module level: used in Meta constraints) -------------------


class LoopStatus(models.TextChoices):
    WORKING = "working", "Working"
    AWAITING_HUMAN = "awaiting-human", "Awaiting the author"
    PAUSED_AT_BOUND = "paused-at-bound", "Paused at a bound"
    STALLED_AT_CAP = "stalled-at-cap", "Stalled at a cap"
    CONVERGED = "converged", "Converged"
    HANDED_OFF = "handed-off", "Handed off to drafting"


class ArtifactStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    PROPOSED = "proposed", "Proposed"
    RATIFIED = "ratified", "Ratified"
    STALE = "stale", "Stale"
    REJECTED = "rejected", "Rejected"


class DataClass(models.TextChoices):
    PUBLIC = "public", "Public"
    INTERNAL = "internal", "Internal"
    SENSITIVE = "sensitive", "Sensitive"
    REGULATED = "regulated", "Regulated"


# Who writes the loop's records: the author, or an agent role.
WRITER_ROLES = choices_of("author", "sol", "terra", "luna")


class QuestionStatus(models.TextChoices):
    OPEN = "open", "Open"
    ROUTED = "routed", "Routed"
    RESOLVED = "resolved", "Resolved"
    SURFACED = "surfaced", "Surfaced to the author"


class QuestionKind(models.TextChoices):
    QUESTION = "question", "Question"
    VALUE_CONFLICT = "value-conflict", "Value conflict"
    CANON_CONFLICT = "canon-conflict", "Conflict with series canon"


class Lifecycle(models.TextChoices):
    DRAFT = "draft", "Draft"
    DIVERGING = "diverging", "Diverging"
    CONVERGING = "converging", "Converging"
    RATIFIED = "ratified", "Ratified"
    STALE = "stale", "Stale"
    PARKED = "parked", "Parked"
    ABANDONED = "abandoned", "Abandoned"


class ValidationStatus(models.TextChoices):
    HYPOTHESIS = "hypothesis", "Hypothesis"
    VALIDATING = "validating", "Validating"
    VALIDATED = "validated", "Validated"
    REFUTED = "refuted", "Refuted"


class SubIdea(models.TextChoices):
    OPEN = "open", "Open"
    PARKED = "parked", "Parked"
    DONE = "done", "Done"


class Altitude(models.TextChoices):
    PLOTLINE = "plotline", "One plotline"
    SUBPLOT = "subplot", "Subplot"
    BOOK = "book", "Whole book"
    MULTI_BOOK = "multi-book", "Several books"
    SERIES_ARC = "series-arc", "Whole-series arc"


class BackedBy(models.TextChoices):
    FILE = "file", "File"
    CONTAINER = "container", "Container"
    LADDER = "ladder", "Ladder"


class TraceStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    STALE = "stale", "Stale"
    REJECTED = "rejected", "Rejected"
    ABANDONED = "abandoned", "Abandoned"


class CardKind(models.TextChoices):
    GATE = "gate", "Gate"
    BOUND = "bound", "Bound"
    CONSENT = "consent", "One-way-door consent"
    CASCADE = "cascade", "Cascade past the circuit breaker"


class CardStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DECIDED = "decided", "Decided"
    AUTO_PASSED = "auto-passed", "Passed by the controller"
    SUPERSEDED = "superseded", "Superseded"


class Resolution(models.TextChoices):
    RESOLVED = "resolved", "Resolved"
    DEFERRED = "deferred", "Deferred"


class RosterKind(models.TextChoices):
    CONTROLLER = "controller", "Controller"
    DIVERGENCE = "divergence", "Divergence"
    VALIDATION = "validation", "Validation"
    LENS = "lens", "Lens"


class RerunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    DONE = "done", "Done"


# --- The roster (data, not code paths) ---------------------------------------


class RosterEntry(models.Model):
    """Who takes part in the loop. Seeded by a data migration; the gates read it."""

    slug = models.SlugField(max_length=60, primary_key=True)
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=12, choices=RosterKind.choices)
    agent_role = models.CharField(max_length=10, blank=True)
    required = models.BooleanField(default=False)
    required_at_gate = models.CharField(max_length=4, choices=Gate.choices, blank=True)
    description = models.TextField(blank=True)
    # Cost charged to the book when the lens is queued to re-run after a cascade.
    rerun_cost = models.FloatField(default=1.0)
    schema_version = schema_version_field()

    class Meta:
        ordering = ["kind", "slug"]
        constraints = [
            enum_check("kind", RosterKind, "loop_roster_kind_valid"),
            models.CheckConstraint(condition=Q(rerun_cost__gte=0), name="loop_roster_rerun_cost_nonneg"),
            models.CheckConstraint(
                condition=Q(required_at_gate="") | Q(required_at_gate__in=Gate.values),
                name="loop_roster_gate_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.name


# --- Meta ---------------------------------------------------------------------


# A round cap, a depth or a breadth: at least one, at most a thousand.
ROUNDS_RANGE = [MinValueValidator(1), MaxValueValidator(1000)]


class LoopMeta(models.Model):
    """The counters and state of one book's loop, with its bounds.

    Each bound's range is declared once, by its field's validators; every input that sets a bound (an extend
    verdict's grant, an imported meta file) reads it through ``novelgraph.core.schemas.bounded``.
    """

    Status = LoopStatus

    book = models.OneToOneField("discovery.Book", on_delete=models.CASCADE, primary_key=True, related_name="loop")
    schema_version = schema_version_field()
    round = models.PositiveIntegerField(default=0)  # completed rounds
    round_cap = models.PositiveIntegerField(default=6, validators=ROUNDS_RANGE)
    cost_budget = models.FloatField(default=100.0, validators=[AboveValidator(0), MaxValueValidator(1e9)])
    cost_spent = models.FloatField(default=0.0)
    gate = models.CharField(max_length=4, choices=Gate.choices, default=Gate.G0)
    status = models.CharField(max_length=16, choices=LoopStatus.choices, default=LoopStatus.WORKING)
    saturation = models.BooleanField(default=False)
    # Bounds (settings per book).
    max_depth = models.PositiveIntegerField(default=4, validators=ROUNDS_RANGE)
    max_breadth = models.PositiveIntegerField(default=6, validators=ROUNDS_RANGE)
    # The share of the budget one subtree may spend.
    concentration = models.FloatField(default=0.4, validators=[AboveValidator(0), MaxValueValidator(1.0)])
    # The bound that paused or stalled the loop ("" when none).
    bound = models.CharField(max_length=20, blank=True)
    # Traceability: the root node id and the leaf kind.
    trace_root = models.CharField(max_length=100, default="premise")
    leaf_kind = models.CharField(max_length=60, default="chapter")
    # Saturation needs a full round that invalidated nothing.
    round_invalidated = models.BooleanField(default=False)
    last_round_clean = models.BooleanField(default=False)
    # Constraints recorded by approve-with-constraint (the scope boundary).
    constraints = models.JSONField(default=list, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            enum_check("gate", Gate, "loop_meta_gate_valid"),
            enum_check("status", LoopStatus, "loop_meta_status_valid"),
            models.CheckConstraint(condition=Q(round_cap__gte=1), name="loop_meta_round_cap_positive"),
            models.CheckConstraint(condition=Q(cost_spent__gte=0), name="loop_meta_cost_spent_nonneg"),
            models.CheckConstraint(condition=Q(cost_budget__gt=0), name="loop_meta_cost_budget_positive"),
            models.CheckConstraint(condition=Q(max_depth__gte=1), name="loop_meta_max_depth_positive"),
            models.CheckConstraint(condition=Q(max_breadth__gte=1), name="loop_meta_max_breadth_positive"),
            models.CheckConstraint(
                condition=Q(concentration__gt=0) & Q(concentration__lte=1), name="loop_meta_concentration_0_1"
            ),
        ]

    def __str__(self) -> str:
        return f"loop of {self.book_id}: {self.gate} {self.status}"


# --- Blackboard ---------------------------------------------------------------


class BlackboardArtifact(TimeStampedModel):
    """A typed slot. ``ratified`` only ever comes from an author verdict."""

    Status = ArtifactStatus

    book = models.ForeignKey("discovery.Book", on_delete=models.CASCADE, related_name="loop_artifacts")
    slug = models.SlugField(max_length=100)
    type = models.SlugField(max_length=60)  # open set: intent, scope-boundary, decision-brief, backlog, ...
    status = models.CharField(max_length=10, choices=ArtifactStatus.choices, default=ArtifactStatus.PROPOSED)
    version = models.PositiveIntegerField(default=1)
    produced_by = models.CharField(max_length=10, choices=WRITER_ROLES)
    lens = models.CharField(max_length=60, blank=True)
    path = models.CharField(max_length=300, blank=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    round_last_touched = models.PositiveIntegerField(default=0)
    stale_reason = models.TextField(blank=True, max_length=2000)
    untrusted = models.BooleanField(default=False)
    data_class = models.CharField(max_length=12, choices=DataClass.choices, default=DataClass.INTERNAL)
    content = models.JSONField(default=dict, blank=True)
    # A proposed next version written while this one is ratified: it waits BESIDE the ratified version
    # ({version, content, produced_by, lens, round, status: proposed}) until the author ratifies it at a gate.
    successor = models.JSONField(default=dict, blank=True)
    schema_version = schema_version_field()

    class Meta:
        ordering = ["book", "slug"]
        constraints = [
            models.UniqueConstraint(fields=["book", "slug"], name="loop_artifact_unique_slug"),
            enum_check("status", ArtifactStatus, "loop_artifact_status_valid"),
            enum_check("data_class", DataClass, "loop_artifact_data_class_valid"),
            choices_check("produced_by", WRITER_ROLES, "loop_artifact_produced_by_valid"),
            models.CheckConstraint(condition=Q(version__gte=1), name="loop_artifact_version_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.slug} v{self.version} ({self.status})"


class LensRerun(TimeStampedModel):
    """The lens re-run queue: only the lenses that produced invalidated slots."""

    book = models.ForeignKey("discovery.Book", on_delete=models.CASCADE, related_name="loop_reruns")
    lens = models.CharField(max_length=60)
    artifacts = models.JSONField(default=list)
    reason = models.TextField(max_length=2000)
    status = models.CharField(max_length=8, choices=RerunStatus.choices, default=RerunStatus.QUEUED)
    cost = models.FloatField(default=0)
    round = models.PositiveIntegerField(default=0)
    schema_version = schema_version_field()

    class Meta:
        ordering = ["created_at"]
        constraints = [
            enum_check("status", RerunStatus, "loop_rerun_status_valid"),
            models.CheckConstraint(condition=Q(cost__gte=0), name="loop_rerun_cost_nonneg"),
        ]


# --- Open questions -----------------------------------------------------------


class OpenQuestion(TimeStampedModel):
    """The only way lenses ask each other things. A resolution cites what settles it."""

    Status = QuestionStatus

    book = models.ForeignKey("discovery.Book", on_delete=models.CASCADE, related_name="loop_questions")
    kind = models.CharField(max_length=16, choices=QuestionKind.choices, default=QuestionKind.QUESTION)
    raised_by = models.CharField(max_length=60)
    target_discipline = models.CharField(max_length=60)
    question = models.TextField(max_length=5000)
    status = models.CharField(max_length=10, choices=QuestionStatus.choices, default=QuestionStatus.OPEN)
    resolution = models.TextField(blank=True, max_length=5000)
    resolution_ref = models.CharField(max_length=200, blank=True)  # artifact:<slug> | trace:<id> | decision:<n> ...
    # Who resolved it: a role, or "author:<username>" when the author settled it (value and canon conflicts).
    resolved_by = models.CharField(max_length=160, blank=True)
    round = models.PositiveIntegerField(default=0)
    untrusted = models.BooleanField(default=False)
    schema_version = schema_version_field()

    class Meta:
        ordering = ["created_at"]
        constraints = [
            enum_check("status", QuestionStatus, "loop_question_status_valid"),
            enum_check("kind", QuestionKind, "loop_question_kind_valid"),
            models.CheckConstraint(
                condition=~Q(status="resolved") | (~Q(resolution="") & ~Q(resolution_ref="")),
                name="loop_question_resolution_cites",
            ),
        ]


# --- Traceability ------------------------------------------------------------------


class TraceNode(TimeStampedModel):
    book = models.ForeignKey("discovery.Book", on_delete=models.CASCADE, related_name="loop_trace_nodes")
    node_id = models.CharField(max_length=100)
    kind = models.SlugField(max_length=60)
    label = models.CharField(max_length=200, blank=True)
    backed_by = models.CharField(max_length=10, choices=BackedBy.choices, default=BackedBy.FILE)
    artifact = models.ForeignKey(
        BlackboardArtifact, null=True, blank=True, on_delete=models.SET_NULL, related_name="trace_nodes"
    )
    produced_by = models.CharField(max_length=60, blank=True)  # the lens that produced it
    status = models.CharField(max_length=10, choices=TraceStatus.choices, default=TraceStatus.ACTIVE)
    status_reason = models.TextField(blank=True, max_length=2000)
    schema_version = schema_version_field()

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(fields=["book", "node_id"], name="loop_trace_node_unique_id"),
            enum_check("backed_by", BackedBy, "loop_trace_node_backed_by_valid"),
            enum_check("status", TraceStatus, "loop_trace_node_status_valid"),
        ]

    @property
    def active(self) -> bool:
        return self.status == TraceStatus.ACTIVE


class TraceEdge(TimeStampedModel):
    """producer -> consumer. Ends are node ids as strings, so a dangling edge is representable."""

    book = models.ForeignKey("discovery.Book", on_delete=models.CASCADE, related_name="loop_trace_edges")
    from_id = models.CharField(max_length=100)
    to_id = models.CharField(max_length=100)
    active = models.BooleanField(default=True)  # cascaded edges leave the active graph, kept in history
    inactive_reason = models.TextField(blank=True, max_length=2000)
    schema_version = schema_version_field()

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["book", "from_id", "to_id"], condition=Q(active=True), name="loop_trace_edge_unique_active"
            ),
        ]


# --- Plan-tree -----------------------------------------------------------------


class PlanNode(TimeStampedModel):
    Lifecycle = Lifecycle

    book = models.ForeignKey("discovery.Book", on_delete=models.CASCADE, related_name="loop_nodes")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    is_root = models.BooleanField(default=False)
    depth = models.PositiveIntegerField(default=0)
    intent = models.TextField(max_length=5000)
    altitude = models.CharField(max_length=12, choices=Altitude.choices, default=Altitude.BOOK)
    lifecycle = models.CharField(max_length=12, choices=Lifecycle.choices, default=Lifecycle.DRAFT)
    validation_status = models.CharField(
        max_length=12, choices=ValidationStatus.choices, default=ValidationStatus.HYPOTHESIS
    )
    sub_idea = models.CharField(max_length=8, choices=SubIdea.choices, default=SubIdea.OPEN)
    round = models.PositiveIntegerField(default=0)
    round_cap = models.PositiveIntegerField(default=3, validators=ROUNDS_RANGE)
    cost_spent = models.FloatField(default=0)
    selection = models.ForeignKey(
        "Candidate", null=True, blank=True, on_delete=models.SET_NULL, related_name="selected_for"
    )
    # The validation hook.
    assumption = models.TextField(blank=True, max_length=5000)
    kill_condition = models.TextField(blank=True, max_length=5000)
    activity = models.TextField(blank=True, max_length=5000)
    produced_by = models.CharField(max_length=10, choices=WRITER_ROLES, default="sol")
    schema_version = schema_version_field()

    class Meta:
        ordering = ["depth", "created_at"]
        constraints = [
            enum_check("altitude", Altitude, "loop_node_altitude_valid"),
            enum_check("lifecycle", Lifecycle, "loop_node_lifecycle_valid"),
            enum_check("validation_status", ValidationStatus, "loop_node_validation_valid"),
            enum_check("sub_idea", SubIdea, "loop_node_sub_idea_valid"),
            models.CheckConstraint(condition=Q(round_cap__gte=1), name="loop_node_round_cap_positive"),
            models.CheckConstraint(condition=Q(cost_spent__gte=0), name="loop_node_cost_nonneg"),
            models.UniqueConstraint(fields=["book"], condition=Q(is_root=True), name="loop_node_one_root"),
            models.CheckConstraint(
                condition=Q(is_root=True, parent__isnull=True) | Q(is_root=False, parent__isnull=False),
                name="loop_node_root_has_no_parent",
            ),
        ]

    def __str__(self) -> str:
        return self.intent[:60]


class Candidate(TimeStampedModel):
    """A divergence candidate. Not-chosen candidates are kept with their rationale."""

    node = models.ForeignKey(PlanNode, on_delete=models.CASCADE, related_name="candidates")
    altitude = models.CharField(max_length=12, choices=Altitude.choices)
    mechanic = models.CharField(max_length=120)  # open set: fair-play mystery, romance engine, quest, ensemble...
    shape = models.TextField(max_length=5000)
    riskiest_assumption = models.TextField(max_length=5000)
    status = models.CharField(max_length=10, choices=CandidateStatus.choices, default=CandidateStatus.PROPOSED)
    rationale = models.TextField(blank=True, max_length=5000)
    proposed_by = models.CharField(max_length=10, choices=WRITER_ROLES)
    untrusted = models.BooleanField(default=False)
    schema_version = schema_version_field()

    class Meta:
        ordering = ["created_at"]
        constraints = [
            enum_check("altitude", Altitude, "loop_candidate_altitude_valid"),
            enum_check("status", CandidateStatus, "loop_candidate_status_valid"),
            models.CheckConstraint(
                condition=~Q(status__in=["rejected", "parked"]) | ~Q(rationale=""),
                name="loop_candidate_not_chosen_has_rationale",
            ),
        ]


class ValidationPlanItem(TimeStampedModel):
    book = models.ForeignKey("discovery.Book", on_delete=models.CASCADE, related_name="loop_validation_plan")
    node = models.ForeignKey(PlanNode, null=True, blank=True, on_delete=models.SET_NULL, related_name="validations")
    assumption = models.TextField(max_length=5000)
    kill_condition = models.TextField(max_length=5000)
    activity = models.TextField(max_length=5000)
    validation_status = models.CharField(
        max_length=12, choices=ValidationStatus.choices, default=ValidationStatus.HYPOTHESIS
    )
    schema_version = schema_version_field()

    class Meta:
        ordering = ["created_at"]
        constraints = [enum_check("validation_status", ValidationStatus, "loop_validation_status_valid")]


# --- Gates: option cards and lens reviews ----------------------------------------


class OptionCard(TimeStampedModel):
    """What the controller puts before the author at a gate or a bound."""

    Kind = CardKind
    Status = CardStatus

    book = models.ForeignKey("discovery.Book", on_delete=models.CASCADE, related_name="loop_cards")
    kind = models.CharField(max_length=10, choices=CardKind.choices, default=CardKind.GATE)
    gate = models.CharField(max_length=4, choices=Gate.choices)
    summary = models.CharField(max_length=500)
    decisions_requested = models.JSONField(default=list)
    recommended = models.CharField(max_length=2000, blank=True)
    reversibility_class = models.CharField(
        max_length=20, choices=Reversibility.choices, default=Reversibility.REVERSIBLE
    )
    artifacts = models.JSONField(default=list, blank=True)  # artifact slugs
    node = models.ForeignKey(PlanNode, null=True, blank=True, on_delete=models.SET_NULL, related_name="cards")
    trace_seed = models.CharField(max_length=100, blank=True)  # the traceability node a cascade starts from
    bound = models.CharField(max_length=20, blank=True)
    proposed_extension = models.JSONField(default=dict, blank=True)
    risk_triggers = models.JSONField(default=list, blank=True)
    payload = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=CardStatus.choices, default=CardStatus.PENDING)
    verdict = models.CharField(max_length=30, blank=True)
    raised_by = models.CharField(max_length=10, choices=WRITER_ROLES, default="sol")
    round = models.PositiveIntegerField(default=0)
    approval = models.OneToOneField(
        "approvals.Approval", null=True, blank=True, on_delete=models.SET_NULL, related_name="option_card"
    )
    schema_version = schema_version_field()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            enum_check("kind", CardKind, "loop_card_kind_valid"),
            enum_check("gate", Gate, "loop_card_gate_valid"),
            enum_check("status", CardStatus, "loop_card_status_valid"),
            enum_check("reversibility_class", Reversibility, "loop_card_reversibility_valid"),
            models.CheckConstraint(
                condition=Q(verdict="") | Q(verdict__in=Verdict.values), name="loop_card_verdict_valid"
            ),
        ]


class LensReview(TimeStampedModel):
    """A lens's review at a gate: findings, each resolved or deferred with a reason."""

    book = models.ForeignKey("discovery.Book", on_delete=models.CASCADE, related_name="loop_reviews")
    lens = models.ForeignKey(RosterEntry, on_delete=models.PROTECT, related_name="reviews")
    gate = models.CharField(max_length=4, choices=Gate.choices)
    round = models.PositiveIntegerField(default=0)
    reviewer_role = models.CharField(max_length=10, choices=WRITER_ROLES)
    summary = models.TextField(blank=True, max_length=5000)
    findings = models.JSONField(default=list)  # [{text, resolution: resolved|deferred, reason}]
    untrusted = models.BooleanField(default=False)
    schema_version = schema_version_field()

    class Meta:
        ordering = ["created_at"]
        constraints = [
            enum_check("gate", Gate, "loop_review_gate_valid"),
            choices_check("reviewer_role", WRITER_ROLES, "loop_review_role_valid"),
        ]
