"""Discovery routes (seed 000). Thin: resolve the caller's access once, call a service, answer.

Schemas live in ``discovery.schemas``; rules in ``discovery.services``.
"""

import uuid

from django.http import HttpRequest
from ninja import Query, Router
from ninja.pagination import paginate
from ninja.responses import Status

from novelgraph.core.auth import principal_of
from novelgraph.core.errors import NotFound
from novelgraph.core.schemas import ERRORS

from . import services
from .access import BookAccess, Cap, book_access, books_visible_to
from .history import ClaimVersions, claim_decisions, claim_history
from .manuscript_api import ChapterIn, chapter_add
from .record_search import book_record_search
from .schemas import (
    ApprovalRefOut,
    AsOfFilter,
    BookDetailOut,
    BookEditIn,
    BookIn,
    BookObservationOut,
    BookOut,
    CanonClaimOut,
    CanonPageClaimOut,
    ChapterOut,
    CharterCreatedOut,
    CharterIn,
    CharterOut,
    CharterResolveIn,
    ClaimDecisionIn,
    ClaimDecisionLogOut,
    ClaimDecisionOut,
    ClaimHistoryOut,
    ClaimIn,
    ClaimOut,
    ClaimRetractIn,
    ClaimStoryIn,
    ClaimSupersedeIn,
    ClaimVersionOut,
    CodexOut,
    ConflictOut,
    DiscoveryViewOut,
    DossierIn,
    DossierOut,
    EditorIn,
    EditorOut,
    EntryIn,
    EntryOut,
    HandoffIn,
    HandoffOut,
    HandoffResultIn,
    ObservationDetailOut,
    ObservationFilter,
    ObservationIn,
    ObservationOut,
    ObservationResolveIn,
    ObservationRevisionOut,
    QuestionClosedOut,
    QuestionSetIn,
    RecordSearchOut,
    RecordSearchParams,
    RequestApprovalIn,
    ScratchpadFilter,
    SeriesIn,
    SeriesOut,
    SessionOut,
    SessionQuestionOut,
    StartOut,
    ThrustIn,
    ThrustOut,
    TurnIn,
    TurnOut,
    ViewBase,
    ViewCharter,
    ViewTurn,
    WebhookIn,
    WebhookOut,
    WhoAmI,
    handoff_out,
    turn_out,
)
from .selectors import (
    book_bases,
    book_chapters,
    book_charters,
    book_sessions,
    book_thrusts,
    book_turns,
    charter_get,
    claim_conflicts,
    codex_capped,
    codex_view,
    discovery_view_out,
    dossier_get,
    handoff_get,
    observation_get,
    readable_bases,
    scratchpad_for,
    session_get,
    session_observations,
    session_thrusts,
    session_turns,
    turn_get,
    webhook_deliveries,
    webhook_of,
)
from .selectors import whoami as whoami_of
from .webhooks import webhook_set

router = Router(tags=["discovery"])


def _access(request: HttpRequest, book_id, *caps: Cap) -> BookAccess:
    return book_access(principal_of(request), book_id, *caps)


def _session_access(request: HttpRequest, session_id, *caps: Cap):
    session = session_get(session_id)
    return book_access(principal_of(request), session.book, *caps, missing="session"), session


# --- Who am I -----------------------------------------------------------------


@router.get("/me", response={200: WhoAmI, **ERRORS}, summary="Who the caller is and what its role may do")
def whoami(request: HttpRequest):
    return whoami_of(principal_of(request))


# --- Series and books ---------------------------------------------------------


@router.post("/series", response={201: SeriesOut, **ERRORS}, summary="Create a series (people only)")
def series_create(request: HttpRequest, payload: SeriesIn):
    return Status(201, services.series_create(principal=principal_of(request), payload=payload))


@router.post("/books", response={201: BookOut, **ERRORS}, summary="Create a book (people only); you become its author")
def book_create(request: HttpRequest, payload: BookIn):
    return Status(201, services.book_create(principal=principal_of(request), payload=payload))


