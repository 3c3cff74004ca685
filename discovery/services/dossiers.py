"""Context dossiers: immutable, role-scoped snapshots of what an agent is given (invariant 4)."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet
from django.utils import timezone

from approvals.models import DecisionLogEntry, Verdict
from novelgraph.core.errors import Conflict, Forbidden

from ..access import BookAccess, Cap, capabilities_of
from ..models import (
    CLAIM_STATEMENT,
    STORY_RECORD,
    Book,
    ContextDossier,
    DiscoverySession,
    KnowledgeClaim,
    Observation,
    ScratchpadEntry,
    StoryCharter,
)
from ..selectors import (
    DOSSIER_PAGE,
    SCOPE_READ_CAP,
    SCOPE_WITHHELD_LABEL,
    MappedRows,
    book_bases,
    book_observation_rows,
    bounded,
    canon_bases,
    canon_story_rows,
    current_session,
    dossier_more_links,
    readable_bases,
)
from ..story_rules import as_of

DOSSIER_SCHEMA = "dossier/1"


def _iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def canon_claims(bases: list[dict]):
    """The approved claims of the canon bases among ``bases``, oldest first (the dossier's and the canon route's)."""
    return (
        KnowledgeClaim.objects.filter(
            base_id__in=[b["id"] for b in canon_bases(bases)], status=KnowledgeClaim.Status.APPROVED
        )
        .order_by("created_at", "id")
        .values(*CLAIM_STATEMENT, "approval_id")
    )


def book_observations(book: Book, *, status: str | None = None) -> MappedRows:
    """The book's observations across its sessions (the selector the discovery view reads too)."""
    return book_observation_rows(book, status=status)


def working_observations(book: Book):
    """The book's unresolved observations across its sessions, oldest first (what a dossier is given)."""
    return book_observations(book, status=Observation.Status.WORKING)


def _dossier_claim(row: dict) -> dict:
    """A claim as a dossier gives it: its value and its story record (and, as of a chapter, whether
    it is still a secret)."""
    return {key: row[key] for key in DOSSIER_CLAIM_COLUMNS if key in row}


# A dossier's claim: its statement, the approval behind it and the story record (what it revises is the codex's
# history, not the role's), with what the role may know of it as of a chapter.
DOSSIER_CLAIM_COLUMNS = (
    *CLAIM_STATEMENT,
    "approval_id",
    *(field for field in STORY_RECORD if field != "revises_id"),
    "secret",
    "visibility",
)


