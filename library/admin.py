"""Staff curate the library here: sources with their chunks, an import form, re-indexing.

Topics and applicability are edited as comma-separated lists; research items are
read-only (admission is the author's verdict, never an admin edit).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from novelgraph.core.auth import principal_for_user
from novelgraph.core.errors import DomainError
from novelgraph.core.schemas import parse_form

from . import services
from .models import KnowledgeChunk, KnowledgeSource, ResearchItem
from .schemas import MAX_IMPORT_CHARS, SourceImportIn, labels

LIST_HELP = "Comma-separated, e.g. “scene, pacing, plot”. Blank entries and repeats are dropped."


class CommaListField(forms.CharField):
    """A JSON list of short labels edited as comma-separated text (round-trips both ways)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("help_text", LIST_HELP)
        kwargs.setdefault("widget", forms.TextInput(attrs={"size": 60}))
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, list):
            return ", ".join(str(item) for item in value)
        return value

    def to_python(self, value):
        if isinstance(value, list):
            return value
        try:
            return labels(super().to_python(value) or "", self.label or "list")
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from exc


class ChunkForm(forms.ModelForm):
    topics = CommaListField(label="Topics")
    applicability = CommaListField(label="Applicability", help_text="Where it applies, e.g. “general, mystery”.")

    class Meta:
        model = KnowledgeChunk
        fields = ["position", "citation", "content", "topics", "applicability"]


class ChunkInline(admin.StackedInline):
    model = KnowledgeChunk
    form = ChunkForm
    extra = 0
    fields = ["position", "citation", "content", "topics", "applicability"]


class ImportForm(forms.Form):
    file = forms.FileField(help_text="A Markdown (.md) or plain-text (.txt) file in UTF-8.")
    title = forms.CharField(max_length=300)
    origin = forms.CharField(max_length=300, help_text="Where it comes from: a publisher, a URL, “in-house”.")
    license_note = forms.CharField(max_length=500, label="Licence note")
    version = forms.CharField(max_length=50, initial="1.0")
    topics = CommaListField(label="Topics", help_text=f"Given to every chunk. {LIST_HELP}")
    applicability = CommaListField(label="Applicability", initial=["general"])

    def clean_file(self):
        upload = self.cleaned_data["file"]
        name = (upload.name or "").lower()
        if not name.endswith((".md", ".markdown", ".txt")):
            raise forms.ValidationError("Upload a .md or .txt file.")
        if upload.size > MAX_IMPORT_CHARS:
            raise forms.ValidationError("The file is larger than 5 MB.")
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise forms.ValidationError("The file is not UTF-8 text.") from None


@admin.register(KnowledgeSource)
class KnowledgeSourceAdmin(admin.ModelAdmin):
    list_display = ["title", "origin", "version", "license_note", "chunk_count", "created_at"]
    list_filter = ["origin", "license_note", "version"]
    search_fields = ["title", "origin", "chunks__citation", "chunks__content"]
    inlines = [ChunkInline]
    actions = ["reindex_sources"]
    change_list_template = "admin/library/knowledgesource/change_list.html"

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_chunks=Count("chunks"))

    @admin.display(description="Chunks", ordering="_chunks")
    def chunk_count(self, obj) -> int:
        return obj._chunks

    @admin.action(description="Re-index the selected sources in search")
    def reindex_sources(self, request: HttpRequest, queryset) -> None:
        try:
            report = services.source_reindex(
                principal=principal_for_user(request.user), source_ids=list(queryset.values_list("pk", flat=True))
            )
        except DomainError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        self.message_user(
            request, f"Re-indexed {report.chunks} chunks of {queryset.count()} sources (search mode: {report.mode})."
        )

    def get_urls(self):
        return [
            path("import/", self.admin_site.admin_view(self.import_view), name="library_knowledgesource_import"),
            *super().get_urls(),
        ]

    def import_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                payload = parse_form(SourceImportIn, {**data, "text": data["file"]})
                source = services.source_import(principal=principal_for_user(request.user), payload=payload)
            except DomainError as exc:
                field = exc.field if exc.field in form.fields else None
                form.add_error(field, exc.message)
            else:
                count = source.chunks.count()
                self.message_user(request, f"Imported “{source.title}” as {count} cited chunks.")
                return HttpResponseRedirect(reverse("admin:library_knowledgesource_change", args=[source.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": "Import a document into the library",
            "form": form,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/library/knowledgesource/import.html", context)


@admin.register(KnowledgeChunk)
class KnowledgeChunkAdmin(admin.ModelAdmin):
    form = ChunkForm
    list_display = ["citation", "source", "position", "topic_list", "applicability_list"]
    list_filter = ["source__origin", "source"]
    search_fields = ["citation", "content", "source__title"]
    list_select_related = ["source"]
    fields = ["source", "position", "citation", "content", "topics", "applicability"]

    @admin.display(description="Topics")
    def topic_list(self, obj) -> str:
        return ", ".join(map(str, obj.topics or []))

    @admin.display(description="Applicability")
    def applicability_list(self, obj) -> str:
        return ", ".join(map(str, obj.applicability or []))


@admin.register(ResearchItem)
class ResearchItemAdmin(admin.ModelAdmin):
    """Read-only: research is admitted or rejected only by the book's author, with a rationale."""

    list_display = ["title", "book", "status", "proposed_by", "created_at"]
    list_filter = ["status"]
    search_fields = ["title", "url", "claim", "citation"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
