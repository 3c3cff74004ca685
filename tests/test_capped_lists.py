"""Every list in a response is capped, with a link to the rest (issue 20, item 4): the lists the bounded reads
(tests/test_bounded_reads.py) left — ``/me``'s book ids, the loop's queued re-runs, lint findings, a cascade's
affected slots, an agent run's ``written``, a handoff's lists, an approval's and a decision's lists.

Each scene has more items than the cap (``VIEW_PAGE``); the response carries the first ``VIEW_PAGE`` and a link,
and following the link gives the rest: together every item once, in order.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from discovery.loop.models import LensRerun, RerunStatus, TraceEdge, TraceNode
from discovery.selectors import VIEW_PAGE

from .factories import BookFactory
from .loop_scenes import started_book, url  # noqa: F401 (the book, its discovery started)

pytestmark = pytest.mark.django_db
EXTRA = 3
MORE = VIEW_PAGE + EXTRA


def _follow(api, link: str) -> dict:
    """GET an absolute API link (``/api/v1/...?query``) with ``api`` (whose paths are under /api/v1)."""
    parts = urlsplit(link)
    assert parts.path.startswith("/api/v1/"), link
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    assert query["limit"] == str(VIEW_PAGE) and query["offset"] == str(VIEW_PAGE), link
    response = api.get(parts.path[len("/api/v1") :], **query)
    assert response.status_code == 200, (link, response.content)
    return response.json()


# --- /me ------------------------------------------------------------------------------------


def test_me_gives_a_page_of_book_ids_and_a_link_to_the_rest(author, author_api, book):
    BookFactory.create_batch(MORE, owner=author)
    me = author_api.get("/me").json()

    assert len(me["book_ids"]) == VIEW_PAGE
    rest = _follow(author_api, me["next"]["book_ids"])
    assert rest["count"] == MORE + 1
    ids = me["book_ids"] + [b["id"] for b in rest["items"]]
    listed = [b["id"] for b in author_api.get("/books", limit=MORE + 1).json()["items"]]
    assert ids == listed, "the page and the rest are GET /books, in its order, every book once"


def test_me_within_one_page_has_no_link(author_api, book):
    me = author_api.get("/me").json()
    assert me["book_ids"] == [str(book.pk)]
    assert me["next"] == {"book_ids": None}


# --- the loop -------------------------------------------------------------------------------


def test_the_loop_gives_a_page_of_queued_reruns_and_a_link_to_the_rest(author_api, book):
    LensRerun.objects.bulk_create(
        [LensRerun(book=book, lens=f"lens-{n:03}", artifacts=[f"a{n}"], reason="stale") for n in range(MORE)]
    )
    LensRerun.objects.create(book=book, lens="done-one", reason="stale", status=RerunStatus.DONE)
    view = author_api.get(url(book)).json()

    assert len(view["queued_reruns"]) == VIEW_PAGE
    rest = _follow(author_api, view["next"]["queued_reruns"])
    assert rest["count"] == MORE, "only the queued ones"
    lenses = [r["lens"] for r in view["queued_reruns"]] + [r["lens"] for r in rest["items"]]
    assert sorted(lenses) == [f"lens-{n:03}" for n in range(MORE)]
    assert len(set(lenses)) == MORE
    assert len(view["roster"]) < VIEW_PAGE, "the roster is the fixed roster"


def test_a_loop_with_few_queued_reruns_has_no_link(author_api, book):
    assert author_api.get(url(book)).json()["next"] == {"queued_reruns": None}


def test_lint_gives_a_page_of_findings_and_a_link_to_the_rest(author_api, book):
    TraceNode.objects.bulk_create([TraceNode(book=book, node_id=f"loose-{n:03}", kind="clue") for n in range(MORE)])
    lint = author_api.get(url(book, "/lint"), strict="true").json()

    total = sum(lint["counts"].values())
    assert total >= MORE
    assert len(lint["findings"]) == VIEW_PAGE
    assert "strict=true" in lint["next"]["findings"]
    rest = _follow(author_api, lint["next"]["findings"])
    assert rest["count"] == total and len(rest["items"]) == total - VIEW_PAGE
    assert all(f["severity"] == "failure" for f in rest["items"] if f["code"] == "orphan"), "strict is kept"
    every = author_api.get(url(book, "/lint/findings"), strict="true", limit=total).json()["items"]
    assert lint["findings"] + rest["items"] == every


def test_a_cascade_preview_gives_a_page_of_affected_slots_and_a_link_to_the_rest(author_api, book):
    assert TraceNode.objects.filter(book=book, node_id="premise").exists()  # the loop drew its root at start
    TraceNode.objects.bulk_create([TraceNode(book=book, node_id=f"ch-{n:03}", kind="chapter") for n in range(MORE)])
    TraceEdge.objects.bulk_create([TraceEdge(book=book, from_id="premise", to_id=f"ch-{n:03}") for n in range(MORE)])
    impact = author_api.get(url(book, "/cascade-preview"), node="premise").json()

    assert impact["affected_count"] == MORE
    assert len(impact["affected"]) == VIEW_PAGE
    rest = _follow(author_api, impact["next"]["affected"])
    assert rest["count"] == MORE
    ids = [a["node_id"] for a in impact["affected"]] + [a["node_id"] for a in rest["items"]]
    assert sorted(ids) == [f"ch-{n:03}" for n in range(MORE)] and len(set(ids)) == MORE


def test_a_small_cascade_preview_has_no_link(author_api, book):
    assert TraceNode.objects.filter(book=book, node_id="premise").exists()  # the loop drew its root at start
    TraceNode.objects.create(book=book, node_id="ch1", kind="chapter")
    TraceEdge.objects.create(book=book, from_id="premise", to_id="ch1")
    impact = author_api.get(url(book, "/cascade-preview"), node="premise").json()
    assert impact["affected_count"] == 1 and impact["next"] == {"affected": None}


# --- a handoff's result entries, an agent run's written ----------------------------------------


def test_a_handoff_gives_a_page_of_its_result_entries_and_a_link_to_the_rest(author_api, book):
    from .factories import HandoffFactory, ScratchpadEntryFactory

    handoff = HandoffFactory(book=book, session=current_session_of(book))
    for n in range(1, MORE + 1):
        ScratchpadEntryFactory(session=handoff.session, handoff=handoff, sequence=n, agent_role="luna")
    detail = author_api.get(f"/handoffs/{handoff.pk}").json()

    assert len(detail["result_entries"]) == VIEW_PAGE
    rest = _follow(author_api, detail["next"]["result_entries"])
    assert rest["count"] == MORE
    sequences = [e["sequence"] for e in detail["result_entries"]] + [e["sequence"] for e in rest["items"]]
    assert sequences == list(range(1, MORE + 1))


def test_a_handoff_with_few_entries_has_no_link(author_api, book):
    from .factories import HandoffFactory

    handoff = HandoffFactory(book=book, session=current_session_of(book))
    detail = author_api.get(f"/handoffs/{handoff.pk}").json()
    assert detail["result_entries"] == [] and detail["next"] == {"result_entries": None}


def test_an_agent_run_gives_a_page_of_what_it_wrote_and_a_link_to_the_rest(author_api, luna_api, book):
    from discovery.agents.models import AgentRunOutput

    from .factories import AgentRunFactory

    run = AgentRunFactory(book=book, role="luna")
    AgentRunOutput.objects.bulk_create(
        [AgentRunOutput(run=run, type="entry", object_id=f"obj-{n:03}", position=n) for n in range(MORE)]
    )
    expected = [f"obj-{n:03}" for n in range(MORE)]
    for api in (author_api, luna_api):
        for got in (
            api.get(f"/agent-runs/{run.pk}").json(),
            api.get(f"/books/{book.pk}/agent-runs").json()["items"][0],
        ):
            assert len(got["written"]) == VIEW_PAGE
            rest = _follow(api, got["next"]["written"])
            assert rest["count"] == MORE
            assert [w["id"] for w in got["written"]] + [w["id"] for w in rest["items"]] == expected


def test_another_roles_run_and_its_written_stay_hidden(terra_api, book):
    from .factories import AgentRunFactory

    run = AgentRunFactory(book=book, role="luna")
    assert terra_api.get(f"/agent-runs/{run.pk}/written").status_code == 404


def current_session_of(book):
    from discovery.selectors import current_session

    return current_session(book)


def test_an_approvals_impact_preview_is_capped_with_the_same_link(author_api, sol_api, book):
    from .loop_scenes import ask_gate

    assert TraceNode.objects.filter(book=book, node_id="premise").exists()  # the loop drew its root at start
    TraceNode.objects.bulk_create([TraceNode(book=book, node_id=f"ch-{n:03}", kind="chapter") for n in range(MORE)])
    TraceEdge.objects.bulk_create([TraceEdge(book=book, from_id="premise", to_id=f"ch-{n:03}") for n in range(MORE)])
    asked = ask_gate(sol_api, book, "G0", trace_seed="premise")
    assert asked.status_code in (200, 201), asked.json()
    detail = author_api.get(f"/approvals/{asked.json()['approval_id']}").json()

    for impact in (detail["impact"], detail["proposal"]["impact"]):
        assert impact["affected_count"] == MORE and len(impact["affected"]) == VIEW_PAGE
        rest = _follow(author_api, impact["next"]["affected"])
        ids = [a["node_id"] for a in impact["affected"]] + [a["node_id"] for a in rest["items"]]
        assert sorted(ids) == [f"ch-{n:03}" for n in range(MORE)]


@pytest.mark.parametrize("extra", [0, EXTRA])
def test_the_bench_floor_answers_me_as_ours_does(author, book, monkeypatch, extra):
    """bench/floor_wsgi.py answers GET /api/v1/me with the same JSON (the bench compares them before timing),
    here through the test's own database connection (so it reads the scene's rows)."""
    import io
    import json

    from django.db import connection
    from django.test import Client

    from bench import floor_wsgi
    from discovery.access import CAPABILITIES
    from novelgraph.core.services import api_key_create

    from .conftest import Api

    BookFactory.create_batch(VIEW_PAGE - 1 + extra, owner=author)
    raw = api_key_create(owner=author, role="author")[1]
    ours = Api(Client(), raw).get("/me").json()

    connection.ensure_connection()
    monkeypatch.setitem(floor_wsgi._local, "conn", connection.connection)
    monkeypatch.setattr(
        floor_wsgi, "CAPABILITIES", {r: sorted(c.value for c in caps) for r, caps in CAPABILITIES.items()}
    )
    assert floor_wsgi.PAGE == VIEW_PAGE
    status = []
    body = floor_wsgi.app(
        {
            "PATH_INFO": "/api/v1/me",
            "REQUEST_METHOD": "GET",
            "HTTP_AUTHORIZATION": f"Bearer {raw}",
            "wsgi.input": io.BytesIO(),
        },
        lambda s, headers: status.append(s),
    )
    assert status[0].startswith("200")
    assert json.loads(b"".join(body)) == ours
    assert (ours["next"]["book_ids"] is not None) == bool(extra)


# --- the codex --------------------------------------------------------------------------------


def test_the_codex_gives_a_page_of_chapters_and_claims_and_links_to_the_rest(author_api, author, book):
    from django.utils import timezone

    from discovery.models import KnowledgeBase

    from .factories import ApprovalFactory, ChapterFactory, KnowledgeClaimFactory

    base = KnowledgeBase.objects.get(scope=KnowledgeBase.Scope.BOOK, owner_id=str(book.pk))
    approval = ApprovalFactory(
        book=book,
        kind="canon-promotion",
        subject_type="claim",
        status="decided",
        verdict="approve",
        rationale="Canon.",
        decided_by=author,
        decided_at=timezone.now(),
    )
    for n in range(MORE):
        KnowledgeClaimFactory(base=base, subject=f"Subject {n:03}", status="approved", approval=approval)
        ChapterFactory(book=book, number=n + 1)
    for as_of in (None, MORE):
        query = {} if as_of is None else {"as_of_chapter": as_of}
        codex = author_api.get(f"/books/{book.pk}/codex", **query).json()
        every = {part: codex[part] for part in ("chapters", "claims")}
        for part, ident in (("chapters", "number"), ("claims", "id")):
            assert len(codex[part]) == VIEW_PAGE, part
            link = codex["next"][part]
            assert (f"as_of_chapter={as_of}" in link) == (as_of is not None)
            rest = _follow(author_api, link)
            assert rest["count"] == MORE
            every[part] = codex[part] + rest["items"]
            assert len({item[ident] for item in every[part]}) == MORE, part
        assert [c["number"] for c in every["chapters"]] == list(range(1, MORE + 1))
        assert sorted(c["subject"] for c in every["claims"]) == [f"Subject {n:03}" for n in range(MORE)]
        whole = author_api.get(f"/books/{book.pk}/codex/claims", limit=MORE, **query).json()["items"]
        assert whole == every["claims"], "the rest is the codex's own claims, in its order, with the same fields"
        assert codex["next"]["withheld"] is None and codex["next"]["findings"] is None


# --- a claim's history ---------------------------------------------------------------------------


def _superseded(author_api, book, times: int) -> list[str]:
    """A canon claim superseded ``times`` times through the API: its versions' ids, oldest first."""
    made = author_api.post(
        "/claims",
        {
            "scope": "book",
            "scope_id": str(book.pk),
            "subject": "Tova",
            "predicate": "lives in",
            "value": "v000",
            "provenance": "author-stated",
        },
    )
    assert made.status_code == 201, made.content
    ids = [made.json()["id"]]
    assert (
        author_api.post(f"/claims/{ids[0]}/promote", {"book_id": str(book.pk), "rationale": "So."}).status_code == 200
    )
    for n in range(1, times + 1):
        new = author_api.post(
            f"/claims/{ids[-1]}/supersede", {"book_id": str(book.pk), "value": f"v{n:03}", "rationale": f"r{n}"}
        )
        assert new.status_code == 200, new.content
        ids.append(new.json()["id"])
    return ids