def dossier_content(
    *,
    book: Book,
    session: DiscoverySession | None,
    agent_role: str,
    as_of_chapter: int | None = None,
    limit: int = DOSSIER_PAGE,
) -> dict:
    """What ``agent_role`` is given now: the author's constraints (each with the decision that set it,
    for every role), the latest approved charter, the knowledge bases the
    book can use, the approved claims in them (ids, decoded values, story records), the session's
    scratchpad entries, the unresolved (working) observations and the role's capabilities;
    role-scoped: what the role may not read is left out and named under ``withheld``.

    As of a chapter (``as_of_chapter``), the claims are only those true by then: a reveal first
    shown later is withheld (and counted under ``withheld``), and any other fact the reader has
    not yet seen is given marked ``secret``. The charter, scratchpad and observations are not on
    the chapter axis (they may name any later reveal), so an as-of dossier withholds them and says so.

    Bounded: the first ``limit`` claims, scratchpad entries and observations (each in its route's order), and
    under ``more`` the link to the rest of each (None when the dossier holds all of it). A fixed number of
    queries of at most ``limit + 1`` rows: the time and size do not grow with the book.
    """
    caps = capabilities_of(agent_role)
    withheld: list[str] = []
    charter = None
    if Cap.DISCOVERY_READ in caps:
        charter = (
            StoryCharter.objects.filter(book=book, status=StoryCharter.Status.APPROVED)
            .order_by("-version")
            .values("id", "version", "content", "approval_id", "source_refs")
            .first()
        )
    else:
        withheld.append(f"story charter ({agent_role} lacks {Cap.DISCOVERY_READ.value})")
    if charter:
        charter = {**charter, "id": str(charter["id"]), "approval_id": str(charter["approval_id"])}

    given, not_given = readable_bases(book_bases(book), caps)
    for scope in dict.fromkeys(base["scope"] for base in not_given):
        withheld.append(f"{SCOPE_WITHHELD_LABEL[scope]} ({agent_role} lacks {SCOPE_READ_CAP[scope].value})")
    more = {"claims": False, "scratchpad": False, "observations": False}
    claims, _ = canon_story_rows(book, caps, agent_role, bases=(given, not_given))
    if as_of_chapter is not None:
        claims, by_chapter = as_of(claims, as_of_chapter)
        withheld += by_chapter
    # The story rows are read whole (one statement): the as-of filter and the redaction of a reveal's id
    # need the readable canon; the dossier holds the first ``limit`` of them, the rest is linked.
    claims, more["claims"] = bounded([_dossier_claim(row) for row in claims], limit)

    scratchpad: list[dict] = []
    if session is not None and Cap.SCRATCHPAD_READ in caps:
        entry_rows, more["scratchpad"] = bounded(
            ScratchpadEntry.objects.filter(session__book=book)
            .order_by("session__created_at", "session_id", "sequence")
            .values(
                "id",
                "session_id",
                "sequence",
                "agent_role",
                "kind",
                "content",
                "confidence",
                "source_refs",
                "handoff_id",
                "created_at",
            ),
            limit,
        )
        scratchpad = [
            {
                **row,
                "id": str(row["id"]),
                "session_id": str(row["session_id"]),
                "handoff_id": str(row["handoff_id"]) if row["handoff_id"] else None,
                "created_at": _iso(row["created_at"]),
            }
            for row in entry_rows
        ]
    elif Cap.SCRATCHPAD_READ not in caps:
        withheld.append(f"scratchpad ({agent_role} lacks {Cap.SCRATCHPAD_READ.value})")

    observations: list[dict] = []
    if Cap.DISCOVERY_READ in caps:
        working, more["observations"] = bounded(working_observations(book), limit)
        observations = [
            {
                **{k: row[k] for k in ("key", "value", "provenance", "confidence")},
                "id": str(row["id"]),
                "turn_id": str(row["turn_id"]),
                "session_id": str(row["session_id"]),
            }
            for row in working
        ]
    if as_of_chapter is not None:
        # Discovery material is not placed on the chapter axis: it may name any later reveal, so a
        # role drafting a chapter is not given it (and is told so).
        unplaced = [
            name
            for name, held in (("story charter", charter), ("scratchpad", scratchpad), ("observations", observations))
            if held
        ]
        if unplaced:
            withheld.append(
                f"withheld as of chapter {as_of_chapter}: {', '.join(unplaced)} (whole-book discovery material, "
                "not placed on the chapter axis; it may name later reveals)"
            )
        charter, scratchpad, observations = None, [], []
        more["scratchpad"] = more["observations"] = False
    constraints, more["author_constraints"] = bounded(author_constraints(book), limit)
    # The claims above are read from every given base; the dossier names the first ``limit`` of them.
    bases_page, more["knowledge_bases"] = bounded(given, limit)
    return {
        "schema": DOSSIER_SCHEMA,
        "author_constraints": constraints,
        "book": {"id": str(book.pk), "title": book.title},
        "agent_role": agent_role,
        "as_of_chapter": as_of_chapter,
        "session_id": str(session.pk) if session else None,
        "capabilities": sorted(c.value for c in caps),
        "charter": charter,
        "knowledge_bases": [{k: base[k] for k in ("id", "name", "scope", "relation")} for base in bases_page],
        "claims": claims,
        "scratchpad": scratchpad,
        "observations": observations,
        "withheld": withheld,
        "limit": limit,
        "more": dossier_more_links(
            book_id=book.pk,
            session_id=session.pk if session else None,
            more=more,
            limit=limit,
            as_of_chapter=as_of_chapter,
        ),
    }


CONSTRAINT_VERDICTS = (Verdict.APPROVE_WITH_CONSTRAINT, Verdict.REDIRECT)


class AuthorConstraints:
    """Every constraint the author recorded, each with the decision that set it, in one order: the governing
    (latest approved) charter's ``constraints`` (at most a charter's list), then every approve-with-constraint
    verdict and steer (redirect) in the book's decision log (gate cards and any other subject), by sequence.
    Given to every role: the author's constraints bind every agent, whatever it may read.

    A page (a slice) reads the charter and its decision (two queries, once) and only the log rows of the page
    (LIMIT in SQL); ``len`` counts in SQL. So a dossier holds a page and the paged route gives the rest."""

    def __init__(self, book: Book):
        self.book = book
        self._charter_items: list[dict] | None = None

    def _log(self):
        # By verdict alone (``detail`` is text on PostgreSQL: no JSON lookups): these verdicts are logged only by
        # ``approval_decide``, which refuses them without their text and records it as ``detail.constraint``.
        return DecisionLogEntry.objects.filter(book=self.book, decision__in=CONSTRAINT_VERDICTS).order_by("sequence")

    def charter_items(self) -> list[dict]:
        if self._charter_items is None:
            self._charter_items = _charter_constraints(self.book)
        return self._charter_items

    def __len__(self) -> int:
        return len(self.charter_items()) + self._log().count()

    def __iter__(self):
        return iter(self[0:])

    def __getitem__(self, index: slice) -> list[dict]:
        if not isinstance(index, slice) or index.step is not None:
            raise TypeError("author constraints are read a page (a slice) at a time")
        start, stop = index.start or 0, index.stop
        charter = self.charter_items()
        found = charter[start:stop]
        log_start = max(start - len(charter), 0)
        log_stop = None if stop is None else max(stop - len(charter), 0)
        if log_stop is None or log_stop > log_start:
            rows = self._log().values(
                "sequence", "decision", "gate", "subject_type", "subject_id", "approval_id", "rationale", "detail"
            )[log_start:log_stop]
            found += [_logged_constraint(row) for row in rows]
        return found


