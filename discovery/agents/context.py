"""What a run sees: a fresh dossier for its role, and what its task looks up besides, each read
through the role's access (``BookAccess``), so a run sees exactly what an outside agent of that
role could read. What was looked up beyond the dossier is stored on the run, for audit.
"""

from __future__ import annotations

import re

from approvals.models import Approval, ApprovalKind, DecisionLogEntry
from discovery.access import BookAccess, Cap, book_access
from discovery.loop.models import (
    CardStatus,
    LensRerun,
    LensReview,
    LoopMeta,
    OpenQuestion,
    QuestionStatus,
    RerunStatus,
    TraceEdge,
    TraceNode,
    TraceStatus,
)
from discovery.loop.selectors import gate_set_aside, open_author_words, trace_lint
from discovery.loop.services.gates import ROUND_REASONS, decision_brief, g2_reasons, g3_reasons, governing_charter
from discovery.models import (
    Handoff,
    KnowledgeClaim,
    Observation,
    SessionQuestion,
    StoryCharter,
    ThrustCandidate,
    Turn,
)
from discovery.selectors import book_bases, current_session, manuscript_for_check, observation_rows, readable_bases
from library.curated import genres_of
from library.services import library_search, research_page_collect
from novelgraph.core.auth import Principal

from .models import AgentRun, AgentTask

MAX_TURNS = 30
MAX_TURN_CHARS = 2_000
LIBRARY_HITS = 5
_STOPWORD_TEXT = """
    about above after again against also among answer answering author because been before being below
    between book both could does doing during each every from further have having here into itself just
    library look more most much must only other ought over same should some such than that their theirs them
    then there these they this those through under until very weigh were what when where which while whom
    with within without would your guidance find story need needs want wants like make made says said
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def agent_access(run: AgentRun) -> BookAccess:
    """The run's principal: its role, acting for the book's author, scoped to this one book."""
    principal = Principal(user=run.book.owner, key_role=run.role, key_book_ids=frozenset({run.book.pk}))
    return book_access(principal, run.book)


def role_access(book, role: str) -> BookAccess:
    """A principal of ``role`` acting for the book's author, scoped to this one book (Sol's own next step)."""
    principal = Principal(user=book.owner, key_role=role, key_book_ids=frozenset({book.pk}))
    return book_access(principal, book)


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def query_words(text: str, *, limit: int = 8) -> list[str]:
    """The content words of ``text`` worth searching for, in order, once each."""
    words: list[str] = []
    for word in re.findall(r"[^\W\d_]+", text.lower()):
        if len(word) >= 4 and word not in STOPWORDS and word not in words:
            words.append(word)
    return words[:limit]


def library_hits(access: BookAccess, text: str) -> dict:
    """Library chunks for ``text``: each content word searched on its own (so each hit knows which
    words it matched), merged, ranked by how many words a chunk matched, then by score.

    The book's genre is preferred: when the book has one (``genre_pack``, e.g. "cozy mystery" ->
    mystery), each word is searched in the whole library, among the general passages and among that
    genre's (so no group crowds another out of a word's ten results). In the ranking a passage of the
    book's genre counts one word more, a passage written for another genre one word less (general
    passages neither); at equal weight the book's genre comes first, then general passages. A book
    without a genre prefers the general passages. Each hit says whether it is of the book's genre.
    """
    words = query_words(text)
    genres = genres_of(access.book.genre_pack)
    found: dict[str, dict] = {}
    mode = ""
    for word in words:
        responses = [
            library_search(principal=access.principal, query=word, limit=10, applicability=kept)
            for kept in (None, "general", *genres)
        ]
        for response in responses:
            mode = response.mode
            for hit in response.results:
                row = found.setdefault(
                    hit["chunk_id"],
                    {
                        "chunk_id": hit["chunk_id"],
                        "citation": hit["citation"],
                        "source_title": hit["source_title"],
                        "topics": list(hit["topics"]),
                        "content": hit["content"],
                        "applicability": list(hit["applicability"]),
                        "of_book_genre": _of_genres(hit["applicability"], genres),
                        "matched": [],
                        "score": 0.0,
                    },
                )
                if word not in row["matched"]:
                    row["matched"].append(word)
                row["score"] = max(row["score"], float(hit["score"] or 0))

    def rank(row: dict) -> tuple:
        weight = _genre_weight(row, genres)
        return (-(len(row["matched"]) + weight), -weight, -row["score"], row["citation"], row["chunk_id"])

    ranked = sorted(found.values(), key=rank)
    return {"query_words": words, "mode": mode, "genres": genres, "hits": ranked[:LIBRARY_HITS]}


def _of_genres(applicability, genres: list[str]) -> bool:
    return any(str(a).strip().lower() in genres for a in applicability or [])


def _genre_weight(row: dict, genres: list[str]) -> int:
    """+1 for a passage of the book's genre, 0 for a general one (or one filed under nothing), -1 for another's."""
    if row["of_book_genre"]:
        return 1
    applicability = [str(a).strip().lower() for a in row["applicability"] or []]
    if not applicability or "general" in applicability:
        return 0
    return -1


def _turns(session) -> list[dict]:
    rows = list(
        Turn.objects.filter(session=session)
        .order_by("-ordinal")
        .values("id", "ordinal", "role", "content", "created_at", "answers__question")[:MAX_TURNS]
    )
    return [
        {
            **{k: v for k, v in row.items() if k != "answers__question"},
            "id": str(row["id"]),
            "content": row["content"][:MAX_TURN_CHARS],
            "created_at": _iso(row["created_at"]),
            "answers": row["answers__question"] or "",
        }
        for row in reversed(rows)
    ]


def _observations(book) -> list[dict]:
    """The observations of the book's turns that still stand (working or confirmed), oldest first."""
    return [
        {**row, "id": str(row["id"]), "turn_id": str(row["turn_id"]), "created_at": _iso(row["created_at"])}
        for row in Observation.objects.filter(session__book=book)
        .exclude(status=Observation.Status.RETIRED)
        .order_by("created_at")
        .values("id", "turn_id", "key", "value", "status", "provenance", "created_at")[:500]
    ]


