"""Approvals (what waits for the author) and the hash-chained decision log."""

from __future__ import annotations

import json
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from novelgraph.core.db import AppendOnlyRecord, TimeStampedModel, enum_check


class ApprovalKind(models.TextChoices):
    STORY_CHARTER = "story-charter", "Story charter"
    CANON_PROMOTION = "canon-promotion", "Canon promotion"
    RESEARCH_ADMISSION = "research-admission", "Research admission"
    GATE = "gate", "Gate"
    CODEX_ENTRY = "codex-entry", "Codex entry"


class Verdict(models.TextChoices):
    APPROVE = "approve", "Approve"
    REJECT = "reject", "Reject"
    APPROVE_WITH_CONSTRAINT = "approve-with-constraint", "Approve with constraint"
    REDIRECT = "redirect", "Redirect (steer)"
    EXPLORE_ALTERNATIVES = "explore-alternatives", "Explore alternatives"
    ABANDON = "abandon", "Abandon"
    PARK = "park", "Park (defer)"
    EXTEND = "extend", "Extend (override a bound)"


class Reversibility(models.TextChoices):
    REVERSIBLE = "reversible", "Reversible"
    COSTLY = "costly-to-reverse", "Costly to reverse"
    ONE_WAY_DOOR = "one-way-door", "One-way door"


class Gate(models.TextChoices):
    """The loop's gates, in order (LOOP.md): the one definition every app and page uses."""

    G0 = "G0", "Intake"
    G1 = "G1", "Strategy"
    G1_5 = "G1.5", "Domain and bet"
    G2 = "G2", "Convergence"
    G3 = "G3", "Hand-off"


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DECIDED = "decided", "Decided"
    SUPERSEDED = "superseded", "Superseded (the subject changed)"