def _charter_constraints(book: Book) -> list[dict]:
    charter = (
        StoryCharter.objects.filter(book=book, status=StoryCharter.Status.APPROVED)
        .order_by("-version")
        .values("id", "version", "content", "approval_id")
        .first()
    )
    texts = ((charter or {}).get("content") or {}).get("constraints") or []
    if not texts:
        return []
    entry = None
    if charter["approval_id"]:
        entry = (
            DecisionLogEntry.objects.filter(book=book, approval_id=charter["approval_id"])
            .order_by("sequence")
            .values("sequence", "rationale")
            .first()
        )
    return [
        {
            "kind": "charter-constraint",
            "text": text,
            "decision": {
                "what": f"Story charter v{charter['version']} approved",
                "charter_id": str(charter["id"]),
                "charter_version": charter["version"],
                "approval_id": str(charter["approval_id"]) if charter["approval_id"] else None,
                "sequence": entry["sequence"] if entry else None,
                "rationale": entry["rationale"] if entry else None,
            },
        }
        for text in texts
    ]


def _logged_constraint(entry: dict) -> dict:
    at_gate = f" at {entry['gate']}" if entry["gate"] else ""
    return {
        "kind": "constraint" if entry["decision"] == "approve-with-constraint" else "steer",
        "text": (entry["detail"] or {}).get("constraint") or "",
        "decision": {
            "what": f"{entry['decision']} on {entry['subject_type']}{at_gate}",
            "verdict": entry["decision"],
            "gate": entry["gate"],
            "subject_type": entry["subject_type"],
            "subject_id": entry["subject_id"],
            "approval_id": str(entry["approval_id"]) if entry["approval_id"] else None,
            "sequence": entry["sequence"],
            "rationale": entry["rationale"],
        },
    }


def author_constraints(book: Book) -> AuthorConstraints:
    """The author's constraints for ``book`` (see :class:`AuthorConstraints`), read a page at a time."""
    return AuthorConstraints(book)


# Collections a dossier caps that stored snapshots may hold whole: all of them before dossiers were bounded (no
# ``more``), the later ones (LATER_CAPPED) before they were.
def dossier_store(
    *, book: Book, agent_role: str, requested_by=None, as_of_chapter: int | None = None
) -> ContextDossier:
    """Snapshot and store (no permission check: callers check who may take it); as of a chapter
    when ``as_of_chapter`` is given (see :func:`dossier_content`)."""
    session = current_session(book)
    if session is None:
        raise Conflict("this book has no discovery session yet; start discovery first", code="no_session")
    dossier = ContextDossier(
        id=uuid.uuid4(),
        book=book,
        session=session,
        agent_role=agent_role,
        requested_by=requested_by,
        content=dossier_content(book=book, session=session, agent_role=agent_role, as_of_chapter=as_of_chapter),
        created_at=timezone.now(),
    )
    dossier.save()
    return dossier


def dossier_create(*, access: BookAccess, agent_role: str, as_of_chapter: int | None = None) -> ContextDossier:
    """Store and return a new immutable dossier for ``agent_role`` (as of a chapter when given).

    An agent takes dossiers only for its own role (403); the author may take any role's
    (discovery:write; an editor is refused). The book needs a discovery session (409).
    """
    access.require(Cap.BOOK_READ)
    if access.is_agent:
        if access.role != agent_role:
            raise Forbidden(
                f"{access.role} may take only its own dossier, not {agent_role}'s", code="missing_capability"
            )
    else:
        access.require(Cap.DISCOVERY_WRITE)
    return dossier_store(book=access.book, agent_role=agent_role, requested_by=access.user, as_of_chapter=as_of_chapter)


def dossiers_for(access: BookAccess) -> QuerySet[ContextDossier]:
    """The book's dossiers newest first; an agent sees only its own role's."""
    dossiers = ContextDossier.objects.filter(book=access.book).order_by("-created_at")
    if access.is_agent:
        dossiers = dossiers.filter(agent_role=access.role)
    return dossiers


def dossier_readable(access: BookAccess, dossier: ContextDossier) -> ContextDossier:
    """A dossier of the book: an agent reads only its own role's (403)."""
    access.require(Cap.BOOK_READ)
    if access.is_agent and dossier.agent_role != access.role:
        raise Forbidden(
            f"{access.role} may read only its own dossiers, not {dossier.agent_role}'s", code="missing_capability"
        )
    return dossier
