"""Export and import of a book's loop in the seed's file layout.

``<book-slug>/_state/{blackboard,open-questions,traceability,decision-log,meta,plan-tree}.json``
plus the committed artifacts beside ``_state`` (``<book-slug>/<slot>.json`` for the
decision brief, scope boundary, backlog, ...; ``charter.json`` for the latest approved
Story Charter). Every file and every record carries ``schema_version``.

Import replaces the book's loop state with the files' (ids, versions, statuses and
creation times preserved; a record whose id is taken by another book gets a new id,
references remapped). A file or record with an unknown ``schema_version`` is
reported and skipped, never misread. The decision log is append-only and chained to
its book: import verifies nothing into it and leaves the book's own chain as it is
(the exported log is reported, not rewritten).
"""

from __future__ import annotations

import hashlib
import io
import json
import uuid
import zipfile

from django.db import transaction
from django.utils.dateparse import parse_datetime

from approvals.models import DecisionLogEntry
from approvals.services import decision_log_append
from discovery.access import BookAccess, Cap
from discovery.models import Book, StoryCharter
from novelgraph.core.errors import Conflict, Invalid
from novelgraph.core.schemas import S, parse_input

from ..models import (
    GATE_ORDER,
    SCHEMA_VERSION,
    ArtifactStatus,
    BlackboardArtifact,
    Candidate,
    CandidateStatus,
    LensRerun,
    LensReview,
    Lifecycle,
    LoopMeta,
    LoopStatus,
    OpenQuestion,
    OptionCard,
    PlanNode,
    QuestionStatus,
    RosterEntry,
    TraceEdge,
    TraceNode,
    ValidationPlanItem,
)
from ..requirements import AUTHORS_TO_SETTLE
from ..schemas import (
    ArtifactRecord,
    CandidateRecord,
    LoopBounds,
    PlanNodeRecord,
    QuestionRecord,
    TraceEdgeRecord,
    TraceNodeRecord,
    TraceSettingsIn,
    ValidationItemRecord,
)
from ..selectors import loop_state
from ..serializers import HOOK
from .base import lock_meta, refresh

STATE_FILES = ("blackboard", "open-questions", "traceability", "decision-log", "meta", "plan-tree")
COMMITTED_TYPES = {
    "decision-brief",
    "scope-boundary",
    "backlog",
    "domain-framing",
    "journey-map",
    "service-blueprint",
    "charter",
}

# --- Export --------------------------------------------------------------------------


def _dump(value) -> bytes:
    # backslashreplace: a lone surrogate stored before the input rule (issue 30) is written as its JSON escape
    # (valid UTF-8, and an import refuses it by name) instead of failing the whole export.
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"
    return text.encode("utf-8", "backslashreplace")


def _member(name: str) -> zipfile.ZipInfo:
    """A zip member with a fixed timestamp, so the same state always exports to the same bytes."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def loop_export(*, book: Book) -> bytes:
    """The zip of the book's loop (state files plus committed artifacts)."""
    state = loop_state(book)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in STATE_FILES:
            archive.writestr(_member(f"{book.slug}/_state/{name}.json"), _dump(state[name]))
        for artifact in state["blackboard"]["artifacts"]:
            # Only what the author ratified is committed: a proposed brief stays in the blackboard's state.
            if artifact["type"] in COMMITTED_TYPES and artifact["status"] == "ratified":
                archive.writestr(_member(f"{book.slug}/{artifact['id']}.json"), _dump(artifact))
        charter = StoryCharter.objects.filter(book=book, status="approved").order_by("-version").first()
        if charter is not None:
            archive.writestr(
                _member(f"{book.slug}/charter.json"),
                _dump({"schema_version": SCHEMA_VERSION, "version": charter.version, "content": charter.content}),
            )
    return buffer.getvalue()


# --- Import ----------------------------------------------------------------------------


class _Reader:
    """Reads records, reporting and skipping those of an unknown schema_version."""

    def __init__(self):
        self.skipped: list[dict] = []

    def file_ok(self, name: str, data: dict) -> bool:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            self.skipped.append({"file": name, "id": None, "schema_version": version, "reason": "unknown file version"})
            return False
        return True

    def records(self, name: str, items) -> list[dict]:
        kept = []
        for item in items or []:
            if not isinstance(item, dict):
                self.skipped.append({"file": name, "id": None, "schema_version": None, "reason": "not an object"})
                continue
            version = item.get("schema_version")
            if version != SCHEMA_VERSION:
                self.skipped.append(
                    {"file": name, "id": item.get("id"), "schema_version": version, "reason": "unknown schema_version"}
                )
                continue
            kept.append(item)
        return kept