@router.get("/books", response={200: list[BookOut], **ERRORS}, summary="The books the caller may touch")
@paginate
def book_list(request: HttpRequest):
    return books_visible_to(principal_of(request)).order_by("title", "id")


@router.get("/books/{book_id}", response={200: BookDetailOut, **ERRORS}, summary="One book and the caller's role")
def book_detail(request: HttpRequest, book_id: uuid.UUID):
    access = _access(request, book_id, Cap.BOOK_READ)
    book = access.book
    book.role = access.role
    book.capabilities = sorted(c.value for c in access.caps)
    return book


@router.patch(
    "/books/{book_id}",
    response={200: BookOut, **ERRORS},
    summary="Change the book's title, premise or genre (its author, as a person)",
)
def book_edit(request: HttpRequest, book_id: uuid.UUID, payload: BookEditIn):
    """A field left out stays as it is. A new premise after G0 passed reopens G0: without ``reopen: true`` the
    answer is a 409 ``reopens_g0`` whose ``impact`` says what the premise feeds; with it, the loop goes back to G0."""
    return services.book_edit(access=_access(request, book_id, Cap.BOOK_READ), payload=payload)


@router.get(
    "/books/{book_id}/chapters",
    response={200: list[ChapterOut], **ERRORS},
    summary="The book's chapters, in order (Chapter 1 exists after the G3 hand-off)",
)
@paginate
def book_chapters_list(request: HttpRequest, book_id: uuid.UUID):
    return book_chapters(_access(request, book_id, Cap.BOOK_READ).book)


@router.post("/books/{book_id}/chapters", response={201: ChapterOut, **ERRORS}, summary="Add a chapter")
def book_chapter_add(request: HttpRequest, book_id: uuid.UUID, payload: ChapterIn):
    """Declared here beside the list (one path, one router); the manuscript's routes hold the rest."""
    return chapter_add(request, book_id, payload)


@router.post(
    "/books/{book_id}/editors",
    response={201: EditorOut, **ERRORS},
    summary="Invite an editor by username (the book's author only)",
    description="An editor reads everything and writes turns; she never decides. 422 for an unknown username "
    "or the author herself; 409 when she already edits the book.",
)
def book_editor_add(request: HttpRequest, book_id: uuid.UUID, payload: EditorIn):
    person = services.book_editor_add(access=_access(request, book_id), payload=payload)
    return Status(201, {"id": person.pk, "username": person.get_username()})


@router.delete(
    "/books/{book_id}/editors/{user_id}",
    response={204: None, **ERRORS},
    summary="Remove an editor (the book's author only)",
)
def book_editor_remove(request: HttpRequest, book_id: uuid.UUID, user_id: int):
    services.book_editor_remove(access=_access(request, book_id), user_id=user_id)
    return Status(204, None)


# --- Discovery sessions -----------------------------------------------------------


@router.post(
    "/books/{book_id}/discovery",
    response={200: StartOut, 201: StartOut, **ERRORS},
    summary="Start (or resume) the discovery of a book",
    description="201 when a session was created, 200 when an active or charter-proposed one already existed. "
    "Needs discovery:write.",
)
def discovery_start(request: HttpRequest, book_id: uuid.UUID):
    session, created = services.discovery_start(access=_access(request, book_id))
    body = {"session_id": session.pk, "status": session.status, "current_question": session.current_question}
    return Status(201 if created else 200, body)


@router.get(
    "/books/{book_id}/discovery",
    response={200: DiscoveryViewOut, **ERRORS},
    summary="The discovery view: session, turns, observations, thrusts, scratchpad, charters, knowledge bases",
)
def discovery_get(request: HttpRequest, book_id: uuid.UUID):
    return discovery_view_out(_access(request, book_id, Cap.DISCOVERY_READ))


@router.get(
    "/books/{book_id}/sessions",
    response={200: list[SessionOut], **ERRORS},
    summary="The book's discovery sessions, oldest first, paged (discovery:read)",
)
@paginate
def book_session_list(request: HttpRequest, book_id: uuid.UUID):
    return book_sessions(_access(request, book_id, Cap.DISCOVERY_READ).book)


