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

import io
import json
import uuid
import zipfile
from datetime import datetime

from django.db import transaction
from django.utils.dateparse import parse_datetime

from approvals.chain import format_ts
from approvals.models import Approval
from approvals.selectors import decision_log_for
from discovery.access import BookAccess
from discovery.models import Book, StoryCharter
from novelgraph.errors import Invalid

from ..models import (
    SCHEMA_VERSION,
    BlackboardArtifact,
    Candidate,
    LensRerun,
    LensReview,
    LoopMeta,
    OpenQuestion,
    OptionCard,
    PlanNode,
    RosterEntry,
    TraceEdge,
    TraceNode,
    ValidationPlanItem,
)
from .base import controller_book, lock_meta, refresh

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
META_FIELDS = (
    "round",
    "round_cap",
    "cost_budget",
    "cost_spent",
    "gate",
    "status",
    "saturation",
    "max_depth",
    "max_breadth",
    "concentration",
    "bound",
    "trace_root",
    "leaf_kind",
    "round_invalidated",
    "last_round_clean",
    "constraints",
)


def _ts(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _id(value) -> str | None:
    return str(value) if value else None


# --- Export --------------------------------------------------------------------------


def loop_state(book: Book) -> dict[str, dict]:
    """The six state files as dicts (also used by tests to compare round trips)."""
    meta = LoopMeta.objects.get(book=book)
    artifacts = list(BlackboardArtifact.objects.filter(book=book).select_related("parent").order_by("slug"))
    blackboard = {
        "schema_version": SCHEMA_VERSION,
        "artifacts": [
            {
                "schema_version": a.schema_version,
                "id": a.slug,
                "type": a.type,
                "status": a.status,
                "version": a.version,
                "produced_by": a.produced_by,
                "lens": a.lens,
                "path": a.path,
                "parent_id": a.parent.slug if a.parent_id else None,
                "round_last_touched": a.round_last_touched,
                "stale_reason": a.stale_reason,
                "untrusted": a.untrusted,
                "data_class": a.data_class,
                "content": a.content,
                "created_at": _ts(a.created_at),
            }
            for a in artifacts
        ],
        "lens_reviews": [
            {
                "schema_version": r.schema_version,
                "id": str(r.pk),
                "lens": r.lens_id,
                "gate": r.gate,
                "round": r.round,
                "reviewer_role": r.reviewer_role,
                "summary": r.summary,
                "findings": r.findings,
                "untrusted": r.untrusted,
                "created_at": _ts(r.created_at),
            }
            for r in LensReview.objects.filter(book=book).order_by("created_at", "id")
        ],
        "reruns": [
            {
                "schema_version": r.schema_version,
                "id": str(r.pk),
                "lens": r.lens,
                "artifacts": r.artifacts,
                "reason": r.reason,
                "status": r.status,
                "cost": r.cost,
                "round": r.round,
                "created_at": _ts(r.created_at),
            }
            for r in LensRerun.objects.filter(book=book).order_by("created_at", "id")
        ],
    }
    questions = {
        "schema_version": SCHEMA_VERSION,
        "questions": [
            {
                "schema_version": q.schema_version,
                "id": str(q.pk),
                "kind": q.kind,
                "raised_by": q.raised_by,
                "target_discipline": q.target_discipline,
                "question": q.question,
                "status": q.status,
                "resolution": q.resolution,
                "resolution_ref": q.resolution_ref,
                "round": q.round,
                "untrusted": q.untrusted,
                "created_at": _ts(q.created_at),
            }
            for q in OpenQuestion.objects.filter(book=book).order_by("created_at", "id")
        ],
    }
    traceability = {
        "schema_version": SCHEMA_VERSION,
        "root": meta.trace_root,
        "leaf_kind": meta.leaf_kind,
        "nodes": [
            {
                "schema_version": n.schema_version,
                "id": n.node_id,
                "kind": n.kind,
                "label": n.label,
                "backed_by": n.backed_by,
                "artifact": n.artifact.slug if n.artifact_id else None,
                "produced_by": n.produced_by,
                "status": n.status,
                "status_reason": n.status_reason,
                "created_at": _ts(n.created_at),
            }
            for n in TraceNode.objects.filter(book=book).select_related("artifact").order_by("created_at", "node_id")
        ],
        "edges": [
            {
                "schema_version": e.schema_version,
                "id": str(e.pk),
                "from": e.from_id,
                "to": e.to_id,
                "active": e.active,
                "inactive_reason": e.inactive_reason,
                "created_at": _ts(e.created_at),
            }
            for e in TraceEdge.objects.filter(book=book).order_by("created_at", "id")
        ],
    }
    log = {
        "schema_version": SCHEMA_VERSION,
        "book_id": str(book.pk),
        "entries": [
            {
                "schema_version": SCHEMA_VERSION,
                "sequence": e.sequence,
                "ts": format_ts(e.ts),
                "gate": e.gate,
                "decision": e.decision,
                "subject_type": e.subject_type,
                "subject_id": e.subject_id,
                "ratified_by": e.ratified_by,
                "reversibility_class": e.reversibility_class,
                "rationale": e.rationale,
                "detail": e.detail,
                "prev_hash": e.prev_hash,
                "hash": e.hash,
                "seal": e.seal,
            }
            for e in decision_log_for(book)
        ],
    }
    meta_file = {
        "schema_version": meta.schema_version,
        **{name: getattr(meta, name) for name in META_FIELDS},
        "option_cards": [
            {
                "schema_version": c.schema_version,
                "id": str(c.pk),
                "kind": c.kind,
                "gate": c.gate,
                "summary": c.summary,
                "decisions_requested": c.decisions_requested,
                "recommended": c.recommended,
                "reversibility_class": c.reversibility_class,
                "artifacts": c.artifacts,
                "node": _id(c.node_id),
                "trace_seed": c.trace_seed,
                "bound": c.bound,
                "proposed_extension": c.proposed_extension,
                "risk_triggers": c.risk_triggers,
                "payload": c.payload,
                "status": c.status,
                "verdict": c.verdict,
                "raised_by": c.raised_by,
                "round": c.round,
                "approval_id": _id(c.approval_id),
                "created_at": _ts(c.created_at),
            }
            for c in OptionCard.objects.filter(book=book).order_by("created_at", "id")
        ],
    }
    nodes = list(PlanNode.objects.filter(book=book).order_by("depth", "created_at", "id"))
    root = next((n for n in nodes if n.is_root), None)
    plan = {
        "schema_version": SCHEMA_VERSION,
        "root": _id(root.pk if root else None),
        "sub_ideas": {
            state: [str(n.pk) for n in nodes if n.sub_idea == state and not n.is_root]
            for state in ("open", "parked", "done")
        },
        "nodes": [
            {
                "schema_version": n.schema_version,
                "id": str(n.pk),
                "parent_id": _id(n.parent_id),
                "is_root": n.is_root,
                "depth": n.depth,
                "intent": n.intent,
                "altitude": n.altitude,
                "lifecycle": n.lifecycle,
                "validation_status": n.validation_status,
                "sub_idea": n.sub_idea,
                "round": n.round,
                "round_cap": n.round_cap,
                "cost_spent": n.cost_spent,
                "selection": _id(n.selection_id),
                "produced_by": n.produced_by,
                "validation_hook": {
                    "assumption": n.assumption,
                    "kill_condition": n.kill_condition,
                    "activity": n.activity,
                },
                "created_at": _ts(n.created_at),
                "candidates": [
                    {
                        "schema_version": c.schema_version,
                        "id": str(c.pk),
                        "altitude": c.altitude,
                        "mechanic": c.mechanic,
                        "shape": c.shape,
                        "riskiest_assumption": c.riskiest_assumption,
                        "status": c.status,
                        "rationale": c.rationale,
                        "proposed_by": c.proposed_by,
                        "untrusted": c.untrusted,
                        "created_at": _ts(c.created_at),
                    }
                    for c in n.candidates.order_by("created_at", "id")
                ],
            }
            for n in nodes
        ],
        "validation_plan": [
            {
                "schema_version": v.schema_version,
                "id": str(v.pk),
                "node": _id(v.node_id),
                "assumption": v.assumption,
                "kill_condition": v.kill_condition,
                "activity": v.activity,
                "validation_status": v.validation_status,
                "created_at": _ts(v.created_at),
            }
            for v in ValidationPlanItem.objects.filter(book=book).order_by("created_at", "id")
        ],
    }
    return {
        "blackboard": blackboard,
        "open-questions": questions,
        "traceability": traceability,
        "decision-log": log,
        "meta": meta_file,
        "plan-tree": plan,
    }


def _dump(value) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode()


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
    OptionCard.objects.filter(book=book).delete()
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


def loop_import(*, access: BookAccess, data: bytes) -> dict:
    """Replace the book's loop state from an export (controller only). Returns counts and what was skipped."""
    book, _ = controller_book(access)
    files = _read_zip(data)
    reader = _Reader()
    ok = {name: (name in files and reader.file_ok(name, files[name])) for name in STATE_FILES}
    counts: dict[str, int] = {}
    with transaction.atomic():
        meta = lock_meta(book)
        _wipe(book)
        if ok["meta"]:
            for name in META_FIELDS:
                if name in files["meta"]:
                    setattr(meta, name, files["meta"][name])
            meta.save()
        # Blackboard first (trace nodes and cards point at slots).
        if ok["blackboard"]:
            bb = files["blackboard"]
            items = reader.records("blackboard", bb.get("artifacts"))
            made = []
            for item in items:
                made.append(
                    (
                        BlackboardArtifact.objects.create(
                            book=book,
                            slug=item["id"],
                            type=item["type"],
                            status=item["status"],
                            version=item["version"],
                            produced_by=item["produced_by"],
                            lens=item.get("lens", ""),
                            path=item.get("path", ""),
                            round_last_touched=item.get("round_last_touched", 0),
                            stale_reason=item.get("stale_reason", ""),
                            untrusted=item.get("untrusted", False),
                            data_class=item.get("data_class", "internal"),
                            content=item.get("content", {}),
                        ),
                        item.get("created_at"),
                    )
                )
            by_slug = {obj.slug: obj for obj, _ in made}
            for obj, _ in made:
                parent = next((i.get("parent_id") for i in items if i["id"] == obj.slug), None)
                if parent and parent in by_slug:
                    obj.parent = by_slug[parent]
                    obj.save(update_fields=["parent"])
            _created(made, BlackboardArtifact)
            counts["artifacts"] = len(made)
            reviews = reader.records("blackboard", bb.get("lens_reviews"))
            lenses = set(RosterEntry.objects.values_list("slug", flat=True))
            ids = _uuid_map(LensReview, [r["id"] for r in reviews])
            made = []
            for r in reviews:
                if r["lens"] not in lenses:
                    reader.skipped.append({"file": "blackboard", "id": r["id"], "reason": f"unknown lens {r['lens']}"})
                    continue
                made.append(
                    (
                        LensReview.objects.create(
                            id=ids[r["id"]],
                            book=book,
                            lens_id=r["lens"],
                            gate=r["gate"],
                            round=r.get("round", 0),
                            reviewer_role=r["reviewer_role"],
                            summary=r.get("summary", ""),
                            findings=r.get("findings", []),
                            untrusted=r.get("untrusted", False),
                        ),
                        r.get("created_at"),
                    )
                )
            _created(made, LensReview)
            counts["lens_reviews"] = len(made)
            reruns = reader.records("blackboard", bb.get("reruns"))
            ids = _uuid_map(LensRerun, [r["id"] for r in reruns])
            made = [
                (
                    LensRerun.objects.create(
                        id=ids[r["id"]],
                        book=book,
                        lens=r["lens"],
                        artifacts=r.get("artifacts", []),
                        reason=r.get("reason", ""),
                        status=r.get("status", "queued"),
                        cost=r.get("cost", 0),
                        round=r.get("round", 0),
                    ),
                    r.get("created_at"),
                )
                for r in reruns
            ]
            _created(made, LensRerun)
            counts["reruns"] = len(made)
        if ok["open-questions"]:
            items = reader.records("open-questions", files["open-questions"].get("questions"))
            ids = _uuid_map(OpenQuestion, [q["id"] for q in items])
            made = [
                (
                    OpenQuestion.objects.create(
                        id=ids[q["id"]],
                        book=book,
                        kind=q.get("kind", "question"),
                        raised_by=q["raised_by"],
                        target_discipline=q["target_discipline"],
                        question=q["question"],
                        status=q["status"],
                        resolution=q.get("resolution", ""),
                        resolution_ref=q.get("resolution_ref", ""),
                        round=q.get("round", 0),
                        untrusted=q.get("untrusted", False),
                    ),
                    q.get("created_at"),
                )
                for q in items
            ]
            _created(made, OpenQuestion)
            counts["questions"] = len(made)
        if ok["traceability"]:
            tr = files["traceability"]
            meta.trace_root = tr.get("root", meta.trace_root)
            meta.leaf_kind = tr.get("leaf_kind", meta.leaf_kind)
            meta.save()
            slots = {a.slug: a for a in BlackboardArtifact.objects.filter(book=book)}
            made = [
                (
                    TraceNode.objects.create(
                        book=book,
                        node_id=n["id"],
                        kind=n["kind"],
                        label=n.get("label", ""),
                        backed_by=n.get("backed_by", "file"),
                        artifact=slots.get(n.get("artifact") or ""),
                        produced_by=n.get("produced_by", ""),
                        status=n.get("status", "active"),
                        status_reason=n.get("status_reason", ""),
                    ),
                    n.get("created_at"),
                )
                for n in reader.records("traceability", tr.get("nodes"))
            ]
            _created(made, TraceNode)
            counts["trace_nodes"] = len(made)
            edges = reader.records("traceability", tr.get("edges"))
            ids = _uuid_map(TraceEdge, [e["id"] for e in edges])
            made = [
                (
                    TraceEdge.objects.create(
                        id=ids[e["id"]],
                        book=book,
                        from_id=e["from"],
                        to_id=e["to"],
                        active=e.get("active", True),
                        inactive_reason=e.get("inactive_reason", ""),
                    ),
                    e.get("created_at"),
                )
                for e in edges
            ]
            _created(made, TraceEdge)
            counts["trace_edges"] = len(made)
        node_ids: dict[str, uuid.UUID] = {}
        if ok["plan-tree"]:
            plan = files["plan-tree"]
            items = reader.records("plan-tree", plan.get("nodes"))
            node_ids = _uuid_map(PlanNode, [n["id"] for n in items])
            cand_items = [(n, c) for n in items for c in reader.records("plan-tree", n.get("candidates"))]
            cand_ids = _uuid_map(Candidate, [c["id"] for _, c in cand_items])
            made = []
            created_ids = set()
            for n in sorted(items, key=lambda i: i.get("depth", 0)):
                parent = node_ids.get(n.get("parent_id") or "")
                if not n.get("is_root") and parent not in created_ids:
                    reader.skipped.append({"file": "plan-tree", "id": n["id"], "reason": "its parent was skipped"})
                    continue
                hook = n.get("validation_hook") or {}
                obj = PlanNode.objects.create(
                    id=node_ids[n["id"]],
                    book=book,
                    parent_id=None if n.get("is_root") else parent,
                    is_root=bool(n.get("is_root")),
                    depth=n.get("depth", 0),
                    intent=n["intent"],
                    altitude=n.get("altitude", "book"),
                    lifecycle=n.get("lifecycle", "draft"),
                    validation_status=n.get("validation_status", "hypothesis"),
                    sub_idea=n.get("sub_idea", "open"),
                    round=n.get("round", 0),
                    round_cap=n.get("round_cap", 3),
                    cost_spent=n.get("cost_spent", 0),
                    assumption=hook.get("assumption", ""),
                    kill_condition=hook.get("kill_condition", ""),
                    activity=hook.get("activity", ""),
                    produced_by=n.get("produced_by", "sol"),
                )
                created_ids.add(obj.pk)
                made.append((obj, n.get("created_at")))
            _created(made, PlanNode)
            counts["plan_nodes"] = len(made)
            made_c = []
            for n, c in cand_items:
                if node_ids[n["id"]] not in created_ids:
                    continue
                made_c.append(
                    (
                        Candidate.objects.create(
                            id=cand_ids[c["id"]],
                            node_id=node_ids[n["id"]],
                            altitude=c["altitude"],
                            mechanic=c["mechanic"],
                            shape=c["shape"],
                            riskiest_assumption=c["riskiest_assumption"],
                            status=c.get("status", "proposed"),
                            rationale=c.get("rationale", ""),
                            proposed_by=c.get("proposed_by", "terra"),
                            untrusted=c.get("untrusted", False),
                        ),
                        c.get("created_at"),
                    )
                )
            _created(made_c, Candidate)
            counts["candidates"] = len(made_c)
            for n in items:
                if n.get("selection") and n["selection"] in cand_ids and node_ids[n["id"]] in created_ids:
                    PlanNode.objects.filter(pk=node_ids[n["id"]]).update(selection_id=cand_ids[n["selection"]])
            vitems = reader.records("plan-tree", plan.get("validation_plan"))
            vids = _uuid_map(ValidationPlanItem, [v["id"] for v in vitems])
            made = [
                (
                    ValidationPlanItem.objects.create(
                        id=vids[v["id"]],
                        book=book,
                        node_id=node_ids.get(v.get("node") or ""),
                        assumption=v["assumption"],
                        kill_condition=v["kill_condition"],
                        activity=v["activity"],
                        validation_status=v.get("validation_status", "hypothesis"),
                    ),
                    v.get("created_at"),
                )
                for v in vitems
            ]
            _created(made, ValidationPlanItem)
            counts["validation_plan"] = len(made)
        if not PlanNode.objects.filter(book=book, is_root=True).exists():
            PlanNode.objects.create(book=book, is_root=True, intent=(book.premise or book.title)[:5000])
        if ok["meta"]:
            cards = reader.records("meta", files["meta"].get("option_cards"))
            ids = _uuid_map(OptionCard, [c["id"] for c in cards])
            own_approvals = set(
                str(pk)
                for pk in Approval.objects.filter(book=book, option_card__isnull=True).values_list("pk", flat=True)
            )
            made = []
            for c in cards:
                approval = c.get("approval_id") if c.get("approval_id") in own_approvals else None
                node = node_ids.get(c.get("node") or "")
                made.append(
                    (
                        OptionCard.objects.create(
                            id=ids[c["id"]],
                            book=book,
                            kind=c["kind"],
                            gate=c["gate"],
                            summary=c["summary"],
                            decisions_requested=c.get("decisions_requested", []),
                            recommended=c.get("recommended", ""),
                            reversibility_class=c.get("reversibility_class", "reversible"),
                            artifacts=c.get("artifacts", []),
                            node_id=node if node and PlanNode.objects.filter(pk=node).exists() else None,
                            trace_seed=c.get("trace_seed", ""),
                            bound=c.get("bound", ""),
                            proposed_extension=c.get("proposed_extension", {}),
                            risk_triggers=c.get("risk_triggers", []),
                            payload=c.get("payload", {}),
                            status=c.get("status", "pending"),
                            verdict=c.get("verdict", ""),
                            raised_by=c.get("raised_by", "sol"),
                            round=c.get("round", 0),
                            approval_id=approval,
                        ),
                        c.get("created_at"),
                    )
                )
            _created(made, OptionCard)
            counts["option_cards"] = len(made)
        if ok["decision-log"]:
            counts["decision_log_entries"] = len(reader.records("decision-log", files["decision-log"].get("entries")))
        meta.refresh_from_db()
        refresh(meta)
    return {"imported": counts, "skipped": reader.skipped}
