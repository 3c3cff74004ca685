"""Agent runs: one role doing one task for one book, recorded whether it succeeds or fails.

A run starts from a fresh dossier for its role and writes only through the services the API
calls, as a principal of that role scoped to the book. What it wrote is kept as typed
references (``AgentRunOutput``), so every entry and proposal can say which run produced it.
Writes and rules live in ``discovery.agents.services``.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from discovery.models import Book, ContextDossier
from novelgraph.core.db import TimeStampedModel, enum_check
from novelgraph.core.roles import AgentRole, choices_of


class AgentTask(models.TextChoices):
    NEXT_QUESTION = "next-question", "the next question"
    GUIDANCE = "guidance", "guidance from the library"
    CONTRADICTIONS = "contradictions", "contradictions with canon"
    THRUSTS = "thrusts", "thrust candidates"
    CHARTER = "charter", "a Story Charter draft"
    EXTRACT = "extract", "observations from the author's turns"
    CANON_REVIEW = "canon-review", "the canon-integrity review"
    TRUST_REVIEW = "trust-review", "the reader-trust review"
    BRIEF = "brief", "the decision brief"
    CONTINUITY = "continuity", "the continuity check of a chapter"
    RESEARCH_URL = "research-url", "research collected from a web page"


# Which role does each task: the role's capabilities are the whole of what the run may do.
TASK_ROLE: dict[str, str] = {
    AgentTask.NEXT_QUESTION: AgentRole.SOL,
    AgentTask.GUIDANCE: AgentRole.LUNA,
    AgentTask.CONTRADICTIONS: AgentRole.LUNA,
    AgentTask.THRUSTS: AgentRole.TERRA,
    AgentTask.CHARTER: AgentRole.TERRA,
    AgentTask.EXTRACT: AgentRole.LUNA,
    AgentTask.CANON_REVIEW: AgentRole.TERRA,
    AgentTask.TRUST_REVIEW: AgentRole.LUNA,
    AgentTask.BRIEF: AgentRole.TERRA,
    AgentTask.CONTINUITY: AgentRole.LUNA,
    AgentTask.RESEARCH_URL: AgentRole.LUNA,
}


class RunStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Provider(models.TextChoices):
    OFFLINE = "offline", "Offline (built-in rules)"
    OPENAI_COMPATIBLE = "openai-compatible", "OpenAI-compatible model"


# Who may queue a run: the author, or Sol (discovery:write) handing work on.
REQUESTERS = choices_of("author", "sol")


class AgentRun(TimeStampedModel):
    """One run. ``created_at`` is when it was queued."""

    Status = RunStatus

    book = models.ForeignKey(Book, on_delete=models.PROTECT, related_name="agent_runs")
    role = models.CharField(max_length=10, choices=AgentRole.choices)
    task = models.CharField(max_length=20, choices=AgentTask.choices)
    # The task's input: {"handoff_id": ...} for work handed to Luna or Terra.
    input = models.JSONField(default=dict, blank=True)
    provider = models.CharField(max_length=20, choices=Provider.choices)
    model = models.CharField(max_length=200)
    # The dossier the run started from (taken when it starts), and what it looked up besides.
    dossier = models.ForeignKey(
        ContextDossier, null=True, blank=True, on_delete=models.PROTECT, related_name="agent_runs"
    )
    looked_up = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    reason = models.TextField(blank=True, max_length=5000)
    # What the run did and chose not to do, in plain sentences.
    notes = models.JSONField(default=list, blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_by_role = models.CharField(max_length=10, choices=REQUESTERS)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    task_result_id = models.CharField(max_length=64, blank=True)
    # The worker that claimed the run (``<host>:<pid>:<random>``, see ``workers``): the reap asks whether it still runs.
    worker = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            enum_check("role", AgentRole, "agent_run_role_valid"),
            enum_check("task", AgentTask, "agent_run_task_valid"),
            enum_check("status", RunStatus, "agent_run_status_valid"),
            enum_check("provider", Provider, "agent_run_provider_valid"),
            models.CheckConstraint(
                condition=Q(requested_by_role__in=[value for value, _ in REQUESTERS]),
                name="agent_run_requested_by_role_valid",
            ),
            # Each task belongs to one role.
            models.CheckConstraint(
                condition=Q(
                    *[Q(task=task, role=role) for task, role in TASK_ROLE.items()],
                    _connector=Q.OR,
                ),
                name="agent_run_task_of_its_role",
            ),
            models.CheckConstraint(condition=Q(cost__gte=0), name="agent_run_cost_nonneg"),
            # A failed run says why.
            models.CheckConstraint(condition=~Q(status="failed") | ~Q(reason=""), name="agent_run_failed_has_reason"),
        ]
        indexes = [models.Index(fields=["book", "status"], name="agent_run_book_status")]

    def __str__(self) -> str:
        return f"{self.role} {self.task} ({self.status})"

    @property
    def active(self) -> bool:
        return self.status in (RunStatus.QUEUED, RunStatus.RUNNING)

    @property
    def handoff_id(self) -> str | None:
        return (self.input or {}).get("handoff_id")

    @property
    def written_summary(self) -> str:
        """What the run wrote, counted by kind: "1 question, 2 handoffs, 2 queued runs"."""
        counts: dict[str, int] = {}
        for output in self.outputs.all():
            counts[output.type] = counts.get(output.type, 0) + 1
        return ", ".join(f"{n} {OUTPUT_NAMES[kind][n != 1]}" for kind, n in counts.items())


class OutputType(models.TextChoices):
    ENTRY = "entry", "Scratchpad entry"
    QUESTION = "question", "Question to the author"
    HANDOFF = "handoff", "Handoff"
    APPROVAL = "approval", "Approval request"
    THRUST = "thrust", "Thrust candidate"
    CHARTER = "charter", "Story Charter version"
    CARD = "card", "Option card"
    RUN = "run", "Queued run"
    OBSERVATION = "observation", "Observation"
    REVIEW = "review", "Lens review"
    ARTIFACT = "artifact", "Blackboard slot"
    TRACE = "trace", "Traceability node"
    ROUND = "round", "Round"
    CLAIM = "claim", "Proposed canon claim"
    FINDING = "finding", "Continuity finding"
    RESEARCH = "research", "Proposed research item"


# How each kind of output is counted in a sentence: (one, several).
OUTPUT_NAMES = {
    OutputType.ENTRY: ("scratchpad entry", "scratchpad entries"),
    OutputType.QUESTION: ("question", "questions"),
    OutputType.HANDOFF: ("handoff", "handoffs"),
    OutputType.APPROVAL: ("approval request", "approval requests"),
    OutputType.THRUST: ("thrust candidate", "thrust candidates"),
    OutputType.CHARTER: ("charter version", "charter versions"),
    OutputType.CARD: ("option card", "option cards"),
    OutputType.RUN: ("queued run", "queued runs"),
    OutputType.OBSERVATION: ("observation", "observations"),
    OutputType.REVIEW: ("lens review", "lens reviews"),
    OutputType.ARTIFACT: ("blackboard slot", "blackboard slots"),
    OutputType.TRACE: ("traceability node", "traceability nodes"),
    OutputType.ROUND: ("round closed", "rounds closed"),
    OutputType.CLAIM: ("proposed claim", "proposed claims"),
    OutputType.FINDING: ("continuity finding", "continuity findings"),
    OutputType.RESEARCH: ("proposed research item", "proposed research items"),
}


class AgentRunOutput(models.Model):
    """One thing a run wrote, as a typed reference; looked up by (type, object_id) to attribute it."""

    run = models.ForeignKey(AgentRun, on_delete=models.PROTECT, related_name="outputs")
    type = models.CharField(max_length=20, choices=OutputType.choices)
    object_id = models.CharField(max_length=64)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            enum_check("type", OutputType, "agent_run_output_type_valid"),
            models.UniqueConstraint(fields=["type", "object_id"], name="agent_run_output_written_once"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.object_id}"