@router.get(
    "/books/{book_id}/turns",
    response={200: list[ViewTurn], **ERRORS},
    summary="The book's turns across its sessions (session by session, by ordinal), paged (discovery:read)",
)
@paginate
def book_turn_list(request: HttpRequest, book_id: uuid.UUID):
    return book_turns(_access(request, book_id, Cap.DISCOVERY_READ).book)


@router.get(
    "/books/{book_id}/thrusts",
    response={200: list[ThrustOut], **ERRORS},
    summary="The book's thrust candidates across its sessions, in creation order, paged (discovery:read)",
)
@paginate
def book_thrust_list(request: HttpRequest, book_id: uuid.UUID):
    return book_thrusts(_access(request, book_id, Cap.DISCOVERY_READ).book)


@router.get(
    "/books/{book_id}/scratchpad",
    response={200: list[EntryOut], **ERRORS},
    summary="The book's scratchpad across its sessions, in creation order, paged (scratchpad:read)",
)
@paginate
def book_scratchpad_list(request: HttpRequest, book_id: uuid.UUID, filters: Query[ScratchpadFilter]):
    access = _access(request, book_id, Cap.SCRATCHPAD_READ)
    return scratchpad_for(book=access.book, kind=filters.kind, agent_role=filters.agent_role)


@router.get(
    "/sessions/{session_id}/turns",
    response={200: list[ViewTurn], **ERRORS},
    summary="The session's turns by ordinal, paged (discovery:read; observations: /observations)",
)
@paginate
def turn_list(request: HttpRequest, session_id: uuid.UUID):
    _, session = _session_access(request, session_id, Cap.DISCOVERY_READ)
    return session_turns(session)


@router.get(
    "/sessions/{session_id}/observations",
    response={200: list[ObservationOut], **ERRORS},
    summary="The session's observations in creation order, paged (discovery:read)",
)
@paginate
def observation_list(request: HttpRequest, session_id: uuid.UUID):
    _, session = _session_access(request, session_id, Cap.DISCOVERY_READ)
    return session_observations(session)


@router.get(
    "/sessions/{session_id}/thrusts",
    response={200: list[ThrustOut], **ERRORS},
    summary="The session's thrust candidates in creation order, paged (discovery:read)",
)
@paginate
def thrust_list(request: HttpRequest, session_id: uuid.UUID):
    _, session = _session_access(request, session_id, Cap.DISCOVERY_READ)
    return session_thrusts(session)


@router.get(
    "/books/{book_id}/charters",
    response={200: list[ViewCharter], **ERRORS},
    summary="The book's Story Charter versions, newest first, paged (discovery:read)",
)
@paginate
def charter_list(request: HttpRequest, book_id: uuid.UUID):
    return book_charters(_access(request, book_id, Cap.DISCOVERY_READ).book)


@router.get(
    "/books/{book_id}/observations",
    response={200: list[BookObservationOut], **ERRORS},
    summary="The book's observations across its sessions, oldest first, paged; ?status=working for the unresolved",
)
@paginate
def book_observation_list(request: HttpRequest, book_id: uuid.UUID, filters: Query[ObservationFilter]):
    access = _access(request, book_id, Cap.DISCOVERY_READ)
    return services.book_observations(access.book, status=filters.status)


@router.get(
    "/books/{book_id}/canon",
    response={200: list[CanonPageClaimOut], **ERRORS},
    summary="The approved claims of the canon bases the caller may read, oldest first, paged (a dossier's rest)",
)
@paginate
def canon_list(request: HttpRequest, book_id: uuid.UUID):
    access = _access(request, book_id, Cap.BOOK_READ)
    return services.canon_claims(readable_bases(book_bases(access.book), access.caps)[0])


@router.get(
    "/books/{book_id}/author-constraints",
    response={200: list[dict], **ERRORS},
    summary="Every constraint the author recorded (the charter's, then each approve-with-constraint and steer "
    "in the decision log), each with the decision that set it, paged (a dossier's rest; book:read)",
)
@paginate
def author_constraints_list(request: HttpRequest, book_id: uuid.UUID):
    return services.author_constraints(_access(request, book_id, Cap.BOOK_READ).book)


