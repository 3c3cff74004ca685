"""The literary library (seed 001): sources, their cited chunks, and research items.

The chunk table is canonical. Search indexes (SQLite FTS5, PostgreSQL tsvector) are
derived from it by database triggers and can be rebuilt at any time.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from novelgraph.core.db import TimeStampedModel, enum_check


class KnowledgeSource(TimeStampedModel):
    """One coherent origin: an edition, article, note set."""

    title = models.CharField(max_length=300)
    origin = models.CharField(max_length=300, db_index=True)
    license_note = models.CharField(max_length=500)
    version = models.CharField(max_length=50)

    class Meta:
        ordering = ["title"]
        constraints = [
            models.UniqueConstraint(
                fields=["origin", "title", "version"],
                name="source_unique_origin_title_version",
            )
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.version})"


class KnowledgeChunk(TimeStampedModel):
    source = models.ForeignKey(KnowledgeSource, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField(default=0)
    content = models.TextField(max_length=100_000)
    topics = models.JSONField(default=list, blank=True)
    applicability = models.JSONField(default=list, blank=True)
    citation = models.CharField(max_length=500)

    class Meta:
        ordering = ["source", "position", "created_at"]

    def __str__(self) -> str:
        return self.citation


class ResearchItemStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ADMITTED = "admitted", "Admitted"
    REJECTED = "rejected", "Rejected"


class ResearchItem(TimeStampedModel):
    """Factual research for a book. Pending until the author admits it with a rationale."""

    Status = ResearchItemStatus

    book = models.ForeignKey("discovery.Book", on_delete=models.PROTECT, related_name="research_items")
    proposed_by = models.CharField(max_length=10)
    proposed_by_user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    url = models.URLField(max_length=2000)
    title = models.CharField(max_length=300)
    excerpt = models.TextField(blank=True, max_length=20_000)
    source_snapshot = models.TextField(blank=True, max_length=100_000)
    # SHA-256 (hex) of source_snapshot as stored, when the server collected the page itself (research from a URL).
    source_sha256 = models.CharField(max_length=64, blank=True, default="")
    claim = models.TextField(max_length=10_000)
    citation = models.CharField(max_length=500)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    approval = models.ForeignKey(
        "approvals.Approval",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            enum_check("status", ResearchItemStatus, "research_status_valid"),
            models.CheckConstraint(
                condition=Q(url__startswith="http://") | Q(url__startswith="https://"),
                name="research_url_http",
            ),
            models.CheckConstraint(
                condition=Q(status="pending") | Q(approval__isnull=False),
                name="research_decided_has_approval",
            ),
        ]

    def __str__(self) -> str:
        return self.title
