"""Discovery's duties for agents through MCP: its tools (each a thin call into the service its REST
route calls) and what an agent reads (its dossier, the book's question, the handoffs addressed to it).

Registered from ``DiscoveryConfig.ready()`` into the kernel's registry (``novelgraph.core.duties``),
which the MCP server reads. Access is resolved exactly as the route resolves it (``book_access``
from the book, or from the object's book with ``missing=``), and the service enforces every rule.
No tool decides: verdicts, charter resolution and canon promotion are the author's.

Resources (reading changes nothing; a book without a dossier for the role answers "not found" and
points at the ``dossier_take`` tool):

- ``novelgraph://books/{book_id}/dossier``: the role's latest dossier of the book (a snapshot is
  role-scoped when it is taken: Luna's carries no series canon and says so under ``withheld``).
- ``novelgraph://books/{book_id}/question``: the question the book's discovery is asking the
  author now, and the latest one Sol put with what prompted it (discovery:read).
- ``novelgraph://books/{book_id}/handoffs``: the open handoffs addressed to the role (discovery:read).
"""

from __future__ import annotations

import uuid

from pydantic import ValidationError as PydanticValidationError

from novelgraph.core.auth import Principal
from novelgraph.core.duties import (
    CONTROLLER,
    SCHEME,
    ResourceKind,
    ToolSpec,
    path_parameter,
    read_tool,
    register_resources,
    register_tools,
)
from novelgraph.core.errors import Invalid, NotFound

from . import services
from .access import Cap, book_access, books_visible_to, series_access
from .bible_api import (
    BibleChapterFilter,
    BibleOut,
    SeriesBibleAtFilter,
    SeriesBibleOut,
    bible_read,
    series_bible_read,
)
from .history import ClaimVersions, claim_decisions, claim_history
from .manuscript_api import (
    CodexEntryIn,
    CodexEntryOut,
    CompareFilter,
    CompareOut,
    FindingFilter,
    FindingOut,
    FindingsFiledOut,
    PromisesFilter,
    PromisesOut,
    RevisionFilter,
    RevisionOut,
    chapter_text_read,
    revisions_read,
)
from .promises import promises_report
from .record_search import book_record_search
from .schemas import (
    ApprovalRefOut,
    AsOfFilter,
    BookDetailOut,
    BookObservationOut,
    BookOut,
    CanonClaimOut,
    CanonPageClaimOut,
    ChapterOut,
    CharterCreatedOut,
    CharterIn,
    ClaimDecisionLogOut,
    ClaimHistoryOut,
    ClaimIn,
    ClaimOut,
    ClaimStoryIn,
    ClaimVersionOut,
    CodexOut,
    ConflictOut,
    DiscoveryViewOut,
    DossierOut,
    EntryIn,
    EntryOut,
    FindingsIn,
    HandoffIn,
    HandoffOut,
    HandoffResultIn,
    ObservationDetailOut,
    ObservationFilter,
    ObservationIn,
    ObservationOut,
    ObservationRevisionOut,
    QuestionClosedOut,
    QuestionSetIn,
    RecordSearchOut,
    RecordSearchParams,
    RequestApprovalIn,
    ScratchpadFilter,
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
    claim_conflicts,
    codex_capped,
    codex_entries,
    codex_view,
    continuity_findings,
    current_session,
    discovery_view_out,
    dossier_get,
    handoff_get,
    handoffs_open_to,
    observation_get,
    readable_bases,
    scratchpad_for,
    session_get,
    session_observations,
    session_thrusts,
    session_turns,
    turn_get,
    whoami,
)
from .services.manuscript import entry_propose, findings_record, revision_compare

# --- The calls: each resolves access as its REST route does, then calls the same service ---------


def _session(principal: Principal, args):
    session = session_get(args.session_id)
    return book_access(principal, session.book, missing="session"), session


def dossier_take(principal: Principal, args, _payload):
    # The route's body names the role; an agent takes only its own, so the key names it here.
    access = book_access(principal, args.book_id)
    return services.dossier_create(access=access, agent_role=principal.key_role)


def scratchpad_append(principal: Principal, args, payload: EntryIn):
    access, session = _session(principal, args)
    return services.scratchpad_append(access=access, session=session, payload=payload)


def handoff_return(principal: Principal, args, payload: HandoffResultIn):
    handoff = handoff_get(args.handoff_id)
    access = book_access(principal, handoff.book, Cap.DISCOVERY_READ, missing="handoff")
    return handoff_out(services.handoff_return(access=access, handoff=handoff, payload=payload))


def thrust_propose(principal: Principal, args, payload: ThrustIn):
    access, session = _session(principal, args)
    return services.thrust_propose(access=access, session=session, payload=payload)