def _uuid_map(model, ids: list[str]) -> dict[str, uuid.UUID]:
    """Keep each id unless another row already holds it."""
    wanted = {}
    for raw in ids:
        try:
            wanted[raw] = uuid.UUID(str(raw))
        except ValueError:
            wanted[raw] = uuid.uuid4()
    taken = set(model.objects.filter(pk__in=list(wanted.values())).values_list("pk", flat=True))
    return {raw: (uuid.uuid4() if value in taken else value) for raw, value in wanted.items()}


def _created(objs_and_times: list[tuple], model) -> None:
    objs = []
    for obj, when in objs_and_times:
        parsed = parse_datetime(when) if isinstance(when, str) else None
        if parsed is not None:
            obj.created_at = parsed
            objs.append(obj)
    if objs:
        model.objects.bulk_update(objs, ["created_at"])


def _read_zip(data: bytes) -> dict[str, dict]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise Invalid("not a zip file", field="file") from None
    files: dict[str, dict] = {}
    for info in archive.infolist():
        parts = info.filename.split("/")
        if len(parts) == 3 and parts[1] == "_state" and parts[2].endswith(".json"):
            name = parts[2][: -len(".json")]
            if name in STATE_FILES:
                if info.file_size > 50 * 1024 * 1024:
                    raise Invalid(f"{info.filename} is too large", field="file")
                try:
                    files[name] = json.loads(archive.read(info).decode())
                except (ValueError, UnicodeDecodeError):
                    raise Invalid(f"{info.filename} is not JSON", field="file") from None
    if not files:
        raise Invalid("no <book-slug>/_state/*.json files in the zip", field="file")
    return files


def _wipe(book: Book) -> None:
    """Clear a loop that has not started (nothing in it was decided) before the import lands."""
    LensRerun.objects.filter(book=book).delete()
    LensReview.objects.filter(book=book).delete()
    ValidationPlanItem.objects.filter(book=book).delete()
    PlanNode.objects.filter(book=book).update(selection=None)
    Candidate.objects.filter(node__book=book).delete()
    for depth in sorted(set(PlanNode.objects.filter(book=book).values_list("depth", flat=True)), reverse=True):
        PlanNode.objects.filter(book=book, depth=depth).delete()
    TraceEdge.objects.filter(book=book).delete()
    TraceNode.objects.filter(book=book).delete()
    BlackboardArtifact.objects.filter(book=book).delete()
    OpenQuestion.objects.filter(book=book).delete()


# --- Validation of imported records: the same rules as every other write, 422 naming the field --------------
def _record(schema: type[S], item: dict, where: str) -> S:
    """One record of the file, validated by the schema of the write that makes such a record in a book
    (``schemas.ArtifactRecord``...): a 422 names ``file:<where>.<field>`` with the API's reason."""
    return parse_input(schema, item, at=where, field_prefix="file:")


class _Check:
    """Where in the file a record is, to name it in a refusal."""

    def __init__(self, file: str, index: int | None = None):
        self.where = file if index is None else f"{file}[{index}]"

    def fail(self, name: str, message: str):
        raise Invalid(f"{self.where}.{name}: {message}", field=f"file:{self.where}.{name}")


def _require_unstarted(book: Book, meta: LoopMeta) -> None:
    """An import lands only in a loop that has not started: nothing in it was decided, so nothing is lost."""
    reasons = []
    if meta.gate != GATE_ORDER[0]:
        reasons.append(f"the loop is at {meta.gate}")
    if OptionCard.objects.filter(book=book).exists():
        reasons.append("option cards have been raised")
    if BlackboardArtifact.objects.filter(book=book, status=ArtifactStatus.RATIFIED).exists():
        reasons.append("slots have been ratified")
    if meta.constraints:
        reasons.append("the author has recorded constraints")
    # An earlier import of hers brought only proposed material, so it does not count as a start.
    if DecisionLogEntry.objects.filter(book=book, subject_type__in=LOOP_DECISIONS).exists():
        reasons.append("the decision log holds loop decisions")
    if reasons:
        raise Conflict(
            "an import lands only in a loop that has not started: " + "; ".join(reasons),
            code="loop_started",
            reasons=reasons,
        )


LOOP_DECISIONS = ("loop-option-card", "loop-question")