@router.get(
    "/books/{book_id}/knowledge-bases",
    response={200: list[ViewBase], **ERRORS},
    summary="The knowledge bases the book uses that the caller may read, with their relation, paged",
)
@paginate
def knowledge_base_list(request: HttpRequest, book_id: uuid.UUID):
    access = _access(request, book_id, Cap.DISCOVERY_READ)
    return readable_bases(book_bases(access.book), access.caps)[0]


@router.post(
    "/sessions/{session_id}/turns",
    response={201: TurnOut, **ERRORS},
    summary="Add a turn with its observations (author, editor: turn:write; Sol: discovery:write)",
)
def turn_add(request: HttpRequest, session_id: uuid.UUID, payload: TurnIn):
    access, session = _session_access(request, session_id)
    turn = services.turn_add(access=access, session=session, payload=payload)
    return Status(201, turn_out(turn))


@router.post(
    "/sessions/{session_id}/scratchpad",
    response={201: EntryOut, **ERRORS},
    summary="Append a scratchpad entry (scratchpad:write; Sol through discovery:write)",
    description="Append-only: no route updates or deletes an entry. A digest cites at least one earlier entry.",
)
def scratchpad_append(request: HttpRequest, session_id: uuid.UUID, payload: EntryIn):
    access, session = _session_access(request, session_id)
    return Status(201, services.scratchpad_append(access=access, session=session, payload=payload))


@router.get(
    "/sessions/{session_id}/scratchpad",
    response={200: list[EntryOut], **ERRORS},
    summary="The session's scratchpad in creation order (scratchpad:read)",
)
@paginate
def scratchpad_list(request: HttpRequest, session_id: uuid.UUID, filters: Query[ScratchpadFilter]):
    _, session = _session_access(request, session_id, Cap.SCRATCHPAD_READ)
    return scratchpad_for(session=session, kind=filters.kind, agent_role=filters.agent_role)


@router.post(
    "/sessions/{session_id}/question",
    response={201: SessionQuestionOut, **ERRORS},
    summary="Sol puts the next question to the author, citing what prompted it (discovery:write)",
)
def question_set(request: HttpRequest, session_id: uuid.UUID, payload: QuestionSetIn):
    access, session = _session_access(request, session_id)
    return Status(201, services.question_set(access=access, session=session, payload=payload))


@router.post(
    "/sessions/{session_id}/question/close",
    response={200: QuestionClosedOut, **ERRORS},
    summary="Sol has nothing more to ask: the current question closes; its history stays (discovery:write)",
)
def question_close(request: HttpRequest, session_id: uuid.UUID):
    access, session = _session_access(request, session_id)
    closed = services.question_close(access=access, session=session)
    return {"session_id": session.pk, "closed": closed}


@router.get(
    "/sessions/{session_id}/questions",
    response={200: list[SessionQuestionOut], **ERRORS},
    summary="Every question put to the author in this session, oldest first (discovery:read)",
)
@paginate
def question_list(request: HttpRequest, session_id: uuid.UUID):
    _, session = _session_access(request, session_id, Cap.DISCOVERY_READ)
    return session.questions.order_by("sequence")


@router.post(
    "/sessions/{session_id}/thrusts",
    response={201: ThrustOut, **ERRORS},
    summary="Propose a story-thrust candidate (charter:propose or discovery:write)",
)
def thrust_propose(request: HttpRequest, session_id: uuid.UUID, payload: ThrustIn):
    access, session = _session_access(request, session_id)
    return Status(201, services.thrust_propose(access=access, session=session, payload=payload))


# --- Observations ---------------------------------------------------------------------