def _charter(book) -> dict:
    """The Story Charter version that governs the book (the newest approved), or {}."""
    charter = governing_charter(book)
    if charter is None:
        return {}
    return {
        "id": str(charter.pk),
        "version": charter.version,
        "content": charter.content,
        "source_refs": charter.source_refs,
    }


def _trace(book) -> list[dict]:
    return list(
        TraceNode.objects.filter(book=book, status=TraceStatus.ACTIVE).order_by("created_at").values("node_id", "kind")
    )


def _orphans(book) -> list[dict]:
    """The strict lint's orphans: each node with what it lacks (a producer, a consumer)."""
    report = trace_lint(book, strict=True)
    names = [f["nodes"][0] for f in report.findings if f["code"] == "orphan" and f.get("nodes")]
    rows = {
        n["node_id"]: n
        for n in TraceNode.objects.filter(book=book, node_id__in=names, status=TraceStatus.ACTIVE).values(
            "node_id", "kind", "label", "produced_by"
        )
    }
    edges = TraceEdge.objects.filter(book=book, active=True)
    fed = set(edges.filter(to_id__in=names).values_list("to_id", flat=True))
    feeding = set(edges.filter(from_id__in=names).values_list("from_id", flat=True))
    return [
        {
            **rows[name],
            "message": f["message"],
            "root": report.root,
            "leaf_kind": report.leaf_kind,
            "no_producer": name != report.root and name not in fed,
            "no_consumer": rows[name]["kind"] != report.leaf_kind and name not in feeding,
        }
        for f in report.findings
        if f["code"] == "orphan"
        for name in f.get("nodes") or []
        if name in rows
    ]