def charter_propose(principal: Principal, args, payload: CharterIn):
    return services.charter_propose(access=book_access(principal, args.book_id), payload=payload)


def claim_propose(principal: Principal, _args, payload: ClaimIn):
    access, base = services.claim_target(principal, payload.scope, payload.scope_id)
    return services.claim_propose(access=access, base=base, payload=payload)


def claim_request_approval(principal: Principal, args, payload: RequestApprovalIn):
    access = book_access(principal, payload.book_id)
    approval = services.claim_request_approval(access=access, claim_id=args.claim_id, note=payload.note)
    return {"approval_id": approval.pk, "claim_id": args.claim_id, "status": approval.status}


def question_set(principal: Principal, args, payload: QuestionSetIn):
    access, session = _session(principal, args)
    return services.question_set(access=access, session=session, payload=payload)


def question_close(principal: Principal, args, _payload):
    access, session = _session(principal, args)
    return {"session_id": session.pk, "closed": services.question_close(access=access, session=session)}


def handoff_create(principal: Principal, args, payload: HandoffIn):
    return handoff_out(services.handoff_create(access=book_access(principal, args.book_id), payload=payload))


def discovery_start(principal: Principal, args, _payload):
    session, _created = services.discovery_start(access=book_access(principal, args.book_id))
    return {"session_id": session.pk, "status": session.status, "current_question": session.current_question}


def turn_add(principal: Principal, args, payload: TurnIn):
    access, session = _session(principal, args)
    return turn_out(services.turn_add(access=access, session=session, payload=payload))


def claim_story_set(principal: Principal, args, payload: ClaimStoryIn):
    access = book_access(principal, payload.book_id)
    return services.claim_story_set(access=access, claim_id=args.claim_id, payload=payload)


def book_search(principal: Principal, args, params: RecordSearchParams):
    access = book_access(principal, args.book_id, Cap.BOOK_READ)
    return book_record_search(access, params.q, limit=params.limit).as_dict()


def codex_read(principal: Principal, args, filters: AsOfFilter):
    return codex_capped(book_access(principal, args.book_id, Cap.BOOK_READ), filters.as_of_chapter)


def bible_get(principal: Principal, args, filters: BibleChapterFilter):
    return bible_read(book_access(principal, args.book_id, Cap.BOOK_READ), filters.chapter)


def series_bible_get(principal: Principal, args, filters: SeriesBibleAtFilter):
    access = series_access(principal, args.series_id, Cap.SERIES_READ)
    return series_bible_read(access, filters.book, filters.chapter)


def observation_extract(principal: Principal, args, payload: ObservationIn):
    turn = turn_get(args.turn_id)
    access = book_access(principal, turn.session.book, missing="turn")
    return services.observation_extract(access=access, turn=turn, payload=payload)


def codex_entry_propose(principal: Principal, args, payload: CodexEntryIn):
    access = book_access(principal, args.book_id)
    return entry_propose(access=access, name=payload.name, kind=payload.kind, aliases=payload.aliases)


def codex_entries_read(principal: Principal, args, _payload):
    return codex_entries(book_access(principal, args.book_id, Cap.BOOK_READ).book)


def chapter_text_get(principal: Principal, args, filters: RevisionFilter):
    return chapter_text_read(book_access(principal, args.book_id, Cap.BOOK_READ), args.number, filters.revision)


def chapter_revisions_get(principal: Principal, args, _payload):
    return revisions_read(book_access(principal, args.book_id, Cap.BOOK_READ), args.number)


def chapter_compare_get(principal: Principal, args, filters: CompareFilter):
    access = book_access(principal, args.book_id, Cap.BOOK_READ)
    return revision_compare(access=access, number=args.number, older=filters.older, newer=filters.newer)


def continuity_read(principal: Principal, args, filters: FindingFilter):
    book = book_access(principal, args.book_id, Cap.BOOK_READ).book
    return continuity_findings(book, chapter=filters.chapter, status=filters.status)


def promises_read(principal: Principal, args, filters: PromisesFilter):
    return promises_report(book_access(principal, args.book_id, Cap.BOOK_READ), filters.chapter)


def continuity_file(principal: Principal, args, payload: FindingsIn):
    access = book_access(principal, args.book_id, Cap.BOOK_READ)
    return {"filed": findings_record(access=access, number=args.number, payload=payload)}


_SCRATCHPAD = (Cap.SCRATCHPAD_WRITE, Cap.DISCOVERY_WRITE)

