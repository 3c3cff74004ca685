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
    TraceNode.objects.create(book=book, node_id="premise", kind="premise")
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
    TraceNode.objects.create(book=book, node_id="premise", kind="premise")
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

    TraceNode.objects.create(book=book, node_id="premise", kind="premise")
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
    from novelgraph.services import api_key_create

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