def _lens_questions(book, lens: str) -> list[dict]:
    """The loop's open or routed questions for ``lens``: what its run takes up."""
    return [
        {**row, "id": str(row["id"])}
        for row in OpenQuestion.objects.filter(
            book=book, target_discipline=lens, status__in=[QuestionStatus.OPEN, QuestionStatus.ROUTED]
        )
        .order_by("created_at", "id")
        .values("id", "kind", "question", "raised_by")[:20]
    ]


def _research_decisions(book) -> list[dict]:
    """The research the author admitted: the decision log's entries (what a finding on research cites)."""
    return list(
        DecisionLogEntry.objects.filter(book=book, subject_type="research", decision="approve")
        .order_by("sequence")
        .values("sequence", "rationale")[:20]
    )


def _questions(session) -> list[dict]:
    return [
        {**row, "id": str(row["id"]), "created_at": _iso(row["created_at"])}
        for row in SessionQuestion.objects.filter(session=session)
        .order_by("sequence")
        .values("id", "sequence", "question", "source_refs", "asked_by", "created_at")
    ]


def _confirmed(book) -> list[dict]:
    """The author's confirmed observations, each with its current value (her newest correction, else as stated)."""
    return [
        {
            "id": str(row["id"]),
            "key": row["key"],
            "value": row["value"],
            "provenance": row["provenance"],
            "created_at": _iso(row["created_at"]),
        }
        for row in observation_rows(Observation.objects.filter(session__book=book, status=Observation.Status.CONFIRMED))
    ]


def _thrusts(session) -> list[dict]:
    return [
        {**row, "id": str(row["id"]), "created_at": _iso(row["created_at"])}
        for row in ThrustCandidate.objects.filter(session=session)
        .order_by("created_at")
        .values(
            "id",
            "kind",
            "status",
            "proposed_by",
            "title",
            "main_thrust",
            "character_engine",
            "central_conflict",
            "reader_promise",
            "ending_shape",
            "created_at",
        )
    ]


def _charters(book) -> list[dict]:
    return [
        {
            "id": str(row["id"]),
            "version": row["version"],
            "status": row["status"],
            "proposed_by": row["proposed_by"],
            "main_thrust": (row["content"] or {}).get("main_thrust", ""),
            # Its fields (without their citations): what a new draft would change.
            "fields": {k: v for k, v in (row["content"] or {}).items() if k != "source_refs"},
            "created_at": _iso(row["created_at"]),
        }
        for row in StoryCharter.objects.filter(book=book)
        .order_by("version")
        .values("id", "version", "status", "proposed_by", "content", "created_at")
    ]


def _proposed_claims(access: BookAccess) -> list[dict]:
    """Proposed claims in the bases the role may read (never series canon for Luna)."""
    bases, _ = readable_bases(book_bases(access.book), access.caps)
    claims = list(
        KnowledgeClaim.objects.filter(base_id__in=[b["id"] for b in bases], status=KnowledgeClaim.Status.PROPOSED)
        .order_by("created_at")
        .values("id", "subject", "predicate", "value", "provenance", "source_refs", "evidence", "base__scope")
    )
    requested = set(
        Approval.objects.filter(
            book=access.book,
            kind=ApprovalKind.CANON_PROMOTION,
            status=Approval.Status.PENDING,
            subject_id__in=[str(c["id"]) for c in claims],
        ).values_list("subject_id", flat=True)
    )
    return [
        {
            **{k: v for k, v in claim.items() if k != "base__scope"},
            "id": str(claim["id"]),
            "scope": claim["base__scope"],
            "approval_requested": str(claim["id"]) in requested,
        }
        for claim in claims
    ]


def _handoffs(book) -> list[dict]:
    """The book's handoffs; ``failed`` when the run that was to answer an open one failed (so it can be handed
    again: a failed run wrote nothing)."""
    failed = {
        str((run_input or {}).get("handoff_id"))
        for run_input in AgentRun.objects.filter(book=book, status="failed").values_list("input", flat=True)
    }
    return [
        {
            **row,
            "id": str(row["id"]),
            "created_at": _iso(row["created_at"]),
            "failed": row["status"] == "open" and str(row["id"]) in failed,
        }
        for row in Handoff.objects.filter(book=book)
        .order_by("created_at")
        .values("id", "from_role", "to_role", "decision", "status", "created_at")
    ]