TOOLS: tuple[ToolSpec, ...] = (
    # Every agent role: its own dossier, the scratchpad, the handoffs addressed to it.
    ToolSpec(
        name="dossier_take",
        route="POST /books/{book_id}/dossiers",
        description="Take a fresh, immutable snapshot of what your role is given on a book now: the approved "
        "charter, the knowledge bases and approved claims you may read, the scratchpad, the working "
        "observations and your capabilities; what your role may not read is listed under `withheld`.",
        needs=(Cap.BOOK_READ,),
        run=dossier_take,
        out=DossierOut,
        path=("book_id",),
    ),
    ToolSpec(
        name="scratchpad_append",
        route="POST /sessions/{session_id}/scratchpad",
        description="Append one provisional entry (observation, hypothesis, question, contradiction, alternative "
        "or digest) to a session's append-only scratchpad. Source references must be things of the book "
        "your role may read; a digest cites at least one earlier entry.",
        needs=_SCRATCHPAD,
        run=scratchpad_append,
        out=EntryOut,
        payload=EntryIn,
        path=("session_id",),
    ),
    ToolSpec(
        name="handoff_return",
        route="POST /handoffs/{handoff_id}/result",
        description="Return the result of a handoff addressed to your role, once: facts, inferences, options "
        "and questions, each of which becomes a scratchpad entry linked to the handoff.",
        needs=(Cap.SCRATCHPAD_WRITE,),
        run=handoff_return,
        out=HandoffOut,
        payload=HandoffResultIn,
        path=("handoff_id",),
    ),
    # Proposing (Terra, Sol): nothing proposed is binding until the author decides.
    ToolSpec(
        name="thrust_propose",
        route="POST /sessions/{session_id}/thrusts",
        description="Propose a story-thrust candidate for a discovery session (stored as proposed).",
        needs=(Cap.CHARTER_PROPOSE, Cap.DISCOVERY_WRITE),
        run=thrust_propose,
        out=ThrustOut,
        payload=ThrustIn,
        path=("session_id",),
    ),
    ToolSpec(
        name="charter_propose",
        route="POST /books/{book_id}/charters",
        description="Propose the next Story Charter version of a book; it opens a pending approval that only "
        "the author decides.",
        needs=(Cap.CHARTER_PROPOSE,),
        run=charter_propose,
        out=CharterCreatedOut,
        payload=CharterIn,
        path=("book_id",),
    ),
    # Sol, the coordinator.
    ToolSpec(
        name="claim_propose",
        route="POST /claims",
        description="Propose a knowledge claim for a book, its series or a session's run notes; it always "
        "enters as proposed.",
        needs=(Cap.CANON_PROPOSE,),
        run=claim_propose,
        out=ClaimOut,
        payload=ClaimIn,
    ),
    ToolSpec(
        name="claim_request_approval",
        route="POST /claims/{claim_id}/request-approval",
        description="Ask the author to promote a proposed claim to canon (a pending canon-promotion approval).",
        needs=(Cap.APPROVAL_REQUEST,),
        run=claim_request_approval,
        out=ApprovalRefOut,
        payload=RequestApprovalIn,
        path=("claim_id",),
    ),
    ToolSpec(
        name="question_set",
        route="POST /sessions/{session_id}/question",
        description="Put the next question to the author, citing the turn, entry or observation that prompted "
        "it; it becomes the session's current question and the earlier ones stay in its history.",
        needs=CONTROLLER,
        run=question_set,
        out=SessionQuestionOut,
        payload=QuestionSetIn,
        path=("session_id",),
    ),
    ToolSpec(
        name="question_close",
        route="POST /sessions/{session_id}/question/close",
        description="Close the author's current question when there is nothing more to ask her; the book page "
        "then says so and offers no answer to it. The next question set opens one again.",
        needs=CONTROLLER,
        run=question_close,
        out=QuestionClosedOut,
        path=("session_id",),
    ),
    ToolSpec(
        name="handoff_create",
        route="POST /books/{book_id}/handoffs",
        description="Hand a bounded task to Terra or Luna: the decision it informs, the sources it may use and "
        "the status of each statement; a dossier snapshot for the target role is taken with it.",
        needs=CONTROLLER,
        run=handoff_create,
        out=HandoffOut,
        payload=HandoffIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="discovery_start",
        route="POST /books/{book_id}/discovery",
        description="Start the discovery of a book, or resume the session already under way (nothing is "
        "created twice).",
        needs=(Cap.DISCOVERY_WRITE,),
        run=discovery_start,
        out=StartOut,
        path=("book_id",),
        idempotent=True,
    ),
    ToolSpec(
        name="observation_extract",
        route="POST /turns/{turn_id}/observations",
        description="Record what a person's turn speaks to (a charter field, a named person, place or thing) as a "
        "working observation citing that turn; the author confirms, corrects or retires it. Never author-stated.",
        needs=_SCRATCHPAD,
        run=observation_extract,
        out=ObservationOut,
        payload=ObservationIn,
        path=("turn_id",),
    ),
    ToolSpec(
        name="turn_add",
        route="POST /sessions/{session_id}/turns",
        description="Add Sol's turn to the conversation with the observations it makes (each a working "
        "observation the author confirms, corrects or retires).",
        needs=(Cap.TURN_WRITE, Cap.DISCOVERY_WRITE),
        run=turn_add,
        out=TurnOut,
        payload=TurnIn,
        path=("session_id",),
    ),
    ToolSpec(
        name="claim_story_set",
        route="POST /claims/{claim_id}/story",
        description="Set a proposed claim's story record (when it is true, who knows it, where the reader first "
        "sees it, whether it is decisive evidence or a reveal); a pending approval of it lapses.",
        needs=(Cap.CANON_PROPOSE,),
        run=claim_story_set,
        out=ClaimOut,
        payload=ClaimStoryIn,
        path=("claim_id",),
    ),
    # Reads.
    ToolSpec(
        name="book_search",
        route="GET /books/{book_id}/search",
        description="Search the book's own record (turns, scratchpad, claims, charters) for what your role may "
        "read; what it may not is named under `withheld`.",
        needs=(Cap.BOOK_READ,),
        run=book_search,
        out=RecordSearchOut,
        payload=RecordSearchParams,
        path=("book_id",),
        read_only=True,
    ),
    ToolSpec(
        name="codex_read",
        route="GET /books/{book_id}/codex",
        description="The book's canon with its story records and the fair-play check of its reveals, as of a "
        "chapter (`as_of_chapter`): only what is true by then, reveals not yet shown withheld.",
        needs=(Cap.BOOK_READ,),
        run=codex_read,
        out=CodexOut,
        payload=AsOfFilter,
        path=("book_id",),
        read_only=True,
    ),
    # The story bible (issue 29): what a reader of chapter N may know. Share links are the author's (no tool).
    ToolSpec(
        name="bible_read",
        route="GET /books/{book_id}/bible",
        description="The story bible as of a chapter: what a reader of that chapter may know, by kind (people, "
        "places, objects, events) and codex entry. Later reveals, secrets and facts true only later are left out "
        "and counted (`left_out`, `left_out_words`), never named.",
        needs=(Cap.BOOK_READ,),
        run=bible_get,
        out=BibleOut,
        payload=BibleChapterFilter,
        path=("book_id",),
        read_only=True,
    ),
    ToolSpec(
        name="series_bible_read",
        route="GET /series/{series_id}/bible",
        description="The series bible as of a book of the series and a chapter of it: the series' canon, then "
        "each earlier book read entirely and that book to the chapter, by kind and codex entry. Later books, later "
        "reveals and secrets are left out and counted (`left_out`, `left_out_words`), never named (series:read).",
        needs=(Cap.SERIES_READ,),
        run=series_bible_get,
        out=SeriesBibleOut,
        payload=SeriesBibleAtFilter,
        path=("series_id",),
        read_only=True,
    ),
    # The manuscript (issue 28): its entries, a chapter's text, the continuity findings; Luna files what her
    # check found. No tool writes the text or settles a finding: that is the author's.
    ToolSpec(
        name="codex_entries_read",
        route="GET /books/{book_id}/codex/entries",
        description="The codex's entries (people, places, objects, events), each with its kind, its aliases "
        "(the other names the text may use) and the claims that name it.",
        needs=(Cap.BOOK_READ,),
        run=codex_entries_read,
        out=CodexEntryOut,
        path=("book_id",),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="codex_entry_propose",
        route="POST /books/{book_id}/codex/entries",
        description="Propose a codex entry (a person, place, object or event, with its other names), say for "
        "the name of a not-in-canon finding. It waits, proposed, for the author's verdict and counts for "
        "nothing until she approves it.",
        needs=(Cap.CANON_PROPOSE,),
        run=codex_entry_propose,
        out=CodexEntryOut,
        payload=CodexEntryIn,
        path=("book_id",),
    ),
    ToolSpec(
        name="chapter_text_read",
        route="GET /books/{book_id}/chapters/{number}/text",
        description="A chapter's text (Markdown), its latest revision or the one named, with its word count.",
        needs=(Cap.BOOK_READ,),
        run=chapter_text_get,
        out=RevisionOut,
        payload=RevisionFilter,
        path=("book_id", "number"),
        read_only=True,
    ),
    ToolSpec(
        name="chapter_revisions_read",
        route="GET /books/{book_id}/chapters/{number}/revisions",
        description="A chapter's revisions, oldest first, each with its number and word count (not its text: "
        "chapter_text_read reads one).",
        needs=(Cap.BOOK_READ,),
        run=chapter_revisions_get,
        out=RevisionOut,
        path=("book_id", "number"),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="chapter_compare",
        route="GET /books/{book_id}/chapters/{number}/compare",
        description="Two revisions of a chapter compared: the words added and removed, and the lines' diff.",
        needs=(Cap.BOOK_READ,),
        run=chapter_compare_get,
        out=CompareOut,
        payload=CompareFilter,
        path=("book_id", "number"),
        read_only=True,
    ),
    ToolSpec(
        name="continuity_findings_read",
        route="GET /books/{book_id}/continuity",
        description="The continuity check's findings (by chapter, by status): kind, chapter, the quoted span "
        "and its offsets, the claims and entries it concerns, a message, and how the author settled it.",
        needs=(Cap.BOOK_READ,),
        run=continuity_read,
        out=FindingOut,
        payload=FindingFilter,
        path=("book_id",),
        read_only=True,
        many=True,
    ),
    ToolSpec(
        name="reader_promises_read",
        route="GET /books/{book_id}/promises",
        description="The reader promises as of a chapter (the last when left out): every reveal, every clue a "
        "reveal needs and the charter's reader promise, with where the text plants and pays each off, the first "
        "chapter whose text shows it beside its planned chapter, and what is open, overdue and never planted.",
        needs=(Cap.BOOK_READ,),
        run=promises_read,
        out=PromisesOut,
        payload=PromisesFilter,
        path=("book_id",),
        read_only=True,
    ),
    ToolSpec(
        name="continuity_findings_file",
        route="POST /books/{book_id}/chapters/{number}/findings",
        description="Luna: file what your continuity check of a revision of the chapter found; each quote must "
        "be the revision's text at its offsets. A finding already filed is not filed again; an open one the "
        "revision no longer shows closes as fixed. Only the author settles findings.",
        needs=(Cap.BOOK_READ,),
        run=continuity_file,
        out=FindingsFiledOut,
        payload=FindingsIn,
        path=("book_id", "number"),
    ),
)