@router.post(
    "/turns/{turn_id}/observations",
    response={201: ObservationOut, **ERRORS},
    summary="Extract an observation from a person's turn (scratchpad:write or discovery:write); it enters working",
    description="What a person's turn speaks to (a charter field, a named person, place or thing), citing the turn. "
    "It always enters working and waits for the author to confirm, correct or retire it; never author-stated.",
)
def observation_extract(request: HttpRequest, turn_id: uuid.UUID, payload: ObservationIn):
    turn = turn_get(turn_id)
    access = book_access(principal_of(request), turn.session.book, missing="turn")
    return Status(201, services.observation_extract(access=access, turn=turn, payload=payload))


@router.post(
    "/observations/{observation_id}/resolve",
    response={200: ObservationDetailOut, **ERRORS},
    summary="The author confirms, corrects or retires an observation (append-only history)",
    description="action: confirm | correct (with value) | retire (with rationale, the reason). A correction keeps "
    "the old value in the observation's history; a retired observation leaves the unresolved set.",
)
def observation_resolve(request: HttpRequest, observation_id: uuid.UUID, payload: ObservationResolveIn):
    observation = observation_get(observation_id)
    access = book_access(principal_of(request), observation.session.book, missing="observation")
    observation, _ = services.observation_resolve(access=access, observation=observation, payload=payload)
    return services.observation_detail(observation)


@router.get(
    "/observations/{observation_id}",
    response={200: ObservationDetailOut, **ERRORS},
    summary="One observation, its current value and its history (discovery:read)",
)
def observation_detail(request: HttpRequest, observation_id: uuid.UUID):
    observation = observation_get(observation_id)
    book_access(principal_of(request), observation.session.book, Cap.DISCOVERY_READ, missing="observation")
    return services.observation_detail(observation)


@router.get(
    "/observations/{observation_id}/revisions",
    response={200: list[ObservationRevisionOut], **ERRORS},
    summary="An observation's history, oldest first, paged (discovery:read)",
)
@paginate
def observation_revisions(request: HttpRequest, observation_id: uuid.UUID):
    observation = observation_get(observation_id)
    book_access(principal_of(request), observation.session.book, Cap.DISCOVERY_READ, missing="observation")
    return services.observation_history(observation)


# --- Charters ----------------------------------------------------------------------


@router.post(
    "/books/{book_id}/charters",
    response={201: CharterCreatedOut, **ERRORS},
    summary="Propose the next Story Charter version (charter:propose); opens a pending approval",
)
def charter_propose(request: HttpRequest, book_id: uuid.UUID, payload: CharterIn):
    return Status(201, services.charter_propose(access=_access(request, book_id), payload=payload))


@router.post(
    "/charters/{charter_id}/resolve",
    response={200: CharterOut, **ERRORS},
    summary="The author approves or rejects a proposed charter, with a rationale",
)
def charter_resolve(request: HttpRequest, charter_id: uuid.UUID, payload: CharterResolveIn):
    charter = charter_get(charter_id)
    access = book_access(principal_of(request), charter.book, missing="charter")
    return services.charter_resolve(
        access=access, charter=charter, approved=payload.approved, rationale=payload.rationale
    )


# --- Claims ----------------------------------------------------------------------


@router.post(
    "/claims",
    response={201: ClaimOut, **ERRORS},
    summary="Propose a knowledge claim (canon:propose); claims always enter as proposed",
)
def claim_propose(request: HttpRequest, payload: ClaimIn):
    access, base = services.claim_target(principal_of(request), payload.scope, payload.scope_id)
    return Status(201, services.claim_propose(access=access, base=base, payload=payload))


@router.post(
    "/claims/{claim_id}/request-approval",
    response={201: ApprovalRefOut, **ERRORS},
    summary="Sol asks the author to promote a claim (approval:request)",
)
def claim_request_approval(request: HttpRequest, claim_id: uuid.UUID, payload: RequestApprovalIn):
    access = _access(request, payload.book_id)
    approval = services.claim_request_approval(access=access, claim_id=claim_id, note=payload.note)
    return Status(201, {"approval_id": approval.pk, "claim_id": claim_id, "status": approval.status})