def loop_import(*, access: BookAccess, data: bytes) -> dict:
    """The author imports an exported loop into her book's loop that has not started (see the module doc).

    Everything lands as proposed material: ratified slots come in proposed, ratified plan nodes converging,
    conflicts the file calls resolved come in surfaced to the author; option cards, lens reviews, re-runs
    and the file's decision log are reported, not imported. The gate and the status are re-derived from
    this book's own state (G0); the round, the cost spent and the author's constraints stay the book's.
    The import is one decision-log row, the author's. Agents, editors and staff are refused (403).
    """
    access.require(Cap.DISCOVERY_READ)
    access.require_author()
    book = access.book
    files = _read_zip(data)
    for name, content in files.items():
        if not isinstance(content, dict):
            raise Invalid(f"{name}.json must hold an object", field=f"file:{name}")
    reader = _Reader()
    ok = {name: (name in files and reader.file_ok(name, files[name])) for name in STATE_FILES}
    counts: dict[str, int] = {}
    downgraded: list[str] = []
    with transaction.atomic():
        meta = lock_meta(book)
        _require_unstarted(book, meta)
        _wipe(book)
        if ok["meta"]:
            check = _Check("meta")
            # Only the bounds are the file's (LoopBounds: each in its field's range); the counters (round, cost
            # spent), the gate, the status, saturation and the author's constraints come from this book's own
            # decisions.
            for name, value in _record(LoopBounds, files["meta"], check.where).model_dump(exclude_unset=True).items():
                setattr(meta, name, value)
            if meta.round_cap <= meta.round:
                check.fail("round_cap", f"must exceed the book's completed rounds ({meta.round})")
            if meta.cost_budget <= meta.cost_spent:
                check.fail("cost_budget", f"must exceed the book's cost spent ({meta.cost_spent:g})")
            meta.save()
            skipped_cards = reader.records("meta", files["meta"].get("option_cards"))
            for c in skipped_cards:
                reader.skipped.append(
                    {"file": "meta", "id": c.get("id"), "reason": "option cards are raised in this book, not imported"}
                )
        # Blackboard first (trace nodes point at slots).
        if ok["blackboard"]:
            bb = files["blackboard"]
            items = reader.records("blackboard", bb.get("artifacts"))
            made = []
            seen = set()
            for i, item in enumerate(items):
                check = _Check("blackboard.artifacts", i)
                record = _record(ArtifactRecord, item, check.where)
                slug = record.slug
                if slug in seen:
                    check.fail("id", f"slot {slug!r} appears twice")
                seen.add(slug)
                status = record.status
                if status != ArtifactStatus.DRAFT:
                    if status != ArtifactStatus.PROPOSED:
                        downgraded.append(f"slot {slug}: {status} -> proposed")
                    status = ArtifactStatus.PROPOSED
                produced_by, lens = record.produced_by, record.lens
                if lens and not RosterEntry.objects.filter(slug=lens).exists():
                    check.fail("lens", f"unknown lens {lens!r}")
                made.append(
                    (
                        BlackboardArtifact.objects.create(
                            book=book,
                            slug=slug,
                            type=record.type,
                            status=status,
                            version=record.version,
                            produced_by=produced_by,
                            lens=lens,
                            path=record.path,
                            round_last_touched=min(meta.round, record.round_last_touched),
                            untrusted=True if produced_by in {"terra", "luna"} else record.untrusted,
                            data_class=record.data_class,
                            content=record.content,
                        ),
                        item.get("created_at"),
                    )
                )
            by_slug = {obj.slug: obj for obj, _ in made}
            for obj, _ in made:
                parent = next((i.get("parent_id") for i in items if i.get("id") == obj.slug), None)
                if parent and parent in by_slug and parent != obj.slug:
                    obj.parent = by_slug[parent]
                    obj.save(update_fields=["parent"])
            _created(made, BlackboardArtifact)
            counts["artifacts"] = len(made)
            for key, what in (("lens_reviews", "a lens review is filed by its lens in this book"),
                              ("reruns", "re-runs are queued by this book's own verdicts and cascades")):  # fmt: skip
                for r in reader.records("blackboard", bb.get(key)):
                    reader.skipped.append({"file": "blackboard", "id": r.get("id"), "reason": what})
        if ok["open-questions"]:
            items = reader.records("open-questions", files["open-questions"].get("questions"))
            ids = _uuid_map(OpenQuestion, [str(q.get("id")) for q in items])
            made = []
            for i, q in enumerate(items):
                check = _Check("open-questions.questions", i)
                record = _record(QuestionRecord, q, check.where)
                kind, status, resolution, ref = record.kind, record.status, record.resolution, record.resolution_ref
                if status == QuestionStatus.RESOLVED and kind in AUTHORS_TO_SETTLE:
                    downgraded.append(f"question {q.get('id')}: a {kind} resolved in the file -> surfaced")
                    status, resolution, ref = QuestionStatus.SURFACED, "", ""
                elif status == QuestionStatus.RESOLVED and not (resolution and ref):
                    check.fail("resolution", "a resolved question cites what settles it")
                made.append(
                    (
                        OpenQuestion.objects.create(
                            id=ids[str(q.get("id"))],
                            book=book,
                            kind=kind,
                            raised_by=record.raised_by,
                            target_discipline="author"
                            if kind in AUTHORS_TO_SETTLE and status == QuestionStatus.SURFACED
                            else record.target_discipline,
                            question=record.question,
                            status=status,
                            resolution=resolution,
                            resolution_ref=ref,
                            resolved_by="import" if status == QuestionStatus.RESOLVED else "",
                            round=min(meta.round, record.round),
                            untrusted=record.untrusted,
                        ),
                        q.get("created_at"),
                    )
                )
            _created(made, OpenQuestion)
            counts["questions"] = len(made)
        if ok["traceability"]:
            tr = files["traceability"]
            settings = _record(TraceSettingsIn, tr, "traceability")
            meta.trace_root = settings.root or meta.trace_root
            meta.leaf_kind = settings.leaf_kind or meta.leaf_kind
            meta.save()
            slots = {a.slug: a for a in BlackboardArtifact.objects.filter(book=book)}
            made = []
            seen = set()
            for i, n in enumerate(reader.records("traceability", tr.get("nodes"))):
                check = _Check("traceability.nodes", i)
                record = _record(TraceNodeRecord, n, check.where)
                node_id = record.node_id
                if node_id in seen:
                    check.fail("id", f"node {node_id!r} appears twice")
                seen.add(node_id)
                made.append(
                    (
                        TraceNode.objects.create(
                            book=book,
                            node_id=node_id,
                            kind=record.kind,
                            label=record.label,
                            backed_by=record.backed_by,
                            artifact=slots.get(record.artifact or ""),
                            produced_by=record.produced_by,
                            status=record.status,
                            status_reason=record.status_reason,
                        ),
                        n.get("created_at"),
                    )
                )
            _created(made, TraceNode)
            counts["trace_nodes"] = len(made)
            edges = reader.records("traceability", tr.get("edges"))
            ids = _uuid_map(TraceEdge, [str(e.get("id")) for e in edges])
            made = []
            active_pairs = set()
            for i, e in enumerate(edges):
                check = _Check("traceability.edges", i)
                record = _record(TraceEdgeRecord, e, check.where)
                a, b, active = record.from_id, record.to_id, record.active
                if active and (a, b) in active_pairs:
                    check.fail("from", f"the active edge {a} -> {b} appears twice")
                if active:
                    active_pairs.add((a, b))
                made.append(
                    (
                        TraceEdge.objects.create(
                            id=ids[str(e.get("id"))],
                            book=book,
                            from_id=a,
                            to_id=b,
                            active=active,
                            inactive_reason=record.inactive_reason,
                        ),
                        e.get("created_at"),
                    )
                )
            _created(made, TraceEdge)
            counts["trace_edges"] = len(made)
        if ok["plan-tree"]:
            counts.update(_import_plan(book, files["plan-tree"], reader, downgraded))
        if not PlanNode.objects.filter(book=book, is_root=True).exists():
            PlanNode.objects.create(book=book, is_root=True, intent=(book.premise or book.title)[:5000])
        if ok["decision-log"]:
            entries = reader.records("decision-log", files["decision-log"].get("entries"))
            counts["decision_log_entries"] = len(entries)
            if entries:
                reader.skipped.append(
                    {"file": "decision-log", "id": None,
                     "reason": f"{len(entries)} decision(s) of the exported book: reported, never imported"}
                )  # fmt: skip
        # Gate and status come from this book's own state, never from the file.
        meta.gate = GATE_ORDER[0]
        meta.status = LoopStatus.WORKING
        meta.bound = ""
        meta.save()
        meta.refresh_from_db()
        refresh(meta)
        entry = decision_log_append(
            book=book,
            decision="approve",
            subject_type="loop-import",
            subject_id=book.pk,
            rationale="The author imported loop material into a loop that had not started; it lands as proposed.",
            ratified_by_user=access.user,
            gate=meta.gate,
            detail={
                "imported": counts,
                "skipped": len(reader.skipped),
                # What the import downgraded is answered whole to the uploader and stored nowhere else: the entry
                # keeps the first 200 and says how many there were.
                "downgraded": downgraded[:200],
                "downgraded_count": len(downgraded),
                "digest": hashlib.sha256(data).hexdigest(),
            },
        )
    return {
        "imported": counts,
        "skipped": reader.skipped,
        "downgraded": downgraded,
        "decision_sequence": entry.sequence,
    }