# --- Reads: each GET route an agent may call, through the selector or service the route calls ----------


def _book_reading(principal: Principal, args, cap: Cap = Cap.DISCOVERY_READ):
    return book_access(principal, args.book_id, cap)


def _session_reading(principal: Principal, args, cap: Cap = Cap.DISCOVERY_READ):
    session = session_get(args.session_id)
    book_access(principal, session.book, cap, missing="session")
    return session


def _observation_reading(principal: Principal, args):
    observation = observation_get(args.observation_id)
    book_access(principal, observation.session.book, Cap.DISCOVERY_READ, missing="observation")
    return observation


def _handoff_reading(principal: Principal, args):
    handoff = handoff_get(args.handoff_id)
    book_access(principal, handoff.book, Cap.DISCOVERY_READ, missing="handoff")
    return handoff


def book_detail(principal: Principal, args, _params):
    access = _book_reading(principal, args, Cap.BOOK_READ)
    book = access.book
    book.role = access.role
    book.capabilities = sorted(c.value for c in access.caps)
    return book


def _codex_part(principal: Principal, args, filters: AsOfFilter) -> dict:
    return codex_view(_book_reading(principal, args, Cap.BOOK_READ), filters.as_of_chapter)


def dossier_detail(principal: Principal, args, _params):
    dossier = dossier_get(args.dossier_id)
    return services.dossier_readable(book_access(principal, dossier.book, missing="dossier"), dossier)