@router.post(
    "/claims/{claim_id}/story",
    response={200: ClaimOut, **ERRORS},
    summary="Set a proposed claim's story record (canon:propose); a pending approval of it lapses",
    description="When it is true (chapters), who knows it, where the reader first sees it, whether it is decisive "
    "evidence (for which reveal) and whether it is a reveal. A new proposal: the approval's fingerprint covers it. "
    "Approved canon changes only through a new claim that revises it (409).",
)
def claim_story_set(request: HttpRequest, claim_id: uuid.UUID, payload: ClaimStoryIn):
    access = _access(request, payload.book_id)
    return services.claim_story_set(access=access, claim_id=claim_id, payload=payload)


@router.get(
    "/books/{book_id}/claims/{claim_id}/conflicts",
    response={200: list[ConflictOut], **ERRORS},
    summary="The approved canon a proposed claim contradicts, both sides named, paged (book:read)",
)
@paginate
def claim_conflicts_list(request: HttpRequest, claim_id: uuid.UUID, book_id: uuid.UUID):
    access = _access(request, book_id, Cap.BOOK_READ)
    return claim_conflicts(access, services.claim_for_book(access, claim_id))


def _claim_decide(request: HttpRequest, claim_id: uuid.UUID, payload: ClaimDecisionIn, approve: bool) -> dict:
    access = _access(request, payload.book_id)
    approval = services.claim_decide(access=access, claim_id=claim_id, approve=approve, rationale=payload.rationale)
    return {
        "approval_id": approval.pk,
        "claim_id": claim_id,
        "claim_status": "approved" if approve else "rejected",
        "verdict": approval.verdict,
    }


@router.post(
    "/claims/{claim_id}/promote",
    response={200: ClaimDecisionOut, **ERRORS},
    summary="The author promotes a proposed claim to canon, with a rationale",
)
def claim_promote(request: HttpRequest, claim_id: uuid.UUID, payload: ClaimDecisionIn):
    return _claim_decide(request, claim_id, payload, approve=True)


@router.post(
    "/claims/{claim_id}/reject",
    response={200: ClaimDecisionOut, **ERRORS},
    summary="The author rejects a proposed claim, with a rationale (it stays in history)",
)
def claim_reject(request: HttpRequest, claim_id: uuid.UUID, payload: ClaimDecisionIn):
    return _claim_decide(request, claim_id, payload, approve=False)


@router.post(
    "/claims/{claim_id}/supersede",
    response={200: ClaimOut, **ERRORS},
    summary="The author supersedes approved canon with a new value and a rationale (a logged decision; "
    "the old claim becomes revised, its history kept)",
)
def claim_supersede(request: HttpRequest, claim_id: uuid.UUID, payload: ClaimSupersedeIn):
    access = _access(request, payload.book_id)
    return services.claim_supersede(access=access, claim_id=claim_id, value=payload.value, rationale=payload.rationale)


@router.post(
    "/claims/{claim_id}/retract",
    response={200: ClaimOut, **ERRORS},
    summary="The author retracts approved canon with a rationale (a logged decision; the claim stays in history)",
)
def claim_retract(request: HttpRequest, claim_id: uuid.UUID, payload: ClaimRetractIn):
    access = _access(request, payload.book_id)
    return services.claim_retract(access=access, claim_id=claim_id, rationale=payload.rationale)


# --- Dossiers ----------------------------------------------------------------------


@router.post(
    "/books/{book_id}/dossiers",
    response={201: DossierOut, **ERRORS},
    summary="Take an immutable, role-scoped dossier (agents: their own role; the author: any role)",
)
def dossier_create(request: HttpRequest, book_id: uuid.UUID, payload: DossierIn):
    dossier = services.dossier_create(
        access=_access(request, book_id), agent_role=payload.agent_role, as_of_chapter=payload.as_of_chapter
    )
    return Status(201, dossier)


@router.get(
    "/books/{book_id}/dossiers",
    response={200: list[DossierOut], **ERRORS},
    summary="The book's dossiers, newest first (an agent sees its own role's)",
)
@paginate
def dossier_list(request: HttpRequest, book_id: uuid.UUID):
    return services.dossiers_for(_access(request, book_id, Cap.BOOK_READ))