def _import_plan(book: Book, plan: dict, reader: _Reader, downgraded: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    items = reader.records("plan-tree", plan.get("nodes"))
    node_ids = _uuid_map(PlanNode, [str(n.get("id")) for n in items])
    cand_items = [(n, c) for n in items for c in reader.records("plan-tree", n.get("candidates"))]
    cand_ids = _uuid_map(Candidate, [str(c.get("id")) for _, c in cand_items])
    created: dict[uuid.UUID, PlanNode] = {}
    made = []
    roots = [n for n in items if n.get("is_root") is True]
    if len(roots) > 1:
        _Check("plan-tree.nodes").fail("is_root", "a plan-tree has one root")
    pending = list(items)
    # Parents before children, whatever depth the file claims (the depth is recomputed).
    while pending:
        progressed = False
        for n in list(pending):
            i = items.index(n)
            check = _Check("plan-tree.nodes", i)
            is_root = n.get("is_root") is True
            parent = None
            if not is_root:
                parent = created.get(node_ids.get(str(n.get("parent_id")) or ""))
                if parent is None:
                    continue
            pending.remove(n)
            progressed = True
            record = _record(PlanNodeRecord, n, check.where)
            lifecycle = record.lifecycle
            if lifecycle == Lifecycle.RATIFIED:
                downgraded.append(f"plan node {n.get('id')}: ratified -> converging")
                lifecycle = Lifecycle.CONVERGING
            obj = PlanNode.objects.create(
                id=node_ids[str(n.get("id"))],
                book=book,
                parent=parent,
                is_root=is_root,
                depth=0 if is_root else parent.depth + 1,
                intent=record.intent,
                altitude=record.altitude,
                lifecycle=lifecycle,
                validation_status=record.validation_status,
                sub_idea=record.sub_idea,
                round_cap=record.round_cap,
                **{name: getattr(record.validation_hook, name) for name in HOOK},
                produced_by=record.produced_by,
            )
            created[obj.pk] = obj
            made.append((obj, n.get("created_at")))
        if not progressed:
            for n in pending:
                reader.skipped.append({"file": "plan-tree", "id": n.get("id"), "reason": "its parent was skipped"})
            break
    _created(made, PlanNode)
    counts["plan_nodes"] = len(made)
    made_c = []
    for n, c in cand_items:
        node_pk = node_ids[str(n.get("id"))]
        if node_pk not in created:
            continue
        check = _Check("plan-tree.candidates", len(made_c))
        record = _record(CandidateRecord, c, check.where)
        status, rationale = record.status, record.rationale
        if status in {CandidateStatus.REJECTED, CandidateStatus.PARKED} and not rationale:
            check.fail("rationale", "a candidate not chosen keeps its rationale")
        made_c.append(
            (
                Candidate.objects.create(
                    id=cand_ids[str(c.get("id"))],
                    node_id=node_pk,
                    altitude=record.altitude,
                    mechanic=record.mechanic,
                    shape=record.shape,
                    riskiest_assumption=record.riskiest_assumption,
                    status=status,
                    rationale=rationale,
                    proposed_by=record.proposed_by,
                    untrusted=record.untrusted,
                ),
                c.get("created_at"),
            )
        )
    _created(made_c, Candidate)
    counts["candidates"] = len(made_c)
    for n in items:
        node_pk = node_ids[str(n.get("id"))]
        sel = n.get("selection")
        if (
            sel
            and str(sel) in cand_ids
            and node_pk in created
            and Candidate.objects.filter(pk=cand_ids[str(sel)], node_id=node_pk).exists()
        ):
            PlanNode.objects.filter(pk=node_pk).update(selection_id=cand_ids[str(sel)])
    vitems = reader.records("plan-tree", plan.get("validation_plan"))
    vids = _uuid_map(ValidationPlanItem, [str(v.get("id")) for v in vitems])
    made = []
    for i, v in enumerate(vitems):
        record = _record(ValidationItemRecord, v, f"plan-tree.validation_plan[{i}]")
        node_pk = node_ids.get(str(v.get("node") or ""))
        made.append(
            (
                ValidationPlanItem.objects.create(
                    id=vids[str(v.get("id"))],
                    book=book,
                    node_id=node_pk if node_pk in created else None,
                    **{name: getattr(record, name) for name in HOOK},
                    validation_status=record.validation_status,
                ),
                v.get("created_at"),
            )
        )
    _created(made, ValidationPlanItem)
    counts["validation_plan"] = len(made)
    return counts