class Approval(TimeStampedModel):
    """A decision that waits for the book's author."""

    Status = ApprovalStatus

    book = models.ForeignKey("discovery.Book", on_delete=models.PROTECT, related_name="approvals")
    kind = models.CharField(max_length=20, choices=ApprovalKind.choices)
    subject_type = models.CharField(max_length=30)
    subject_id = models.CharField(max_length=64)
    # A digest of the subject when the approval was requested. If the subject
    # changes afterwards, the approval lapses: the author never decides on a
    # proposal other than the one shown.
    subject_digest = models.CharField(max_length=64)
    gate = models.CharField(max_length=4, choices=Gate.choices, null=True, blank=True)
    summary = models.CharField(max_length=500)
    note = models.TextField(blank=True, max_length=10_000)
    requested_by_role = models.CharField(max_length=10)
    requested_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    reversibility_class = models.CharField(
        max_length=20, choices=Reversibility.choices, default=Reversibility.REVERSIBLE
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    verdict = models.CharField(max_length=30, choices=Verdict.choices, null=True, blank=True)
    rationale = models.TextField(blank=True, max_length=10_000)
    constraint = models.TextField(blank=True, max_length=10_000)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["book", "status"]),
            models.Index(fields=["subject_type", "subject_id"]),
        ]
        constraints = [
            enum_check("kind", ApprovalKind, "approval_kind_valid"),
            enum_check("status", ApprovalStatus, "approval_status_valid"),
            enum_check("reversibility_class", Reversibility, "approval_reversibility_valid"),
            models.CheckConstraint(
                condition=Q(verdict__isnull=True) | Q(verdict__in=Verdict.values),
                name="approval_verdict_valid",
            ),
            # A decided approval names its verdict, its human decider and a rationale.
            models.CheckConstraint(
                condition=~Q(status="decided")
                | (Q(verdict__isnull=False) & Q(decided_by__isnull=False) & ~Q(rationale="")),
                name="approval_decided_complete",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.summary}"


class CanonicalJSONEncoder(json.JSONEncoder):
    """JSON as the decision log's hash recipe writes it: sorted keys, compact, UTF-8."""

    def __init__(self, **kwargs):
        kwargs.update(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        super().__init__(**kwargs)


class CanonicalJSONTextField(models.JSONField):
    """A JSON value kept as its canonical text (sorted keys, compact, UTF-8) in a text column, on every database.

    The decision log's ``detail`` column was one from migration 0009 until 0011 stored each entry whole as its
    hashed text (``DecisionLogEntry.entry``); those migrations' states still name it."""

    def db_type(self, connection) -> str:
        return "text"

    def get_db_prep_value(self, value, connection, prepared=False):
        if not prepared:
            value = self.get_prep_value(value)
        if value is None:
            return None
        if hasattr(value, "as_sql"):
            return value
        return json.dumps(value, cls=self.encoder)


class EntryValue(models.Func):
    """One value of a decision-log entry's hashed text, as the database reads it: the expression a generated
    column of ``DecisionLogEntry`` is computed from (``"$.rationale"`` of ``entry``, and so on).

    The hashed text is the only stored copy of what an entry says, so verification hashes it as it is, and
    the columns that show it (and that queries filter on) cannot say anything else: the database computes
    them, and refuses to be told a value for them."""

    arity = 1

    def __init__(self, key: str, *, output_field):
        self.key = key
        super().__init__(models.F("entry"), output_field=output_field)

    def as_sqlite(self, compiler, connection, **extra):
        path = f"'$.{self.key}'"
        if self.key == "ts":  # the recipe's "YYYY-MM-DDTHH:MM:SS.ffffffZ" as Django's SQLite text
            template = f"replace(substr(json_extract(%(expressions)s, {path}), 1, 26), 'T', ' ')"
        elif self.key == "detail":
            template = f"json(json_extract(%(expressions)s, {path}))"
        else:
            template = f"json_extract(%(expressions)s, {path})"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_postgresql(self, compiler, connection, **extra):
        if self.key == "ts":
            # Immutable, as a generated column must be (a cast of text to a timestamp depends on DateStyle):
            # the recipe's UTC text taken apart into make_timestamp's numbers, then read as UTC.
            text = "((%(expressions)s)::jsonb ->> 'ts')"
            year_to_minute = ", ".join(
                f"substr({text}, {at}, {n})::int" for at, n in ((1, 4), (6, 2), (9, 2), (12, 2), (15, 2))
            )
            template = f"timezone('UTC', make_timestamp({year_to_minute}, substr({text}, 18, 9)::float8))"
        elif self.key == "detail":
            template = "((%(expressions)s)::jsonb -> 'detail')"
        elif self.key == "sequence":
            template = "(((%(expressions)s)::jsonb ->> 'sequence')::integer)"
        else:
            template = f"((%(expressions)s)::jsonb ->> '{self.key}')"
        return self.as_sql(compiler, connection, template=template, **extra)


def _entry_value(key: str, output_field) -> models.GeneratedField:
    return models.GeneratedField(
        expression=EntryValue(key, output_field=output_field), output_field=output_field, db_persist=True
    )


class DecisionLogEntry(AppendOnlyRecord, models.Model):
    """One row of a book's append-only, hash-chained, HMAC-sealed decision log.

    ``entry`` is the entry's canonical text, exactly the bytes its ``hash`` covers (``approvals.chain``): what
    the entry says is stored once, there. Its fields (``ts``, ``decision``, ``rationale``, ``detail``...) are
    columns the database generates from that text, so no one can change what an entry shows without changing
    the hashed text, and verification reads the text and hashes it as it is."""

    append_only = "The decision log is append-only."

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    book = models.ForeignKey("discovery.Book", on_delete=models.PROTECT, related_name="decision_log")
    entry = models.TextField()
    sequence = _entry_value("sequence", models.PositiveIntegerField())
    ts = _entry_value("ts", models.DateTimeField())
    gate = _entry_value("gate", models.CharField(max_length=4, choices=Gate.choices, null=True, blank=True))
    decision = _entry_value("decision", models.CharField(max_length=30, choices=Verdict.choices))
    subject_type = _entry_value("subject_type", models.CharField(max_length=30))
    subject_id = _entry_value("subject_id", models.CharField(max_length=64))
    # "author:<username>" for a person; "controller:sol" for an automatic gate.
    ratified_by = _entry_value("ratified_by", models.CharField(max_length=200))
    ratified_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    reversibility_class = _entry_value(
        "reversibility_class", models.CharField(max_length=20, choices=Reversibility.choices)
    )
    rationale = _entry_value("rationale", models.TextField())
    # Verdict-specific detail (constraint, steer, what was granted, affected slots).
    detail = _entry_value("detail", models.JSONField())
    approval = models.ForeignKey(
        Approval,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="log_entries",
    )
    prev_hash = _entry_value("prev_hash", models.CharField(max_length=64))
    hash = models.CharField(max_length=64)
    seal = models.CharField(max_length=64)
    # Which key of the seal key ring sealed it (approvals.chain.seal_keys); blank before the ring.
    seal_key_id = models.CharField(max_length=16, blank=True, default="", db_default="")

    class Meta:
        ordering = ["book", "sequence"]
        verbose_name_plural = "decision log entries"
        # Verification finds the entry that approved each approved subject (approvals/canon_record.py).
        indexes = [models.Index(fields=["subject_type", "subject_id"], name="decisionlog_subject")]
        constraints = [
            models.UniqueConstraint(fields=["book", "sequence"], name="decisionlog_unique_sequence"),
            # Two entries can never follow the same predecessor: the chain cannot fork.
            models.UniqueConstraint(fields=["book", "prev_hash"], name="decisionlog_no_fork"),
            models.CheckConstraint(condition=Q(sequence__gte=1), name="decisionlog_sequence_positive"),
            # Every field of the recipe is in the entry's text (a generated column is NULL where a key is missing).
            models.CheckConstraint(
                condition=Q(
                    sequence__isnull=False,
                    ts__isnull=False,
                    decision__isnull=False,
                    subject_type__isnull=False,
                    subject_id__isnull=False,
                    ratified_by__isnull=False,
                    reversibility_class__isnull=False,
                    rationale__isnull=False,
                    detail__isnull=False,
                    prev_hash__isnull=False,
                ),
                name="decisionlog_entry_complete",
            ),
            enum_check("decision", Verdict, "decisionlog_decision_valid"),
            enum_check("reversibility_class", Reversibility, "decisionlog_reversibility_valid"),
            models.CheckConstraint(condition=~Q(rationale=""), name="decisionlog_rationale_required"),
            models.CheckConstraint(
                condition=Q(ratified_by_user__isnull=False) | Q(ratified_by__startswith="controller:"),
                name="decisionlog_ratified_by_person_or_controller",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.decision} {self.subject_type}"

    def get_decision_display(self) -> str:
        return Verdict(self.decision).label


class DecisionList(models.TextChoices):
    """The lists a verdict's log entry names capped (its first page, their count, ``<list>_rest``) and records
    here whole, because what they name changes after the verdict."""

    CONTRADICTIONS = "contradictions", "The contradictions with canon a claim verdict resolved"
    SUBTREE_STALE = "subtree_stale", "The plan nodes below the node an abandon verdict abandoned"
    SET_ASIDE = "set_aside", "The candidates an explore-alternatives verdict set aside"


class DecisionListItem(models.Model):
    """One item of a list a verdict recorded, in the order its log entry names them: written with the verdict (in
    its transaction), read by ``GET /approvals/{id}/lists/{list}``. Append-only: the database refuses UPDATE
    and DELETE. The log entry's hash covers the first page it names; this keeps the rest."""

    approval = models.ForeignKey(Approval, on_delete=models.PROTECT, related_name="recorded_items")
    list = models.CharField(max_length=20, choices=DecisionList.choices)
    position = models.PositiveIntegerField()
    value = models.JSONField()

    class Meta:
        ordering = ["approval", "list", "position"]
        constraints = [
            models.UniqueConstraint(fields=["approval", "list", "position"], name="decision_list_item_unique_position"),
            enum_check("list", DecisionList, "decision_list_item_list_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.list}[{self.position}] of {self.approval_id}"