@router.get("/dossiers/{dossier_id}", response={200: DossierOut, **ERRORS}, summary="One dossier snapshot")
def dossier_detail(request: HttpRequest, dossier_id: uuid.UUID):
    dossier = dossier_get(dossier_id)
    access = book_access(principal_of(request), dossier.book, missing="dossier")
    return services.dossier_readable(access, dossier)


# --- Codex: canon on a chapter axis -----------------------------------------------------


@router.get(
    "/books/{book_id}/codex",
    response={200: CodexOut, **ERRORS},
    summary="The book's canon with story records, and the fair-play check of its reveals (book:read)",
    description="As of a chapter (`as_of_chapter`): only what is true by then; reveals first shown later are "
    "withheld and other facts the reader has not seen are marked secret. Canon the role may not read "
    "(series canon for Luna) is withheld and named.",
)
def codex_get(request: HttpRequest, book_id: uuid.UUID, filters: Query[AsOfFilter]):
    return codex_capped(_access(request, book_id, Cap.BOOK_READ), filters.as_of_chapter)


def _codex_part(request: HttpRequest, book_id: uuid.UUID, as_of_chapter: int | None) -> dict:
    return codex_view(_access(request, book_id, Cap.BOOK_READ), as_of_chapter)


@router.get("/books/{book_id}/codex/chapters", response={200: list[dict], **ERRORS}, summary="The codex's chapters")
@paginate
def codex_chapters(request: HttpRequest, book_id: uuid.UUID, filters: Query[AsOfFilter]):
    return _codex_part(request, book_id, filters.as_of_chapter)["chapters"]


@router.get(
    "/books/{book_id}/codex/claims", response={200: list[CanonClaimOut], **ERRORS}, summary="The codex's claims"
)
@paginate
def codex_claims(request: HttpRequest, book_id: uuid.UUID, filters: Query[AsOfFilter]):
    return _codex_part(request, book_id, filters.as_of_chapter)["claims"]


@router.get("/books/{book_id}/codex/withheld", response={200: list[str], **ERRORS}, summary="What the codex withholds")
@paginate
def codex_withheld(request: HttpRequest, book_id: uuid.UUID, filters: Query[AsOfFilter]):
    return _codex_part(request, book_id, filters.as_of_chapter)["withheld"]


@router.get("/books/{book_id}/codex/findings", response={200: list[dict], **ERRORS}, summary="Fair-play findings")
@paginate
def codex_findings(request: HttpRequest, book_id: uuid.UUID, filters: Query[AsOfFilter]):
    return _codex_part(request, book_id, filters.as_of_chapter)["fair_play"]["findings"]


@router.get(
    "/books/{book_id}/codex/claims/{claim_id}/history",
    response={200: ClaimHistoryOut, **ERRORS},
    summary="One claim's history: every version, its sources and each decision with its rationale (book:read)",
    description="The versions are the claims joined through `revises` (the canon now, the values it replaced, a "
    "retraction, revisions rejected or waiting), oldest first. 404 for a claim the role may not read "
    "(series canon for Luna).",
)
def codex_claim_history(request: HttpRequest, book_id: uuid.UUID, claim_id: uuid.UUID):
    return claim_history(_access(request, book_id, Cap.BOOK_READ), claim_id)


@router.get(
    "/books/{book_id}/codex/claims/{claim_id}/versions",
    response={200: list[ClaimVersionOut], **ERRORS},
    summary="Every version of a claim, oldest first, paged: the rest of its history's versions (book:read)",
)
@paginate
def codex_claim_versions(request: HttpRequest, book_id: uuid.UUID, claim_id: uuid.UUID):
    return ClaimVersions(_access(request, book_id, Cap.BOOK_READ), claim_id)


@router.get(
    "/books/{book_id}/codex/claims/{claim_id}/decisions",
    response={200: list[ClaimDecisionLogOut], **ERRORS},
    summary="Every decision naming one version of a claim, oldest first, paged: the rest of its decisions",
)
@paginate
def codex_claim_decisions(request: HttpRequest, book_id: uuid.UUID, claim_id: uuid.UUID):
    return claim_decisions(_access(request, book_id, Cap.BOOK_READ), claim_id)