def claim_conflicts_read(principal: Principal, args, _params):
    access = _book_reading(principal, args, Cap.BOOK_READ)
    return claim_conflicts(access, services.claim_for_book(access, args.claim_id))


_BOOK = ("book_id",)
_SESSION = ("session_id",)
_READ = (Cap.DISCOVERY_READ,)
_BOOK_READ = (Cap.BOOK_READ,)


READS: tuple[ToolSpec, ...] = (
    read_tool(
        "whoami",
        "GET /me",
        "Who your key is: its role, what the role may do and the books it may touch.",
        lambda p, _a, _q: whoami(p),
        WhoAmI,
        needs=_BOOK_READ,
    ),
    read_tool(
        "books_list",
        "GET /books",
        "The books your key may touch, by title, paged.",
        lambda p, _a, _q: books_visible_to(p).order_by("title", "id"),
        BookOut,
        needs=_BOOK_READ,
        many=True,
    ),
    read_tool(
        "book_read",
        "GET /books/{book_id}",
        "One book, with your role on it and what the role may do.",
        book_detail,
        BookDetailOut,
        _BOOK,
        _BOOK_READ,
    ),
    read_tool(
        "book_chapters",
        "GET /books/{book_id}/chapters",
        "The book's chapters, in order (Chapter 1 exists after the G3 hand-off), paged.",
        lambda p, a, _q: book_chapters(_book_reading(p, a, Cap.BOOK_READ).book),
        ChapterOut,
        _BOOK,
        _BOOK_READ,
        many=True,
    ),
    read_tool(
        "discovery_read",
        "GET /books/{book_id}/discovery",
        "The discovery view: sessions, turns, observations, thrusts, scratchpad, charters and knowledge bases "
        "(a first page of each, with the paged tool for the rest).",
        lambda p, a, _q: discovery_view_out(_book_reading(p, a)),
        DiscoveryViewOut,
        _BOOK,
    ),
    read_tool(
        "book_sessions",
        "GET /books/{book_id}/sessions",
        "The book's discovery sessions, oldest first, paged.",
        lambda p, a, _q: book_sessions(_book_reading(p, a).book),
        SessionOut,
        _BOOK,
        many=True,
    ),
    read_tool(
        "book_turns",
        "GET /books/{book_id}/turns",
        "The book's turns across its sessions (session by session, by ordinal), paged.",
        lambda p, a, _q: book_turns(_book_reading(p, a).book),
        ViewTurn,
        _BOOK,
        many=True,
    ),
    read_tool(
        "book_thrusts",
        "GET /books/{book_id}/thrusts",
        "The book's thrust candidates across its sessions, in creation order, paged.",
        lambda p, a, _q: book_thrusts(_book_reading(p, a).book),
        ThrustOut,
        _BOOK,
        many=True,
    ),
    read_tool(
        "book_scratchpad",
        "GET /books/{book_id}/scratchpad",
        "The book's scratchpad across its sessions, in creation order, paged (filter by kind or role).",
        lambda p, a, f: scratchpad_for(
            book=_book_reading(p, a, Cap.SCRATCHPAD_READ).book, kind=f.kind, agent_role=f.agent_role
        ),
        EntryOut,
        _BOOK,
        (Cap.SCRATCHPAD_READ,),
        ScratchpadFilter,
        many=True,
    ),
    read_tool(
        "book_observations",
        "GET /books/{book_id}/observations",
        "The book's observations across its sessions, oldest first, paged (status=working: the unresolved).",
        lambda p, a, f: services.book_observations(_book_reading(p, a).book, status=f.status),
        BookObservationOut,
        _BOOK,
        payload=ObservationFilter,
        many=True,
    ),
    read_tool(
        "book_charters",
        "GET /books/{book_id}/charters",
        "The book's Story Charter versions, newest first, paged.",
        lambda p, a, _q: book_charters(_book_reading(p, a).book),
        ViewCharter,
        _BOOK,
        many=True,
    ),
    read_tool(
        "canon_list",
        "GET /books/{book_id}/canon",
        "The approved claims of the canon bases your role may read, oldest first, paged (a dossier's rest).",
        lambda p, a, _q: services.canon_claims(
            readable_bases(book_bases((acc := _book_reading(p, a, Cap.BOOK_READ)).book), acc.caps)[0]
        ),
        CanonPageClaimOut,
        _BOOK,
        _BOOK_READ,
        many=True,
    ),
    read_tool(
        "author_constraints",
        "GET /books/{book_id}/author-constraints",
        "Every constraint the author recorded (the charter's, each approve-with-constraint and steer), with the "
        "decision that set it, paged.",
        lambda p, a, _q: services.author_constraints(_book_reading(p, a, Cap.BOOK_READ).book),
        dict,
        _BOOK,
        _BOOK_READ,
        many=True,
    ),
    read_tool(
        "knowledge_bases",
        "GET /books/{book_id}/knowledge-bases",
        "The knowledge bases the book uses that your role may read, with their relation, paged.",
        lambda p, a, _q: readable_bases(book_bases((acc := _book_reading(p, a)).book), acc.caps)[0],
        ViewBase,
        _BOOK,
        many=True,
    ),
    read_tool(
        "session_turns",
        "GET /sessions/{session_id}/turns",
        "The session's turns by ordinal, paged.",
        lambda p, a, _q: session_turns(_session_reading(p, a)),
        ViewTurn,
        _SESSION,
        many=True,
    ),
    read_tool(
        "session_observations",
        "GET /sessions/{session_id}/observations",
        "The session's observations in creation order, paged.",
        lambda p, a, _q: session_observations(_session_reading(p, a)),
        ObservationOut,
        _SESSION,
        many=True,
    ),
    read_tool(
        "session_thrusts",
        "GET /sessions/{session_id}/thrusts",
        "The session's thrust candidates in creation order, paged.",
        lambda p, a, _q: session_thrusts(_session_reading(p, a)),
        ThrustOut,
        _SESSION,
        many=True,
    ),
    read_tool(
        "session_scratchpad",
        "GET /sessions/{session_id}/scratchpad",
        "The session's scratchpad in creation order, paged (filter by kind or role).",
        lambda p, a, f: scratchpad_for(
            session=_session_reading(p, a, Cap.SCRATCHPAD_READ), kind=f.kind, agent_role=f.agent_role
        ),
        EntryOut,
        _SESSION,
        (Cap.SCRATCHPAD_READ,),
        ScratchpadFilter,
        many=True,
    ),
    read_tool(
        "session_questions",
        "GET /sessions/{session_id}/questions",
        "Every question put to the author in the session, oldest first, paged.",
        lambda p, a, _q: _session_reading(p, a).questions.order_by("sequence"),
        SessionQuestionOut,
        _SESSION,
        many=True,
    ),
    read_tool(
        "observation_read",
        "GET /observations/{observation_id}",
        "One observation, its current value and the first page of its history.",
        lambda p, a, _q: services.observation_detail(_observation_reading(p, a)),
        ObservationDetailOut,
        ("observation_id",),
    ),
    read_tool(
        "observation_revisions",
        "GET /observations/{observation_id}/revisions",
        "An observation's history, oldest first, paged.",
        lambda p, a, _q: services.observation_history(_observation_reading(p, a)),
        ObservationRevisionOut,
        ("observation_id",),
        many=True,
    ),
    read_tool(
        "claim_conflicts",
        "GET /books/{book_id}/claims/{claim_id}/conflicts",
        "The approved canon a proposed claim contradicts, both sides named, paged.",
        claim_conflicts_read,
        ConflictOut,
        ("book_id", "claim_id"),
        _BOOK_READ,
        many=True,
    ),
    read_tool(
        "dossiers_list",
        "GET /books/{book_id}/dossiers",
        "Your role's dossiers of the book, newest first, paged.",
        lambda p, a, _q: services.dossiers_for(_book_reading(p, a, Cap.BOOK_READ)),
        DossierOut,
        _BOOK,
        _BOOK_READ,
        many=True,
    ),
    read_tool(
        "dossier_read",
        "GET /dossiers/{dossier_id}",
        "One dossier snapshot of your role.",
        dossier_detail,
        DossierOut,
        ("dossier_id",),
        _BOOK_READ,
    ),
    read_tool(
        "codex_chapters",
        "GET /books/{book_id}/codex/chapters",
        "The codex's chapters (as of a chapter), paged.",
        lambda p, a, f: _codex_part(p, a, f)["chapters"],
        dict,
        _BOOK,
        _BOOK_READ,
        AsOfFilter,
        many=True,
    ),
    read_tool(
        "codex_claims",
        "GET /books/{book_id}/codex/claims",
        "The codex's claims (as of a chapter), paged.",
        lambda p, a, f: _codex_part(p, a, f)["claims"],
        CanonClaimOut,
        _BOOK,
        _BOOK_READ,
        AsOfFilter,
        many=True,
    ),
    read_tool(
        "codex_withheld",
        "GET /books/{book_id}/codex/withheld",
        "What the codex withholds from your role (as of a chapter), paged.",
        lambda p, a, f: _codex_part(p, a, f)["withheld"],
        str,
        _BOOK,
        _BOOK_READ,
        AsOfFilter,
        many=True,
    ),
    read_tool(
        "codex_findings",
        "GET /books/{book_id}/codex/findings",
        "The fair-play findings of the codex's reveals (as of a chapter), paged.",
        lambda p, a, f: _codex_part(p, a, f)["fair_play"]["findings"],
        dict,
        _BOOK,
        _BOOK_READ,
        AsOfFilter,
        many=True,
    ),
    read_tool(
        "claim_history",
        "GET /books/{book_id}/codex/claims/{claim_id}/history",
        "One claim's history: every version, its sources and each decision with its rationale.",
        lambda p, a, _q: claim_history(_book_reading(p, a, Cap.BOOK_READ), a.claim_id),
        ClaimHistoryOut,
        ("book_id", "claim_id"),
        _BOOK_READ,
    ),
    read_tool(
        "claim_versions",
        "GET /books/{book_id}/codex/claims/{claim_id}/versions",
        "Every version of a claim, oldest first, paged.",
        lambda p, a, _q: ClaimVersions(_book_reading(p, a, Cap.BOOK_READ), a.claim_id),
        ClaimVersionOut,
        ("book_id", "claim_id"),
        _BOOK_READ,
        many=True,
    ),
    read_tool(
        "claim_decisions",
        "GET /books/{book_id}/codex/claims/{claim_id}/decisions",
        "Every decision naming a version of a claim, oldest first, paged.",
        lambda p, a, _q: claim_decisions(_book_reading(p, a, Cap.BOOK_READ), a.claim_id),
        ClaimDecisionLogOut,
        ("book_id", "claim_id"),
        _BOOK_READ,
        many=True,
    ),
    read_tool(
        "handoff_read",
        "GET /handoffs/{handoff_id}",
        "One handoff and its result.",
        lambda p, a, _q: handoff_out(_handoff_reading(p, a)),
        HandoffOut,
        ("handoff_id",),
    ),
    read_tool(
        "handoff_result_entries",
        "GET /handoffs/{handoff_id}/result-entries",
        "The entries a handoff's result wrote, in order, paged.",
        lambda p, a, _q: _handoff_reading(p, a).result_entries.order_by("sequence", "id"),
        EntryOut,
        ("handoff_id",),
        many=True,
    ),
)