def _handoff(run: AgentRun) -> dict | None:
    if not run.handoff_id:
        return None
    handoff = Handoff.objects.filter(pk=run.handoff_id, book=run.book).first()
    if handoff is None:
        return None
    return {
        "id": str(handoff.pk),
        "from_role": handoff.from_role,
        "to_role": handoff.to_role,
        "decision": handoff.decision,
        "allowed_sources": handoff.allowed_sources,
        "statements": handoff.statements,
        "status": handoff.status,
    }


def _loop(book) -> dict:
    meta = LoopMeta.objects.filter(book=book).first()
    if meta is None:
        return {}
    pending = meta.book.loop_cards.filter(status=CardStatus.PENDING).values_list("gate", "summary").first()
    # Each queued re-run with its number among the book's re-runs (what names it in the work handed on).
    numbers = {
        pk: n
        for n, pk in enumerate(
            LensRerun.objects.filter(book=book).order_by("created_at", "id").values_list("id", flat=True), 1
        )
    }
    reruns = [
        {**row, "id": str(row["id"]), "number": numbers.get(row["id"], 0), "created_at": _iso(row["created_at"])}
        for row in LensRerun.objects.filter(book=book, status=RerunStatus.QUEUED)
        .order_by("created_at", "id")
        .values("id", "lens", "artifacts", "reason", "created_at")[:20]
    ]
    set_aside = gate_set_aside(meta)
    return {
        "gate": meta.gate,
        "status": meta.status,
        "bound": meta.bound,
        "pending_card": {"gate": pending[0], "summary": pending[1]} if pending else None,
        "reruns_queued": len(reruns),
        # The re-runs a verdict or a cascade queued: each is done by a run of its lens, which Sol hands on.
        "reruns": reruns,
        # Her steer or constraint on the last card: the next card answers it.
        "author_words": open_author_words(meta),
        # She parked the current gate's card and has not spoken since: the discovery goes on without it. Or she
        # abandoned its line: nothing is asked at this gate until she says where the book goes now.
        "parked": set_aside == "park",
        "abandoned": set_aside == "abandon",
        # What the controller would be told if it asked for G2 or G3 now (reads only).
        "g2_reasons": g2_reasons(book) if meta.gate == "G2" else [],
        "g3_reasons": g3_reasons(book, ["decision-brief"]) if meta.gate == "G3" else [],
        # At G2: what stays once Sol has closed a round (a round is the last thing saturation waits for).
        "g2_blockers": [r for r in g2_reasons(book) if r not in ROUND_REASONS] if meta.gate == "G2" else [],
        "round": meta.round,
        "reviews": sorted(set(LensReview.objects.filter(book=book, gate="G2").values_list("lens__slug", flat=True))),
        "brief": _brief(book),
    }


def _brief(book) -> dict | None:
    brief = decision_brief(book)
    if brief is None:
        return None
    content = brief.content if isinstance(brief.content, dict) else {}
    return {"slug": brief.slug, "status": brief.status, "has_metrics": bool(content.get("success_metrics"))}