# --- Handoffs ----------------------------------------------------------------------


@router.post(
    "/books/{book_id}/handoffs",
    response={201: HandoffOut, **ERRORS},
    summary="Hand a task to Terra or Luna (Sol or the author), with a dossier snapshot for the target role",
)
def handoff_create(request: HttpRequest, book_id: uuid.UUID, payload: HandoffIn):
    handoff = services.handoff_create(access=_access(request, book_id), payload=payload)
    return Status(201, handoff_out(handoff))


@router.post(
    "/handoffs/{handoff_id}/result",
    response={200: HandoffOut, **ERRORS},
    summary="The target role returns facts, inferences, options and questions (each becomes a scratchpad entry)",
)
def handoff_return(request: HttpRequest, handoff_id: uuid.UUID, payload: HandoffResultIn):
    handoff = handoff_get(handoff_id)
    access = book_access(principal_of(request), handoff.book, Cap.DISCOVERY_READ, missing="handoff")
    return handoff_out(services.handoff_return(access=access, handoff=handoff, payload=payload))


@router.get("/handoffs/{handoff_id}", response={200: HandoffOut, **ERRORS}, summary="One handoff and its result")
def handoff_detail(request: HttpRequest, handoff_id: uuid.UUID):
    handoff = handoff_get(handoff_id)
    book_access(principal_of(request), handoff.book, Cap.DISCOVERY_READ, missing="handoff")
    return handoff_out(handoff)


@router.get(
    "/handoffs/{handoff_id}/result-entries",
    response={200: list[EntryOut], **ERRORS},
    summary="The entries a handoff's result wrote, in order, paged (its detail holds the first page)",
)
@paginate
def handoff_result_entries(request: HttpRequest, handoff_id: uuid.UUID):
    handoff = handoff_get(handoff_id)
    book_access(principal_of(request), handoff.book, Cap.DISCOVERY_READ, missing="handoff")
    return handoff.result_entries.order_by("sequence", "id")


# --- Searching a book's own record --------------------------------------------


@router.get(
    "/books/{book_id}/search",
    response={200: RecordSearchOut, **ERRORS},
    summary="Search a book's turns, scratchpad, claims and charters",
)
def book_search(request: HttpRequest, book_id: uuid.UUID, params: Query[RecordSearchParams]):
    """Any word of ``q``, ranked, over what the role may read of the book; the rest is named in ``withheld``."""
    access = book_access(principal_of(request), book_id, Cap.BOOK_READ)
    return book_record_search(access, params.q, limit=params.limit).as_dict()


# --- The book's webhook -------------------------------------------------------------------------


def _webhook_out(endpoint) -> dict:
    return {
        "url": endpoint.url,
        "secret": endpoint.secret,
        "active": endpoint.active,
        "deliveries": webhook_deliveries(endpoint),
    }


@router.put("/books/{book_id}/webhook", response={200: WebhookOut, **ERRORS}, summary="Register the book's webhook")
def webhook_put(request: HttpRequest, book_id: uuid.UUID, payload: WebhookIn):
    """The author registers where the book's events are posted (signed with the secret this answers)."""
    access = book_access(principal_of(request), book_id, Cap.BOOK_READ)
    return _webhook_out(webhook_set(access=access, url=payload.url))


@router.get("/books/{book_id}/webhook", response={200: WebhookOut, **ERRORS}, summary="The book's webhook and its log")
def webhook_get(request: HttpRequest, book_id: uuid.UUID):
    """The webhook and its delivery log (every attempt, latest first); only the author sees it (a 404 when none)."""
    access = book_access(principal_of(request), book_id, Cap.BOOK_READ)
    access.require_author()
    endpoint = webhook_of(access.book)
    if endpoint is None:
        raise NotFound("this book has no webhook", code="no_webhook")
    return _webhook_out(endpoint)