def test_a_claims_history_gives_a_page_of_versions_and_decisions_and_links_to_the_rest(
    author, author_api, author_browser, book
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from approvals.services import decision_log_append
    from discovery.services.claims import CLAIM_SUBJECT

    ids = _superseded(author_api, book, MORE)  # MORE + 1 versions
    for n in range(MORE):
        decision_log_append(
            book=book,
            decision="approve",
            subject_type=CLAIM_SUBJECT,
            subject_id=ids[0],
            rationale=f"again {n:03}",
            ratified_by_user=author,
        )
    history = f"/books/{book.pk}/codex/claims/{{}}/history"
    got = author_api.get(history.format(ids[-1])).json()
    assert got["versions_count"] == MORE + 1 and len(got["versions"]) == VIEW_PAGE
    assert got["canon"]["id"] == ids[-1], "the canon now is named even when it is not on the page"
    rest = _follow(author_api, got["next"]["versions"])
    assert rest["count"] == MORE + 1
    assert [v["id"] for v in got["versions"] + rest["items"]] == ids, "every version once, oldest first"
    assert [v["number"] for v in rest["items"]] == list(range(VIEW_PAGE + 1, MORE + 2))
    assert rest["items"][-1] == {**got["canon"], "requested": True}

    first = got["versions"][0]
    assert first["decisions_count"] == MORE + 1 and len(first["decisions"]) == VIEW_PAGE  # promote, and MORE
    more = _follow(author_api, first["next"]["decisions"])
    every = first["decisions"] + more["items"]
    assert more["count"] == MORE + 1 and len({d["sequence"] for d in every}) == MORE + 1
    assert [d["sequence"] for d in every] == sorted(d["sequence"] for d in every)
    assert got["versions"][1]["next"] == {"decisions": None}

    # As many statements for this history as for a claim with one version.
    lone = _superseded(author_api, book, 0)[0]
    counts = []
    for pk in (lone, lone, ids[-1]):
        with CaptureQueriesContext(connection) as ctx:
            assert author_api.get(history.format(pk)).status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[1] == counts[2], counts

    # The page: the newest versions first shown, "Older versions" links back, each version once.
    page = f"/books/{book.pk}/codex/claims/{ids[0]}/"
    html = author_browser.get(page).content.decode()
    seen = []
    while True:
        numbers = [int(n.split('"')[0]) for n in html.split('<li id="version-')[1:]]
        seen = numbers + seen
        if 'rel="prev">Older versions' not in html:
            break
        older = html.split('rel="prev">Older versions')[0].rsplit('href="', 1)[1].split('"')[0]
        html = author_browser.get(older.replace("&amp;", "&")).content.decode()
    assert seen == list(range(1, MORE + 2))
    assert "Newer versions" in html and "the rest</a> (JSON)" in html


def test_the_codex_timeline_draws_a_window_of_chapters_with_links_to_the_others(author_browser, author, book):
    import re

    from django.utils import timezone

    from discovery.models import KnowledgeBase

    from .factories import ApprovalFactory, ChapterFactory, KnowledgeClaimFactory

    base = KnowledgeBase.objects.get(scope=KnowledgeBase.Scope.BOOK, owner_id=str(book.pk))
    approval = ApprovalFactory(
        book=book,
        kind="canon-promotion",
        subject_type="claim",
        status="decided",
        verdict="approve",
        rationale="Canon.",
        decided_by=author,
        decided_at=timezone.now(),
    )
    KnowledgeClaimFactory(base=base, subject="Ada", status="approved", approval=approval)
    for n in range(MORE):
        ChapterFactory(book=book, number=n + 1)
    codex = f"/books/{book.pk}/codex/"

    def drawn(html: str) -> list[int]:
        svg = html.split('id="codex-timeline"')[1].split("</svg>")[0]
        return [int(n) for n in re.findall(r'class="tl-chapter"[^>]*>ch (\d+)<', svg)]

    html = author_browser.get(codex).content.decode()
    seen = drawn(html)
    assert seen == list(range(1, VIEW_PAGE + 1)), "a window of chapters, from where the page's claims start"
    pager = html.split('data-testid="timeline-pager"')[1].split("</nav>")[0]
    later = pager.split('rel="next"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    html = author_browser.get(later).content.decode()
    seen += drawn(html)
    assert seen == list(range(1, MORE + 1)), "every chapter once, in order"
    pager = html.split('data-testid="timeline-pager"')[1].split("</nav>")[0]
    assert 'rel="next"' not in pager and f"{VIEW_PAGE + 1}–{MORE} of {MORE}" in pager
    earlier = pager.split('rel="prev"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    assert drawn(author_browser.get(earlier).content.decode()) == list(range(1, VIEW_PAGE + 1))

    # A page whose claims start late opens on their chapters; a bad window start is the default one.
    from discovery.models import KnowledgeClaim

    KnowledgeClaim.objects.filter(base=base).update(true_from_chapter=40)
    assert drawn(author_browser.get(codex).content.decode())[0] == 40
    assert drawn(author_browser.get(codex + "?chapters_from=abc").content.decode())[0] == 40
    assert drawn(author_browser.get(codex + "?chapters_from=99999").content.decode()) == [MORE]


def test_a_retracted_offset_past_the_end_says_so_and_links_the_first_page(author_browser, book):
    from discovery.models import KnowledgeBase

    from .factories import ChapterFactory, KnowledgeClaimFactory

    base = KnowledgeBase.objects.get(scope=KnowledgeBase.Scope.BOOK, owner_id=str(book.pk))
    KnowledgeClaimFactory(base=base, subject="Gone", status="retracted")
    ChapterFactory(book=book, number=1)
    codex = f"/books/{book.pk}/codex/"
    html = author_browser.get(codex + f"?retracted_offset={VIEW_PAGE}&as_of_chapter=1").content.decode()
    assert 'data-testid="codex-retracted"' not in html
    line = html.split('data-testid="retracted-past-end"')[1].split("</p>")[0]
    assert f"from number {VIEW_PAGE + 1}" in line
    first = line.split('href="')[1].split('"')[0].replace("&amp;", "&")
    assert first == codex + "?as_of_chapter=1", "the first page, the chapter kept"
    page = author_browser.get(first).content.decode()
    assert 'data-testid="codex-retracted"' in page and "<strong>Gone</strong>" in page
    assert 'data-testid="retracted-past-end"' not in page
    assert 'data-testid="retracted-past-end"' not in author_browser.get(codex).content.decode()


def test_a_book_holds_at_most_a_page_of_open_thrusts_so_a_g15_card_names_them_all(sol_api, terra_api, book):
    from discovery.models import ThrustCandidate
    from discovery.services.sessions import MAX_OPEN_THRUSTS

    from .discovery_support import thrust_body
    from .factories import ThrustCandidateFactory

    session = current_session_of(book)
    ThrustCandidateFactory.create_batch(MAX_OPEN_THRUSTS - 1, session=session)
    ThrustCandidateFactory(session=session, status="rejected")
    assert sol_api.post(f"/sessions/{session.pk}/thrusts", thrust_body()).status_code == 201, "a rejected one is closed"
    refused = terra_api.post(f"/sessions/{session.pk}/thrusts", thrust_body())
    assert refused.status_code == 409 and refused.json()["code"] == "too_many_open_thrusts", refused.json()
    assert ThrustCandidate.objects.filter(session__book=book, status="proposed").count() == MAX_OPEN_THRUSTS
    assert MAX_OPEN_THRUSTS == VIEW_PAGE


def test_the_discovery_view_gives_a_page_of_sessions_and_a_link_to_the_rest(author_api, book):
    from discovery.models import DiscoverySession

    from .factories import DiscoverySessionFactory

    DiscoverySessionFactory.create_batch(MORE, book=book, status=DiscoverySession.Status.CLOSED)
    view = author_api.get(f"/books/{book.pk}/discovery").json()
    assert len(view["sessions"]) == VIEW_PAGE and view["session"] is not None
    rest = _follow(author_api, view["next"]["sessions"])
    assert rest["count"] == MORE + 1
    ids = [s["id"] for s in view["sessions"] + rest["items"]]
    every = DiscoverySession.objects.filter(book=book).order_by("created_at", "id").values_list("id", flat=True)
    assert ids == [str(pk) for pk in every], "every session once, oldest first"


def test_a_book_with_one_session_has_no_sessions_link(author_api, book):
    view = author_api.get(f"/books/{book.pk}/discovery").json()
    assert len(view["sessions"]) == 1 and view["next"]["sessions"] is None


# --- an observation's revisions -----------------------------------------------------------------


def test_an_observation_gives_a_page_of_its_revisions_and_a_link_to_the_rest(author_api, luna_api, book):
    from .factories import ObservationFactory, TurnFactory

    observation = ObservationFactory(turn=TurnFactory(session=current_session_of(book)), value="v0")
    for n in range(1, MORE + 1):
        # Confirm and correct in turn: every step of the author's is one revision, through the route she uses.
        body = {"action": "correct", "value": f"v{n}", "rationale": f"step {n}"}
        if n % 2:
            body = {"action": "confirm", "rationale": f"step {n}"} if n == 1 else body
        r = author_api.post(f"/observations/{observation.pk}/resolve", body)
        assert r.status_code == 200, r.json()
        assert len(r.json()["revisions"]) == min(n, VIEW_PAGE), "the resolve answer is capped the same way"
    for api in (author_api, luna_api):
        detail = api.get(f"/observations/{observation.pk}").json()
        assert detail["value"] == f"v{MORE}"
        assert len(detail["revisions"]) == VIEW_PAGE
        rest = _follow(api, detail["next"]["revisions"])
        assert rest["count"] == MORE
        every = detail["revisions"] + rest["items"]
        assert [r["sequence"] for r in every] == list(range(1, MORE + 1))
        assert [r["rationale"] for r in every] == [f"step {n}" for n in range(1, MORE + 1)]
        assert every[-1]["value"] == f"v{MORE}" and every[-1]["previous_value"] == f"v{MORE - 1}"


def test_an_observation_with_few_revisions_has_no_link(author_api, book, outsider):
    from django.test import Client

    from novelgraph.core.services import api_key_create

    from .conftest import Api
    from .factories import ObservationFactory, TurnFactory

    observation = ObservationFactory(turn=TurnFactory(session=current_session_of(book)))
    author_api.post(f"/observations/{observation.pk}/resolve", {"action": "confirm", "rationale": "Yes."})
    detail = author_api.get(f"/observations/{observation.pk}").json()
    assert len(detail["revisions"]) == 1 and detail["next"] == {"revisions": None}
    stranger = Api(Client(), api_key_create(owner=outsider, role="author")[1])
    assert stranger.get(f"/observations/{observation.pk}/revisions").status_code == 404


# --- the author's constraints: the loop's meta, a dossier's author_constraints ------------------


def _constrain(sol_api, author_api, book, count: int) -> list[str]:
    """``count`` approve-with-constraint verdicts at G0, each through the loop's verdict route; their texts."""
    from .loop_scenes import ask_gate, decide

    texts = []
    for n in range(count):
        asked = ask_gate(sol_api, book, "G0")
        assert asked.status_code == 201, asked.json()
        text = f"constraint {n:03}"
        r = decide(author_api, book, asked.json()["approval_id"], "approve-with-constraint", constraint=text)
        assert r.status_code == 200, r.json()
        texts.append(text)
    return texts


def test_the_loops_constraints_and_a_dossiers_are_capped_with_links_to_the_rest(
    author_api, sol_api, luna_api, author_browser, book
):
    from discovery.loop.models import LoopMeta

    texts = _constrain(sol_api, author_api, book, MORE)
    assert len(LoopMeta.objects.get(book=book).constraints) == MORE, "the state keeps them all"

    # The loop's meta, wherever a response carries it (the loop, a round, a verdict): a page, the count, the link.
    meta = author_api.get(url(book)).json()["meta"]
    assert meta["constraints_count"] == MORE and len(meta["constraints"]) == VIEW_PAGE
    rest = _follow(author_api, meta["next"]["constraints"])
    assert rest["count"] == MORE
    assert [c["text"] for c in meta["constraints"] + rest["items"]] == texts
    rounds = sol_api.post(url(book, "/rounds"), {}).json()
    assert rounds["constraints"] == meta["constraints"] and rounds["next"] == meta["next"]

    # A dossier (any role's: the author's constraints bind every agent) holds a page and links the rest.
    for api, role in ((author_api, "sol"), (luna_api, "luna")):
        created = api.post(f"/books/{book.pk}/dossiers", {"agent_role": role})
        assert created.status_code == 201, created.json()
        content = api.get(f"/dossiers/{created.json()['id']}").json()["content"]
        assert len(content["author_constraints"]) == VIEW_PAGE
        rest = _follow(api, content["more"]["author_constraints"])
        assert rest["count"] == MORE
        every = content["author_constraints"] + rest["items"]
        assert [c["text"] for c in every] == texts
        assert [c["decision"]["sequence"] for c in every] == sorted(c["decision"]["sequence"] for c in every)
        assert len({c["decision"]["sequence"] for c in every}) == MORE

    # The dossier page shows the snapshot's page and a "show more" that works without JavaScript.
    html = author_browser.get(f"/books/{book.pk}/dossiers/{created.json()['id']}/").content.decode()
    assert html.count("<li><strong>constraint ") == VIEW_PAGE
    more = f"/books/{book.pk}/?more=constraints&amp;offset={VIEW_PAGE}"
    assert more in html
    page = author_browser.get(more.replace("&amp;", "&")).content.decode()
    assert [f"constraint {n:03}" in page for n in range(MORE)] == [n >= VIEW_PAGE for n in range(MORE)]
    partial = author_browser.get(more.replace("&amp;", "&"), headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in partial and partial.count("<li><strong>constraint ") == EXTRA


def test_the_scope_boundary_names_a_page_of_the_constraints_and_links_the_rest(author_api, sol_api, book):
    from discovery.loop.models import LoopMeta

    from .loop_scenes import ask_gate

    texts = _constrain(sol_api, author_api, book, MORE)
    # A redirect's steer is recorded in the loop's meta, not in the scope boundary: the rest skips it.
    LoopMeta.objects.filter(book=book).update(
        constraints=[{"kind": "steer", "text": "a steer"}, *LoopMeta.objects.get(book=book).constraints]
    )
    slots = author_api.get(url(book, "/artifacts"), limit=200).json()["items"]
    [boundary] = [a for a in slots if a["slug"] == "scope-boundary"]
    asked = ask_gate(sol_api, book, "G0", artifacts=["scope-boundary"])
    assert asked.status_code == 201, asked.json()
    proposal = author_api.get(f"/approvals/{asked.json()['approval_id']}").json()["proposal"]
    [shown] = proposal["slots"]
    for content in (boundary["content"], shown["content"]):
        assert content["constraints_count"] == MORE and len(content["constraints"]) == VIEW_PAGE
        rest = _follow(author_api, content["constraints_rest"])
        assert rest["count"] == MORE
        assert [c["text"] for c in content["constraints"] + rest["items"]] == texts, "each once, in order"

    # A lens rewriting the slot keeps the author's record as it is (page, count and link).
    written = sol_api.post(
        url(book, "/artifacts"), {"slug": "scope-boundary", "type": "scope-boundary", "content": {"note": "x"}}
    )
    assert written.status_code in (200, 201), written.json()
    from discovery.loop.models import BlackboardArtifact

    stored = BlackboardArtifact.objects.get(book=book, slug="scope-boundary")
    kept = stored.successor["content"] if stored.successor else stored.content
    assert {k: kept[k] for k in ("constraints", "constraints_count", "constraints_rest")} == {
        k: boundary["content"][k] for k in ("constraints", "constraints_count", "constraints_rest")
    }


def test_a_loop_with_few_constraints_has_no_link(author_api, sol_api, book):
    _constrain(sol_api, author_api, book, 1)
    meta = author_api.get(url(book)).json()["meta"]
    assert meta["constraints_count"] == 1 and meta["next"] == {"constraints": None}
    assert author_api.get(url(book, "/constraints")).json()["count"] == 1
    [boundary] = [a for a in author_api.get(url(book, "/artifacts")).json()["items"] if a["slug"] == "scope-boundary"]
    assert boundary["content"]["constraints_count"] == 1 and boundary["content"]["constraints_rest"] is None
    assert author_api.get(url(book, "/constraints"), kind="nonsense").status_code == 422


def test_a_dossier_stored_before_its_constraints_were_capped_is_read_capped(author_api, book):
    from .factories import ContextDossierFactory

    constraints = [{"kind": "constraint", "text": f"old {n:03}", "decision": {}} for n in range(MORE)]
    stored = {"more": {"claims": None, "scratchpad": None, "observations": None}, "author_constraints": constraints}
    dossier = ContextDossierFactory(book=book, agent_role="sol", content=stored)
    content = author_api.get(f"/dossiers/{dossier.pk}").json()["content"]
    assert content["author_constraints"] == constraints[:VIEW_PAGE]
    assert content["more"]["author_constraints"].endswith(
        f"/books/{book.pk}/author-constraints?limit={VIEW_PAGE}&offset={VIEW_PAGE}"
    )
    dossier.refresh_from_db()
    assert len(dossier.content["author_constraints"]) == MORE, "the stored snapshot is never changed"


# --- a re-run's artifacts ------------------------------------------------------------------------


def test_a_reruns_artifacts_are_capped_with_a_link_to_the_rest(author_api, luna_api, book):
    slots = [f"slot-{n:03}" for n in range(MORE)]
    rerun = LensRerun.objects.create(book=book, lens="reader-trust", artifacts=slots, reason="a big cascade")
    for api in (author_api, luna_api):
        listed = api.get(url(book, "/reruns")).json()["items"][0]
        queued = api.get(url(book)).json()["queued_reruns"][0]
        for got in (listed, queued):
            assert got["artifacts_count"] == MORE and len(got["artifacts"]) == VIEW_PAGE
            rest = _follow(api, got["next"]["artifacts"])
            assert rest["count"] == MORE
            assert got["artifacts"] + rest["items"] == slots
    assert author_api.get(url(book, f"/reruns/{rerun.pk}/artifacts"), limit=1, offset=MORE - 1).json()["items"] == [
        slots[-1]
    ]


def test_a_small_rerun_has_no_link_and_another_books_rerun_is_not_found(author_api, book, author):
    from .loop_scenes import start_discovery

    other = BookFactory(owner=author)
    start_discovery(other)
    theirs = LensRerun.objects.create(book=other, lens="reader-trust", artifacts=["a"], reason="stale")
    LensRerun.objects.create(book=book, lens="reader-trust", artifacts=["a", "b"], reason="stale")
    got = author_api.get(url(book, "/reruns")).json()["items"][0]
    assert got["artifacts"] == ["a", "b"] and got["artifacts_count"] == 2 and got["next"] == {"artifacts": None}
    assert author_api.get(url(book, f"/reruns/{theirs.pk}/artifacts")).status_code == 404


# --- the breaker's decision-log row ----------------------------------------------------------------


def test_a_tripped_breaker_logs_a_page_of_the_affected_nodes_the_count_and_where_the_rest_is(author_api, sol_api, book):
    from approvals.models import DecisionLogEntry
    from approvals.selectors import decision_log_verify

    from .loop_scenes import ask_gate, decide

    assert TraceNode.objects.filter(book=book, node_id="premise").exists()  # the loop drew its root at start
    TraceNode.objects.bulk_create([TraceNode(book=book, node_id=f"ch-{n:03}", kind="chapter") for n in range(MORE)])
    TraceEdge.objects.bulk_create([TraceEdge(book=book, from_id="premise", to_id=f"ch-{n:03}") for n in range(MORE)])
    asked = ask_gate(sol_api, book, "G0", trace_seed="premise")
    r = decide(author_api, book, asked.json()["approval_id"], "redirect", constraint="another premise")
    assert r.status_code == 200, r.json()

    row = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    cascade = row.detail["effect"]["cascade"]
    assert cascade["surfaced"] is True and cascade["affected_count"] == MORE
    assert len(cascade["affected"]) == VIEW_PAGE, "capped when written: the row is hashed and never rewritten"
    assert r.json()["detail"] == row.detail
    rest = _follow(author_api, cascade["affected_rest"])
    assert rest["count"] == MORE
    ids = cascade["affected"] + [a["node_id"] for a in rest["items"]]
    assert sorted(ids) == [f"ch-{n:03}" for n in range(MORE)] and len(set(ids)) == MORE
    assert decision_log_verify(book).ok, "the capped row verifies by the unchanged recipe"
    verified = author_api.get(f"/books/{book.pk}/decision-log/verify").json()
    assert verified["ok"] is True, verified


def test_a_confirmed_cascade_logs_a_page_of_its_stale_nodes_slots_and_reruns_and_where_the_rest_is(
    author_api, sol_api, book
):
    from approvals.models import DecisionLogEntry
    from approvals.selectors import decision_log_verify
    from discovery.loop.models import BlackboardArtifact

    from .loop_scenes import ask_gate, decide

    assert TraceNode.objects.filter(book=book, node_id="premise").exists()  # the loop drew its root at start
    slots = BlackboardArtifact.objects.bulk_create(
        [
            BlackboardArtifact(book=book, slug=f"slot-{n:03}", type="beat", produced_by="luna", lens="reader-trust")
            for n in range(MORE)
        ]
    )
    nodes = [f"ch-{n:03}" for n in range(MORE)]
    TraceNode.objects.bulk_create(
        [TraceNode(book=book, node_id=n, kind="chapter", artifact=a) for n, a in zip(nodes, slots, strict=True)]
    )
    TraceEdge.objects.bulk_create([TraceEdge(book=book, from_id="premise", to_id=n) for n in nodes])
    asked = ask_gate(sol_api, book, "G0", trace_seed="premise")
    surfaced = decide(author_api, book, asked.json()["approval_id"], "redirect", constraint="another premise")
    follow = surfaced.json()["detail"]["effect"]["cascade"]["approval_id"]
    assert author_api.get(url(book, "/cascade-stale"), node="premise").json()["count"] == 0, "not cascaded yet"
    confirmed = decide(author_api, book, follow, "approve", rationale="Yes, all of it.")
    assert confirmed.status_code == 200, confirmed.json()

    row = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    cascade = row.detail["effect"]["cascade"]
    assert confirmed.json()["detail"] == row.detail
    assert cascade["applied"] is True and cascade["stale_count"] == MORE and len(cascade["stale"]) == VIEW_PAGE
    rest = _follow(author_api, cascade["stale_rest"])
    assert rest["count"] == MORE
    assert cascade["stale"] + [n["node_id"] for n in rest["items"]] == nodes, "every stale node once, in order"

    assert cascade["stale_artifacts_count"] == MORE and len(cascade["stale_artifacts"]) == VIEW_PAGE
    rest = _follow(author_api, cascade["stale_artifacts_rest"])
    assert cascade["stale_artifacts"] + rest["items"] == [s.slug for s in slots]

    [rerun] = cascade["reruns"]
    assert rerun["lens"] == "reader-trust" and rerun["slots_count"] == MORE and len(rerun["slots"]) == VIEW_PAGE
    rest = _follow(author_api, rerun["slots_rest"])
    assert rerun["slots"] + [n["slot"] for n in rest["items"]] == [s.slug for s in slots]
    assert LensRerun.objects.get(book=book).artifacts == [s.slug for s in slots], "the re-run itself holds them all"
    assert decision_log_verify(book).ok, "the capped row verifies by the unchanged recipe"

    # Still true after the fact: the re-run rewrote its slots, the route lists what the cascade staled.
    BlackboardArtifact.objects.filter(book=book).update(status="proposed", stale_reason="")
    again = author_api.get(url(book, "/cascade-stale"), node="premise", limit=MORE).json()
    assert [n["node_id"] for n in again["items"]] == nodes
    assert author_api.get(url(book, "/cascade-stale"), node="premise", lens="another-lens").json()["count"] == 0
    assert author_api.get(url(book, "/cascade-stale"), node="nowhere").status_code == 404


def test_a_small_confirmed_cascade_has_no_links(author_api, sol_api, book):
    from .loop_scenes import ask_gate, decide

    assert TraceNode.objects.filter(book=book, node_id="premise").exists()  # the loop drew its root at start
    TraceNode.objects.create(book=book, node_id="arc", kind="arc", produced_by="reader-trust")
    TraceNode.objects.bulk_create([TraceNode(book=book, node_id=f"x{n}", kind="note") for n in range(6)])
    TraceEdge.objects.create(book=book, from_id="premise", to_id="arc")
    asked = ask_gate(sol_api, book, "G0", trace_seed="premise")
    cascade = decide(author_api, book, asked.json()["approval_id"], "redirect", constraint="another").json()
    cascade = cascade["detail"]["effect"]["cascade"]
    assert cascade["stale"] == ["arc"] and cascade["stale_count"] == 1 and cascade["stale_rest"] is None
    assert cascade["stale_artifacts"] == [] and cascade["stale_artifacts_rest"] is None
    assert cascade["reruns"][0]["slots"] == ["arc"] and cascade["reruns"][0]["slots_rest"] is None


def test_the_loop_page_shows_a_page_of_each_reruns_slots_and_links_the_rest(author_browser, author_api, book):
    slots = [f"slot-{n:03}" for n in range(MORE)]
    LensRerun.objects.create(book=book, lens="reader-trust", artifacts=slots, reason="a big cascade")
    html = author_browser.get(f"/books/{book.pk}/loop/").content.decode()
    assert "slot-049" in html and "slot-050" not in html
    link = html.split('data-testid="rerun-more"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    rest = _follow(author_api, link)
    assert rest["items"] == slots[VIEW_PAGE:]


# --- the codex page ---------------------------------------------------------------------------------


def _pages(browser, url: str, testid: str, pattern: str) -> list[list[str]]:
    """Follow a codex pager's "Next" links from ``url``; the ids ``pattern`` finds on each page, page by page."""
    import re

    pages = []
    while url:
        response = browser.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        pages.append(re.findall(pattern, html))
        pager = html.split(f'data-testid="{testid}"', 1)[1].split("</nav>", 1)[0] if testid in html else ""
        found = re.search(r'<a href="([^"]+)" rel="next"', pager)
        url = found.group(1).replace("&amp;", "&") if found else None
    return pages


def test_the_codex_page_pages_its_story_records_and_findings_with_links_that_need_no_javascript(
    author_browser, author, book
):
    from django.utils import timezone

    from discovery.models import KnowledgeBase

    from .factories import ApprovalFactory, ChapterFactory, KnowledgeClaimFactory

    base = KnowledgeBase.objects.get(scope=KnowledgeBase.Scope.BOOK, owner_id=str(book.pk))
    approval = ApprovalFactory(
        book=book,
        kind="canon-promotion",
        subject_type="claim",
        status="decided",
        verdict="approve",
        rationale="Canon.",
        decided_by=author,
        decided_at=timezone.now(),
    )
    ChapterFactory(book=book, number=MORE)
    # A twist each, with no decisive evidence: every claim is a story record and a fair-play finding.
    claims = [
        KnowledgeClaimFactory(
            base=base,
            subject=f"Subject {n:03}",
            status="approved",
            approval=approval,
            reveal="twist",
            first_shown_chapter=n + 1,
        )
        for n in range(MORE)
    ]
    codex = f"/books/{book.pk}/codex/"
    records = _pages(author_browser, codex, "claims-pager", r'<tr id="claim-([0-9a-f-]+)"')
    assert [len(p) for p in records] == [VIEW_PAGE, EXTRA]
    every = [pk for page in records for pk in page]
    assert every == [str(c.pk) for c in claims], "every story record once, in the codex's order"
    findings = _pages(author_browser, codex, "findings-pager", r'href="#tl-[0-9a-f-]+">Subject (\d{3})')
    assert [len(p) for p in findings] == [VIEW_PAGE, EXTRA]
    assert [int(n) for page in findings for n in page] == list(range(MORE))

    # The second page of one list keeps the other's place, and a "Previous" link leads back.
    second = author_browser.get(codex, {"offset": VIEW_PAGE, "findings_offset": VIEW_PAGE}).content.decode()
    assert f'href="{codex}?findings_offset={VIEW_PAGE}" rel="prev"' in second
    assert f'href="{codex}?offset={VIEW_PAGE}" rel="prev"' in second
    # A page past the end, or a bad offset, shows a page: never an error.
    for offset in ("9999", "-3", "two"):
        assert author_browser.get(codex, {"offset": offset}).status_code == 200


def test_the_codex_page_as_of_a_chapter_pages_with_the_chapter_kept(author_browser, author, book):
    from django.utils import timezone

    from discovery.models import KnowledgeBase

    from .factories import ApprovalFactory, KnowledgeClaimFactory

    base = KnowledgeBase.objects.get(scope=KnowledgeBase.Scope.BOOK, owner_id=str(book.pk))
    approval = ApprovalFactory(
        book=book,
        kind="canon-promotion",
        subject_type="claim",
        status="decided",
        verdict="approve",
        rationale="Canon.",
        decided_by=author,
        decided_at=timezone.now(),
    )
    claims = [
        KnowledgeClaimFactory(base=base, subject=f"Subject {n:03}", status="approved", approval=approval)
        for n in range(MORE)
    ]
    pages = _pages(
        author_browser, f"/books/{book.pk}/codex/?as_of_chapter=2", "claims-pager", r'<tr id="claim-([0-9a-f-]+)"'
    )
    assert [pk for page in pages for pk in page] == [str(c.pk) for c in claims]
    assert len(pages) == 2


def test_a_dossier_names_a_page_of_its_knowledge_bases_and_links_the_rest(author_api, sol_api, author_browser, book):
    from .factories import KnowledgeBaseFactory, KnowledgeLinkFactory

    for n in range(MORE):
        base = KnowledgeBaseFactory(scope="series", name=f"Series base {n:03}")
        KnowledgeLinkFactory(book=book, base=base, relation="series-canon")
    created = author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "sol"})
    assert created.status_code == 201, created.json()
    content = sol_api.get(f"/dossiers/{created.json()['id']}").json()["content"]

    assert len(content["knowledge_bases"]) == VIEW_PAGE
    rest = _follow(sol_api, content["more"]["knowledge_bases"])
    every = [b["id"] for b in content["knowledge_bases"] + rest["items"]]
    whole = sol_api.get(f"/books/{book.pk}/knowledge-bases", limit=MORE + 5).json()
    assert every == [b["id"] for b in whole["items"]] and len(set(every)) == rest["count"] >= MORE

    html = author_browser.get(f"/books/{book.pk}/dossiers/{created.json()['id']}/").content.decode()
    link = html.split('data-testid="dossier-bases-more"')[0].rsplit('href="', 1)[1].split('"')[0]
    assert link == f"/books/{book.pk}/?more=bases&amp;offset={VIEW_PAGE}"
    page = author_browser.get(link.replace("&amp;", "&")).content.decode()
    names = [b["name"] for b in rest["items"]]
    assert all(name in page for name in names) and names


def test_a_codex_subject_cut_by_the_page_boundary_is_named_again_on_the_next_page(author_browser, author, book):
    import re

    from django.utils import timezone

    from discovery.models import KnowledgeBase

    from .factories import ApprovalFactory, KnowledgeClaimFactory

    base = KnowledgeBase.objects.get(scope=KnowledgeBase.Scope.BOOK, owner_id=str(book.pk))
    approval = ApprovalFactory(
        book=book,
        kind="canon-promotion",
        subject_type="claim",
        status="decided",
        verdict="approve",
        rationale="Canon.",
        decided_by=author,
        decided_at=timezone.now(),
    )
    # One subject, its claims by the chapter they become true from (the codex's order within a subject).
    claims = [
        KnowledgeClaimFactory(
            base=base,
            subject="Mara",
            predicate=f"fact {n:03}",
            status="approved",
            approval=approval,
            true_from_chapter=MORE - n,
        )
        for n in range(MORE)
    ]
    pages = _pages(author_browser, f"/books/{book.pk}/codex/", "claims-pager", r'<tr id="claim-([0-9a-f-]+)"')
    assert [pk for page in pages for pk in page] == [str(c.pk) for c in reversed(claims)]
    second = author_browser.get(f"/books/{book.pk}/codex/", {"offset": VIEW_PAGE}).content.decode()
    assert re.findall(r'data-testid="codex-subject">([^<]+)<', second) == ["Mara"]
    assert second.count('data-testid="codex-base"') == 1


# --- a verdict's log entry: contradictions and superseded charter versions (capped when written) -------------


def _canon_that_a_secret_contradicts(author_api, book, count: int) -> None:
    """``count`` canon claims (through the API, so each has its log entry) that reveal the same fact, each first
    shown in its own chapter: a proposal that keeps it secret contradicts every one (a visibility contradiction
    each)."""
    for n in range(count):
        made = author_api.post(
            "/claims",
            {
                "scope": "book",
                "scope_id": str(book.pk),
                "subject": "Ines",
                "predicate": "forged",
                "value": "the letter",
                "provenance": "author-stated",
                "first_shown_chapter": n + 1,
            },
        )
        assert made.status_code == 201, made.content
        promoted = author_api.post(
            f"/claims/{made.json()['id']}/promote", {"book_id": str(book.pk), "rationale": "Canon."}
        )
        assert promoted.status_code == 200, promoted.content


def _secret(sol_api, book) -> tuple[str, str]:
    """A proposed claim that keeps the canon's fact secret, and its pending approval's id."""
    made = sol_api.post(
        "/claims",
        {
            "scope": "book",
            "scope_id": str(book.pk),
            "subject": "Ines",
            "predicate": "forged",
            "value": "the letter",
            "provenance": "agent-proposed",
            "known_by": "nobody",
        },
    )
    assert made.status_code == 201, made.content
    claim_id = made.json()["id"]
    asked = sol_api.post(f"/claims/{claim_id}/request-approval", {"book_id": str(book.pk), "note": ""})
    assert asked.status_code in (200, 201), asked.content
    return claim_id, asked.json()["approval_id"]


def _pairs(items) -> list[tuple]:
    return [(c["kind"], tuple(s["id"] for s in c["sides"])) for c in items]


def test_a_claim_verdict_logs_a_page_of_its_contradictions_and_where_the_rest_is(author_api, sol_api, luna_api, book):
    from approvals.models import DecisionLogEntry

    _canon_that_a_secret_contradicts(author_api, book, MORE)
    claim_id, approval_id = _secret(sol_api, book)
    before = author_api.get(f"/books/{book.pk}/claims/{claim_id}/conflicts", limit=MORE).json()
    assert before["count"] == MORE
    decided = author_api.post(f"/approvals/{approval_id}/verdict", {"verdict": "reject", "rationale": "Shown."})
    assert decided.status_code == 200, decided.content

    detail = DecisionLogEntry.objects.get(approval_id=approval_id).detail
    assert len(detail["contradictions"]) == VIEW_PAGE and detail["contradictions_count"] == MORE
    rest = _follow(author_api, detail["contradictions_rest"])
    assert rest["count"] == MORE
    every = _pairs(detail["contradictions"]) + _pairs(rest["items"])
    assert every == _pairs(before["items"]), "the page and the rest are what the verdict resolved, in order, once each"
    # After the fact: the claim is no longer proposed, so nothing recomputes them; the route still lists them all.
    assert author_api.get(f"/books/{book.pk}/claims/{claim_id}/conflicts").json()["count"] == 0
    whole = author_api.get(f"/approvals/{approval_id}/lists/contradictions", limit=MORE).json()["items"]
    assert _pairs(whole) == every
    assert luna_api.get(f"/approvals/{approval_id}/lists/contradictions").status_code == 200, (
        "book canon: Luna reads it"
    )
    verified = author_api.get(f"/books/{book.pk}/decision-log/verify").json()
    assert verified["ok"] is True, verified


def test_a_claim_verdict_with_few_contradictions_has_no_link(author_api, sol_api, book):
    from approvals.models import DecisionLogEntry

    _canon_that_a_secret_contradicts(author_api, book, 2)
    _, approval_id = _secret(sol_api, book)
    assert (
        author_api.post(f"/approvals/{approval_id}/verdict", {"verdict": "approve", "rationale": "So."}).status_code
        == 200
    )
    detail = DecisionLogEntry.objects.get(approval_id=approval_id).detail
    assert len(detail["contradictions"]) == 2 and detail["contradictions_count"] == 2
    assert detail["contradictions_rest"] is None
    listed = author_api.get(f"/approvals/{approval_id}/lists/contradictions").json()
    assert _pairs(listed["items"]) == _pairs(detail["contradictions"])


def test_a_contradiction_the_verdict_recorded_is_never_rewritten(author_api, sol_api, book):
    from django.db import DatabaseError, transaction

    from approvals.models import DecisionListItem

    _canon_that_a_secret_contradicts(author_api, book, 1)
    _, approval_id = _secret(sol_api, book)
    assert (
        author_api.post(f"/approvals/{approval_id}/verdict", {"verdict": "reject", "rationale": "No."}).status_code
        == 200
    )
    recorded = DecisionListItem.objects.filter(approval_id=approval_id, list="contradictions")
    for change in (lambda: recorded.update(value={}), lambda: recorded.delete()):
        with pytest.raises(DatabaseError), transaction.atomic():
            change()
    assert recorded.count() == 1


def test_a_charter_approval_logs_a_page_of_the_versions_it_superseded_and_where_the_rest_is(author_api, sol_api, book):
    from approvals.models import DecisionLogEntry
    from discovery.models import StoryCharter

    from .discovery_support import charter_body
    from .factories import StoryCharterFactory

    for n in range(MORE):
        StoryCharterFactory(book=book, version=n + 1, status="approved" if n == 0 else "proposed")

    def approve(content: dict) -> tuple[dict, str]:
        made = sol_api.post(f"/books/{book.pk}/charters", content)
        assert made.status_code == 201, made.content
        resolved = author_api.post(f"/charters/{made.json()['id']}/resolve", {"approved": True, "rationale": "Yes."})
        assert resolved.status_code == 200, resolved.content
        entry = DecisionLogEntry.objects.filter(book=book, subject_id=made.json()["id"]).get()
        return entry.detail, str(entry.approval_id)

    detail, approval_id = approve(charter_body())
    assert detail["superseded_versions"] == list(range(1, VIEW_PAGE + 1))
    assert detail["superseded_versions_count"] == MORE
    rest = _follow(author_api, detail["superseded_versions_rest"])
    assert detail["superseded_versions"] + rest["items"] == list(range(1, MORE + 1))
    # A later approval supersedes only the version this one approved; the first one's list stays what it was.
    later, later_id = approve(charter_body(main_thrust="Later."))
    assert later["superseded_versions"] == [MORE + 1] and later["superseded_versions_rest"] is None
    assert author_api.get(f"/approvals/{later_id}/superseded-versions").json()["items"] == [MORE + 1]
    whole = author_api.get(f"/approvals/{approval_id}/superseded-versions", limit=MORE).json()
    assert whole["items"] == list(range(1, MORE + 1))
    assert StoryCharter.objects.filter(book=book, status="superseded").count() == MORE + 1
    verified = author_api.get(f"/books/{book.pk}/decision-log/verify").json()
    assert verified["ok"] is True, verified


def test_the_review_page_pages_its_conflicts_and_contradiction_entries_with_plain_links(
    author_api, sol_api, author_browser, book
):
    import html as html_lib
    import re

    from .factories import ScratchpadEntryFactory

    _canon_that_a_secret_contradicts(author_api, book, MORE)
    claim_id, approval_id = _secret(sol_api, book)
    session = current_session_of(book)
    entries = [
        ScratchpadEntryFactory(
            session=session,
            sequence=1000 + n,
            agent_role="luna",
            kind="contradiction",
            content=f"Contradiction {n:03}",
            source_refs=[{"type": "claim", "id": claim_id}, {"type": "turn", "id": f"t{n}"}],
        )
        for n in range(MORE)
    ]
    conflicts = author_api.get(f"/books/{book.pk}/claims/{claim_id}/conflicts", limit=MORE).json()["items"]

    def walk(testid: str, pattern: str) -> list[str]:
        """Every item a paged list shows, following its Next links from the first page."""
        seen, link = [], f"/review/{approval_id}/"
        while link:
            page = author_browser.get(link)
            assert page.status_code == 200
            text = page.content.decode()
            assert "<script" not in text.split('data-testid="conflicts"')[1].split('aria-labelledby="refs-heading"')[0]
            found = re.findall(pattern, text)
            assert len(found) <= VIEW_PAGE * (2 if testid == "conflicts-pager" else 1)
            seen += found
            pager = re.search(rf'data-testid="{testid}">(.*?)</nav>', text, re.S)
            nxt = re.search(r'<a href="([^"]+)" rel="next"', pager.group(1)) if pager else None
            link = html_lib.unescape(nxt.group(1)) if nxt else None
        return seen

    sides = walk("conflicts-pager", r'data-testid="conflict-side">.*?<code>([^<]+)</code>')
    assert sides == [s["id"] for c in conflicts for s in c["sides"]], "every conflict once, in order, both sides"
    shown = walk("contradiction-entries-pager", r"#entry-([0-9a-f-]{36})")
    assert shown == [str(e.pk) for e in entries]
    # An offset past the end shows the last page; a bad one the first.
    last = author_browser.get(f"/review/{approval_id}/", {"conflicts_offset": 10**6}).content.decode()
    assert f"{VIEW_PAGE + 1}–{MORE} of {MORE}" in last
    bad = author_browser.get(f"/review/{approval_id}/", {"entries_offset": "many"})
    assert bad.status_code == 200 and f"1–{VIEW_PAGE} of {MORE}" in bad.content.decode()


@pytest.mark.django_db(transaction=True)
def test_two_sessions_of_a_book_proposing_at_once_queue_on_the_books_lock(book):
    """The open-thrust bound is the book's: a proposal holds the book's row lock while it counts and writes, so a
    proposal from another session of the book waits for it and then counts its thrust. (Each session's own lock
    would let the second count 49 beside the first's uncommitted 50th, and write a 51st.)"""
    import threading

    from django.db import connection, transaction

    from discovery.access import book_access
    from discovery.models import DiscoverySession, ThrustCandidate
    from discovery.schemas import ThrustIn
    from discovery.services.sessions import MAX_OPEN_THRUSTS, thrust_propose
    from novelgraph.core.auth import principal_for_user
    from novelgraph.core.errors import Conflict

    from .discovery_support import thrust_body
    from .factories import DiscoverySessionFactory, ThrustCandidateFactory

    if connection.vendor != "postgresql":
        pytest.skip("SQLite runs one writer at a time (every transaction begins IMMEDIATE); the race needs PostgreSQL")
    first = current_session_of(book)
    second = DiscoverySessionFactory(book=book, status=DiscoverySession.Status.ACTIVE)
    ThrustCandidateFactory.create_batch(MAX_OPEN_THRUSTS - 1, session=first)
    proposed, waiting = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def propose(session, name: str) -> None:
        try:
            access = book_access(principal_for_user(book.owner), book)
            with transaction.atomic():
                if name == "second":
                    proposed.wait(10)
                    waiting.set()
                try:
                    outcome[name] = thrust_propose(access=access, session=session, payload=ThrustIn(**thrust_body()))
                except Conflict as exc:
                    outcome[name] = exc.code
                if name == "first":
                    proposed.set()  # the 50th is written, not yet committed: the second proposal starts now
                    waiting.wait(10)
                    threading.Event().wait(0.5)  # and would write the 51st here if the lock were the session's
        finally:
            connection.close()

    threads = [threading.Thread(target=propose, args=args) for args in ((first, "first"), (second, "second"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert isinstance(outcome["first"], ThrustCandidate)
    assert outcome["second"] == "too_many_open_thrusts"
    assert ThrustCandidate.objects.filter(session__book=book, status="proposed").count() == MAX_OPEN_THRUSTS


def test_a_series_claims_recorded_contradictions_are_withheld_from_luna(author_api, luna_api, book):
    made = author_api.post(
        "/claims",
        {
            "scope": "series",
            "scope_id": str(book.series_id),
            "subject": "the coast",
            "predicate": "drowns",
            "value": "a street a year",
            "provenance": "author-stated",
        },
    )
    assert made.status_code == 201, made.content
    approved = author_api.post(f"/claims/{made.json()['id']}/promote", {"book_id": str(book.pk), "rationale": "So."})
    assert approved.status_code == 200, approved.content
    approval_id = approved.json()["approval_id"]
    assert author_api.get(f"/approvals/{approval_id}/lists/contradictions").status_code == 200
    refused = luna_api.get(f"/approvals/{approval_id}/lists/contradictions")
    assert refused.status_code == 403 and refused.json()["code"] == "withheld", refused.json()
    assert "a street a year" not in refused.content.decode()


def _loop_card_on_a_node(sol_api, book):
    """A plan node under the root and a G0 card on it (its pending approval's id)."""
    from discovery.loop.models import PlanNode

    from .loop_scenes import ask_gate

    root = PlanNode.objects.get(book=book, is_root=True)
    made = sol_api.post(url(book, "/nodes"), {"parent_id": str(root.pk), "intent": "The lock-keeper's arc"})
    assert made.status_code == 201, made.content
    node = PlanNode.objects.get(pk=made.json()["id"])
    card = ask_gate(sol_api, book, "G0", node_id=str(node.pk))
    assert card.status_code == 201, card.content
    return node, card.json()["approval_id"]


def test_an_abandon_logs_a_page_of_the_subtree_it_staled_and_where_the_rest_is(author_api, sol_api, book):
    from approvals.models import DecisionLogEntry
    from discovery.loop.models import PlanNode

    from .loop_scenes import decide

    node, approval_id = _loop_card_on_a_node(sol_api, book)
    # A subtree wider than a page (the breadth bound is the author's to extend): 50 children, 3 grandchildren.
    children = [PlanNode.objects.create(book=book, parent=node, depth=2, intent=f"c{n}") for n in range(VIEW_PAGE)]
    for n in range(EXTRA):
        PlanNode.objects.create(book=book, parent=children[n], depth=3, intent=f"g{n}")
    PlanNode.objects.filter(pk=children[-1].pk).update(lifecycle="parked")  # parked: the abandon leaves it parked
    below = {str(pk) for pk in PlanNode.objects.filter(book=book, depth__gt=1).values_list("pk", flat=True)}
    decided = decide(author_api, book, approval_id, "abandon", rationale="Not this book.")
    assert decided.status_code == 200, decided.content

    effect = DecisionLogEntry.objects.get(approval_id=approval_id).detail["effect"]
    assert len(effect["subtree_stale"]) == VIEW_PAGE and effect["subtree_stale_count"] == MORE
    rest = _follow(author_api, effect["subtree_stale_rest"])
    every = effect["subtree_stale"] + rest["items"]
    assert len(every) == MORE and set(every) == below, "every node below it, once each"
    # After the fact: a node added later under the parked one (it takes children) is not in the list.
    added = sol_api.post(url(book, "/nodes"), {"parent_id": str(children[-1].pk), "intent": "later"})
    assert added.status_code == 201, added.content
    later = author_api.get(f"/approvals/{approval_id}/lists/subtree_stale", limit=MORE).json()["items"]
    assert later == every
    assert author_api.get(f"/books/{book.pk}/decision-log/verify").json()["ok"] is True


def test_an_explore_logs_a_page_of_the_candidates_it_set_aside_and_where_the_rest_is(author_api, sol_api, book):
    from approvals.models import DecisionLogEntry
    from discovery.loop.models import Candidate

    from .loop_scenes import decide

    node, approval_id = _loop_card_on_a_node(sol_api, book)
    selected = [
        Candidate.objects.create(
            node=node, altitude="plotline", mechanic=f"m{n:03}", shape="s", riskiest_assumption="r",
            status="selected", proposed_by="terra",
        )
        for n in range(MORE)
    ]  # fmt: skip
    decided = decide(author_api, book, approval_id, "explore-alternatives", rationale="Look wider.")
    assert decided.status_code == 200, decided.content
    effect = DecisionLogEntry.objects.get(approval_id=approval_id).detail["effect"]
    assert len(effect["set_aside"]) == VIEW_PAGE and effect["set_aside_count"] == MORE
    every = effect["set_aside"] + _follow(author_api, effect["set_aside_rest"])["items"]
    assert sorted(every) == sorted(str(c.pk) for c in selected) and len(set(every)) == MORE
    assert Candidate.objects.filter(node=node, status="parked").count() == MORE


def test_a_list_name_the_log_does_not_keep_is_a_422(author_api, sol_api, book):
    _, approval_id = _loop_card_on_a_node(sol_api, book)
    refused = author_api.get(f"/approvals/{approval_id}/lists/everything")
    assert refused.status_code == 422 and refused.json()["field"] == "name", refused.json()
    assert author_api.get(f"/approvals/{approval_id}/lists/set_aside").json()["count"] == 0, "not decided yet"


def test_the_inbox_pages_its_books_and_its_superseded_approvals_with_plain_links(author, author_browser, book):
    import html as html_lib
    import re

    from .factories import ApprovalFactory

    for n in range(MORE):
        ApprovalFactory(book=BookFactory(owner=author, title=f"Book {n:03}"), summary=f"Waiting {n:03}")
        ApprovalFactory(book=book, summary=f"Lapsed {n:03}", status="superseded")

    def walk(testid: str, pattern: str) -> list[str]:
        seen, link = [], "/review/"
        while link:
            page = author_browser.get(link)
            assert page.status_code == 200, link
            text = page.content.decode()
            found = re.findall(pattern, text)
            assert len(found) <= VIEW_PAGE
            seen += found
            pager = re.search(rf'data-testid="{testid}">(.*?)</nav>', text, re.S)
            nxt = re.search(r'<a href="([^"]+)" rel="next"', pager.group(1)) if pager else None
            link = html_lib.unescape(nxt.group(1)) if nxt else None
        return seen

    books = walk("books-pager", r'\?book=[0-9a-f-]{36}">(Book \d{3})</a>')
    assert sorted(books) == [f"Book {n:03}" for n in range(MORE)] and len(set(books)) == MORE
    lapsed = walk("superseded-pager", r'>(Lapsed \d{3})</a> <span class="badge warn">superseded')
    assert len(lapsed) == MORE and len(set(lapsed)) == MORE, "every lapsed approval once, newest first"
    past = (
        author_browser.get("/review/", {"superseded_offset": 10**6})
        .content.decode()
        .split('id="superseded-heading"')[1]
        .split("</section>")[0]
    )
    assert "Lapsed" not in past, "past the end: none listed"
    back = re.search(r'data-testid="superseded-past-end">[^<]*<a href="([^"]+)"', past)
    assert back, "past the end, the page says so and links back to the first page"
    first = author_browser.get(html_lib.unescape(back.group(1))).content.decode()
    assert re.findall(r'>(Lapsed \d{3})</a> <span class="badge warn">superseded', first) == lapsed[:VIEW_PAGE]