# --- What an agent reads -------------------------------------------------------------------------


def _json(schema, obj) -> dict:
    return schema.from_orm(obj).model_dump(mode="json")


def dossier_latest(principal: Principal, book_id: str) -> dict:
    access = book_access(principal, book_id, Cap.BOOK_READ)
    dossier = services.dossiers_for(access).first()
    if dossier is None:
        raise NotFound(f"no {access.role} dossier of this book yet; take one with the dossier_take tool")
    return _json(DossierOut, dossier)


def question_current(principal: Principal, book_id: str) -> dict:
    access = book_access(principal, book_id, Cap.DISCOVERY_READ)
    session = current_session(access.book)
    if session is None:
        raise NotFound("this book has no discovery session yet")
    asked = session.questions.order_by("-sequence").first()
    return {
        "book_id": str(access.book.pk),
        "session_id": str(session.pk),
        "session_status": session.status,
        "current_question": session.current_question,
        "asked": _json(SessionQuestionOut, asked) if asked else None,
    }


def codex_as_of(principal: Principal, book_id: str, as_of_chapter: str | None = None) -> dict:
    try:
        chapter = AsOfFilter.model_validate({"as_of_chapter": as_of_chapter}).as_of_chapter
    except PydanticValidationError as exc:
        raise Invalid(f"as_of_chapter: {exc.errors()[0]['msg']}", field="as_of_chapter") from None
    return _json(CodexOut, codex_capped(book_access(principal, book_id, Cap.BOOK_READ), chapter))