# What each task looks up beyond its dossier, and the capability each look-up needs.
LOOKUPS = {
    AgentTask.NEXT_QUESTION: (
        "turns",
        "questions",
        "confirmed_observations",
        "thrusts",
        "charters",
        "proposed_claims",
        "handoffs",
        "loop",
        "observations",
    ),
    AgentTask.GUIDANCE: ("handoff", "library"),
    AgentTask.CONTRADICTIONS: ("handoff", "confirmed_observations", "proposed_claims"),
    AgentTask.THRUSTS: ("handoff", "turns", "confirmed_observations", "thrusts"),
    AgentTask.CHARTER: ("handoff", "turns", "confirmed_observations", "thrusts", "charters"),
    AgentTask.EXTRACT: ("handoff", "turns", "observations"),
    AgentTask.CANON_REVIEW: (
        "handoff",
        "charter",
        "confirmed_observations",
        "proposed_claims",
        "loop",
        "lens_questions",
        "research_decisions",
    ),
    AgentTask.TRUST_REVIEW: ("handoff", "charter", "loop"),
    AgentTask.BRIEF: ("handoff", "charter", "thrusts", "trace", "loop", "orphans"),
    AgentTask.CONTINUITY: ("manuscript",),
    # The page is collected here, before the run's write transaction (no lock held while it is fetched); a page the
    # guards refuse ends the run with the reason, and nothing is proposed.
    AgentTask.RESEARCH_URL: ("research_request", "page"),
}
LOOKUP_CAP = {
    "library": Cap.LITERARY_READ,
    "proposed_claims": Cap.BOOK_READ,
    "research_request": Cap.BOOK_READ,
    "page": Cap.BOOK_READ,  # research_page_collect checks the research rule itself, before any request leaves
}
# What a run as of a chapter still looks up: the work handed to it, the craft library, the chapter it checks.
PLACED_LOOKUPS = ("handoff", "library", "manuscript")


def _research_request(run: AgentRun) -> dict:
    """What the author asked Luna to collect: the page's address, and her claim and citation (blank: Luna's)."""
    given = run.input or {}
    return {key: given.get(key, "") for key in ("url", "claim", "citation")}


def looked_up(access: BookAccess, run: AgentRun) -> dict:
    """What ``run``'s task reads beyond its dossier, each through the role's access."""
    book = access.book
    session = current_session(book)
    handoff = _handoff(run)
    readers = {
        "turns": lambda: _turns(session),
        "questions": lambda: _questions(session),
        "confirmed_observations": lambda: _confirmed(book),
        "thrusts": lambda: _thrusts(session),
        "charters": lambda: _charters(book),
        "proposed_claims": lambda: _proposed_claims(access),
        "handoffs": lambda: _handoffs(book),
        "loop": lambda: _loop(book),
        "handoff": lambda: handoff,
        "observations": lambda: _observations(book),
        "charter": lambda: _charter(book),
        "trace": lambda: _trace(book),
        "orphans": lambda: _orphans(book),
        "lens_questions": lambda: _lens_questions(book, "canon-integrity"),
        "research_decisions": lambda: _research_decisions(book),
        "library": lambda: library_hits(access, handoff["decision"] if handoff else ""),
        "manuscript": lambda: manuscript_for_check(book, run.input or {}),
        "research_request": lambda: _research_request(run),
        "page": lambda: research_page_collect(access=access, url=(run.input or {}).get("url", "")),
    }
    extras: dict = {"current_question": session.current_question if session else ""}
    as_of_chapter = (run.input or {}).get("as_of_chapter")
    withheld: list[str] = []
    for name in LOOKUPS[run.task]:
        access.require(LOOKUP_CAP.get(name, Cap.DISCOVERY_READ))
        if as_of_chapter is not None and name not in PLACED_LOOKUPS:
            # Not on the chapter axis: it may name a later reveal, so a run as of a chapter is not given it.
            extras[name] = {} if name == "loop" else []
            withheld.append(name)
            continue
        extras[name] = readers[name]()
    if as_of_chapter is not None:
        extras["as_of_chapter"] = as_of_chapter
        extras["withheld_as_of_chapter"] = withheld
    return extras


def run_context(access: BookAccess, run: AgentRun, dossier_content: dict, extras: dict) -> dict:
    """The whole of what the provider is given: the task, the book, the dossier and the look-ups."""
    book = access.book
    return {
        "task": run.task,
        "role": run.role,
        "book": {"id": str(book.pk), "title": book.title, "premise": book.premise, "genre_pack": book.genre_pack},
        "dossier": dossier_content,
        **extras,
    }