def handoff_read(principal: Principal, handoff_id: str) -> dict:
    handoff = handoff_get(handoff_id)
    book_access(principal, handoff.book, Cap.DISCOVERY_READ, missing="handoff")
    return HandoffOut.model_validate(handoff_out(handoff)).model_dump(mode="json")


def handoffs_open(principal: Principal, book_id: str) -> dict:
    access = book_access(principal, book_id, Cap.DISCOVERY_READ)
    return {
        "book_id": str(access.book.pk),
        "to_role": access.role,
        "handoffs": [
            HandoffOut.model_validate(handoff_out(h)).model_dump(mode="json") for h in handoffs_open_to(access)
        ],
    }


RESOURCES: tuple[ResourceKind, ...] = (
    ResourceKind(
        name="dossier",
        template=f"{SCHEME}://books/{{book_id}}/dossier",
        description="Your role's latest dossier of the book: what it was given and what was withheld.",
        read=dossier_latest,
    ),
    ResourceKind(
        name="question",
        template=f"{SCHEME}://books/{{book_id}}/question",
        description="The question the book's discovery is asking the author now, and what prompted it.",
        read=question_current,
    ),
    ResourceKind(
        name="handoffs",
        template=f"{SCHEME}://books/{{book_id}}/handoffs",
        description="The open handoffs addressed to your role on the book.",
        read=handoffs_open,
    ),
    ResourceKind(
        name="codex",
        template=f"{SCHEME}://books/{{book_id}}/codex",
        description="The book's canon with its story records and the fair-play check of its reveals.",
        read=codex_as_of,
    ),
    ResourceKind(
        name="codex-as-of",
        template=f"{SCHEME}://books/{{book_id}}/codex/{{as_of_chapter}}",
        description="The codex as of a chapter: only what is true by then; reveals the reader has not seen "
        "yet are withheld.",
        read=codex_as_of,
    ),
    ResourceKind(
        name="handoff",
        template=f"{SCHEME}://handoffs/{{handoff_id}}",
        description="One handoff: the decision it informs, its sources and statuses, and its result once returned.",
        read=handoff_read,
        per_book=False,
    ),
)


def _books_listed(principal: Principal):
    return books_visible_to(principal).order_by("title", "id")


def register() -> None:
    path_parameter("number", int, "The chapter's number (1 is the first).")
    path_parameter(
        "series_id", uuid.UUID, "The series' id (a book's `series_id`, as `GET /books/{book_id}` answers it)."
    )
    register_tools(*TOOLS, *READS)
    register_resources(*RESOURCES, books_of=_books_listed)
