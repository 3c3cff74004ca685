"""Issue 13: one discovery per book. The conversation stays open until hand-off, its history is one
record, and charter versions are ordered. Through the real routes (API and pages)."""

from __future__ import annotations

import io
import uuid
import zipfile

import pytest

from approvals.models import DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.loop.models import LoopMeta
from discovery.models import (
    Book,
    Chapter,
    DiscoverySession,
    Handoff,
    Observation,
    ObservationRevision,
    ScratchpadEntry,
    StoryCharter,
    Turn,
)

from .discovery_support import charter_body, start, thrust_body
from .loop_scenes import ask_gate, clean_chain, decide, pass_gate, review, saturate, trace

pytestmark = pytest.mark.django_db


def propose(api, book, **overrides) -> dict:
    response = api.post(f"/books/{book.pk}/charters", charter_body(**overrides))
    assert response.status_code == 201, response.content
    return response.json()


def resolve(api, charter: dict, approved: bool = True, rationale: str = "It keeps the promise."):
    return api.post(f"/charters/{charter['id']}/resolve", {"approved": approved, "rationale": rationale})


def turn(api, session, role: str, content: str, **extra):
    return api.post(f"/sessions/{session.pk}/turns", {"role": role, "content": content, **extra})


# --- 2. The conversation stays open until hand-off ------------------------------


def test_approving_a_charter_leaves_the_conversation_open_for_author_editor_and_sol(
    author_api, editor_api, sol_api, book
):
    session = start(author_api, book)
    assert turn(author_api, session, "author", "A keeper, a drowning.").status_code == 201
    assert resolve(author_api, propose(sol_api, book)).status_code == 200
    session.refresh_from_db()
    assert session.status == "active"
    assert turn(author_api, session, "author", "Now the harbour master lies.").status_code == 201
    assert turn(editor_api, session, "editor", "Is the lie fair play?").status_code == 201
    assert turn(sol_api, session, "sol", "Which lie matters most?").status_code == 201
    assert list(Turn.objects.filter(session=session).values_list("ordinal", "role")) == [
        (1, "author"),
        (2, "author"),
        (3, "editor"),
        (4, "sol"),
    ]
    # Starting again resumes the same discovery: no second session.
    assert start(author_api, book) == session
    assert DiscoverySession.objects.filter(book=book).count() == 1


def test_the_book_page_composer_still_works_after_the_charter_is_approved(
    author_api, sol_api, author_browser, editor_browser, book
):
    start(author_api, book)
    resolve(author_api, propose(sol_api, book))
    for client, text in ((author_browser, "Author after approval."), (editor_browser, "Editor after approval.")):
        response = client.post(f"/books/{book.pk}/turns/", {"content": text})
        assert response.status_code == 302, response.content
    page = author_browser.get(f"/books/{book.pk}/").content.decode()
    assert "Author after approval." in page and "Editor after approval." in page


def _second_session(book, author_api, sol_api, luna_api):
    """A book with two sessions (as books made before this change have): the first one approved."""
    first = start(author_api, book)
    t1 = turn(
        author_api,
        first,
        "author",
        "The first round.",
        observations=[{"key": "setting", "value": "a lighthouse", "provenance": "author-stated"}],
    ).json()
    luna_api.post(f"/sessions/{first.pk}/scratchpad", {"kind": "observation", "content": "First-round note."})
    DiscoverySession.objects.filter(pk=first.pk).update(status="approved")
    second = start(author_api, book)
    assert second != first
    turn(author_api, second, "author", "The second round.")
    luna_api.post(f"/sessions/{second.pk}/scratchpad", {"kind": "observation", "content": "Second-round note."})
    return first, second, t1


def test_several_sessions_read_as_one_record_in_the_api_view(author_api, sol_api, luna_api, book):
    first, second, _ = _second_session(book, author_api, sol_api, luna_api)
    view = author_api.get(f"/books/{book.pk}/discovery").json()
    assert [s["id"] for s in view["sessions"]] == [str(first.pk), str(second.pk)]
    assert view["session"]["id"] == str(second.pk)
    assert [(t["content"], t["session_id"]) for t in view["turns"]] == [
        ("The first round.", str(first.pk)),
        ("The second round.", str(second.pk)),
    ]
    assert [e["content"] for e in view["scratchpad"]] == ["First-round note.", "Second-round note."]
    assert [o["value"] for o in view["observations"]] == ["a lighthouse"]


def test_several_sessions_read_as_one_record_on_the_pages_and_in_the_dossier(
    author_api, sol_api, luna_api, author_browser, book
):
    _second_session(book, author_api, sol_api, luna_api)
    page = author_browser.get(f"/books/{book.pk}/").content.decode()
    assert "The first round." in page and "The second round." in page
    pad = author_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()
    assert "First-round note." in pad and "Second-round note." in pad and "The first round." in pad
    dossier = author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": "luna"}).json()["content"]
    assert [e["content"] for e in dossier["scratchpad"]] == ["First-round note.", "Second-round note."]
    assert [o["value"] for o in dossier["observations"]] == ["a lighthouse"]


# --- 3. Charter versions are ordered --------------------------------------------------


def test_approving_a_version_supersedes_every_older_one_pending_or_approved(author_api, sol_api, terra_api, book):
    start(author_api, book)
    v1 = propose(sol_api, book)
    assert resolve(author_api, v1).status_code == 200
    v2 = propose(terra_api, book, main_thrust="v2")
    v3 = propose(sol_api, book, main_thrust="v3")
    assert resolve(author_api, v3).status_code == 200
    assert dict(StoryCharter.objects.filter(book=book).values_list("version", "status")) == {
        1: "superseded",
        2: "superseded",
        3: "approved",
    }
    entry = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").first()
    assert entry.detail["superseded_versions"] == [1, 2]
    # The superseded pending version can no longer be approved.
    response = resolve(author_api, v2)
    assert response.status_code == 409


def test_an_older_version_is_never_approved_after_a_newer_one(author_api, sol_api, book):
    start(author_api, book)
    v1 = propose(sol_api, book)
    v2 = propose(sol_api, book, main_thrust="v2")
    before = DecisionLogEntry.objects.filter(book=book).count()
    response = resolve(author_api, v1)
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "newer_version" and "v2" in body["detail"]
    assert StoryCharter.objects.get(pk=v1["id"]).status == "proposed"
    assert DecisionLogEntry.objects.filter(book=book).count() == before
    # Rejecting the newer one lets the older be approved.
    assert resolve(author_api, v2, approved=False, rationale="No.").status_code == 200
    assert resolve(author_api, v1).status_code == 200
    assert dict(StoryCharter.objects.filter(book=book).values_list("version", "status")) == {
        1: "approved",
        2: "rejected",
    }


def test_the_review_page_shows_what_changed_from_the_previous_version(author_api, sol_api, author_browser, book):
    start(author_api, book)
    propose(sol_api, book)
    v2 = propose(sol_api, book, main_thrust="The keeper lies too.", narrative_form="letters")
    page = author_browser.get(f"/review/{v2['approval_id']}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "What changed from version 1" in html
    assert "The keeper lies too." in html and "A keeper must prove a drowning was murder." in html
    assert "Narrative form" in html and "(added)" in html and "(changed)" in html
    assert "Central conflict <span" not in html  # unchanged fields are not listed as changes


# --- 4. Sol keeps the question moving -----------------------------------------------------


def test_sol_moves_the_question_after_the_charter_and_the_author_answers_it_on_the_book_page(
    author_api, sol_api, author_browser, editor_browser, book
):
    session = start(author_api, book)
    said = turn(author_api, session, "author", "The keeper lies to the coroner.").json()
    resolve(author_api, propose(sol_api, book))  # the question keeps moving after approval
    asked = sol_api.post(
        f"/sessions/{session.pk}/question",
        {"question": "What does she hide from the coroner?", "source_refs": [{"type": "turn", "id": said["id"]}]},
    )
    assert asked.status_code == 201, asked.content
    page = editor_browser.get(f"/books/{book.pk}/").content.decode()
    assert "What does she hide from the coroner?" in page
    assert f"#turn-{said['id']}" in page  # the turn that prompted it, linked
    assert "Answer with a turn" in page
    response = author_browser.post(
        f"/books/{book.pk}/turns/", {"content": "A letter from her brother.", "next": "book"}
    )
    assert response.status_code == 302 and response["Location"].startswith(f"/books/{book.pk}/#turn-")
    answer = Turn.objects.get(session=session, content="A letter from her brother.")
    assert str(answer.answers_id) == asked.json()["id"]
    view = author_api.get(f"/books/{book.pk}/discovery").json()
    assert view["session"]["current_question"] == "What does she hide from the coroner?"
    assert [t["answers_id"] for t in view["turns"]] == [None, asked.json()["id"]]


def test_a_question_must_cite_the_turn_entry_or_observation_that_prompted_it(author_api, sol_api, book):
    session = start(author_api, book)
    charter = propose(sol_api, book)
    only_charter = sol_api.post(
        f"/sessions/{session.pk}/question",
        {"question": "Why?", "source_refs": [{"type": "charter", "id": charter["id"]}]},
    )
    assert only_charter.status_code == 422 and only_charter.json()["field"] == "source_refs"
    said = turn(author_api, session, "author", "A turn.").json()
    ok = sol_api.post(
        f"/sessions/{session.pk}/question",
        {
            "question": "Why?",
            "source_refs": [{"type": "charter", "id": charter["id"]}, {"type": "turn", "id": said["id"]}],
        },
    )
    assert ok.status_code == 201


# --- 5. Observations have a life ------------------------------------------------------------


def _observed(author_api, session, *values):
    said = turn(
        author_api,
        session,
        "author",
        "Some things.",
        observations=[{"key": f"k{i}", "value": v, "provenance": "author-stated"} for i, v in enumerate(values)],
    )
    assert said.status_code == 201, said.content
    return [o["id"] for o in said.json()["observations"]]


def test_the_author_confirms_corrects_and_retires_observations_and_history_is_kept(author_api, sol_api, book):
    session = start(author_api, book)
    confirm_id, correct_id, retire_id = _observed(author_api, session, "a lighthouse", "1920", "a twin")
    confirmed = author_api.post(f"/observations/{confirm_id}/resolve", {"action": "confirm"})
    assert confirmed.status_code == 200 and confirmed.json()["status"] == "confirmed"
    corrected = author_api.post(
        f"/observations/{correct_id}/resolve", {"action": "correct", "value": "1923", "rationale": "Later storm."}
    )
    assert corrected.status_code == 200, corrected.content
    body = corrected.json()
    assert (body["value"], body["stated_value"], body["status"]) == ("1923", "1920", "confirmed")
    again = author_api.post(f"/observations/{correct_id}/resolve", {"action": "correct", "value": "1924"}).json()
    assert [(r["previous_value"], r["value"]) for r in again["revisions"]] == [("1920", "1923"), ("1923", "1924")]
    retired = author_api.post(f"/observations/{retire_id}/resolve", {"action": "retire", "rationale": "Dropped."})
    assert retired.status_code == 200 and retired.json()["status"] == "retired"
    # A retired observation is final; the value as first stated is never overwritten.
    assert author_api.post(f"/observations/{retire_id}/resolve", {"action": "confirm"}).status_code == 409
    assert Observation.objects.get(pk=correct_id).value == "1920"
    view = author_api.get(f"/books/{book.pk}/discovery").json()
    assert {o["id"]: (o["value"], o["status"]) for o in view["observations"]} == {
        confirm_id: ("a lighthouse", "confirmed"),
        correct_id: ("1924", "confirmed"),
        retire_id: ("a twin", "retired"),
    }


def test_resolved_and_retired_observations_leave_the_unresolved_set_of_dossiers(author_api, book):
    session = start(author_api, book)
    keep_id, retire_id = _observed(author_api, session, "open question", "stale idea")
    author_api.post(f"/observations/{retire_id}/resolve", {"action": "retire", "rationale": "Stale."})
    for role in ("sol", "terra", "luna"):
        content = author_api.post(f"/books/{book.pk}/dossiers", {"agent_role": role}).json()["content"]
        assert [o["id"] for o in content["observations"]] == [keep_id], role


def test_only_the_author_resolves_observations_and_bad_input_is_a_422(author_api, sol_api, editor_api, book):
    session = start(author_api, book)
    (obs_id,) = _observed(author_api, session, "a lighthouse")
    for api in (sol_api, editor_api):
        response = api.post(f"/observations/{obs_id}/resolve", {"action": "retire"})
        assert response.status_code == 403 and "decide" in response.json()["detail"]
    assert author_api.post(f"/observations/{obs_id}/resolve", {"action": "correct"}).json()["field"] == "value"
    assert author_api.post(f"/observations/{obs_id}/resolve", {"action": "erase"}).status_code == 422
    assert not ObservationRevision.objects.exists()
    assert Observation.objects.get(pk=obs_id).status == "working"


def test_the_book_page_buttons_confirm_correct_and_retire(author_api, author_browser, editor_browser, book):
    session = start(author_api, book)
    first, second = _observed(author_api, session, "a lighthouse", "1920")
    page = author_browser.get(f"/books/{book.pk}/").content.decode()
    assert f"/books/{book.pk}/observations/{first}/" in page and ">Retire<" in page
    assert f"/observations/{first}/" not in editor_browser.get(f"/books/{book.pk}/").content.decode()
    url = f"/books/{book.pk}/observations/{second}/"
    response = author_browser.post(url, {"action": "correct", "value": "1923"})
    assert response.status_code == 302 and response["Location"].endswith(f"#observation-{second}")
    page = author_browser.get(f"/books/{book.pk}/").content.decode()
    assert "1923" in page and "<s>1920</s>" in page
    blank = author_browser.post(url, {"action": "correct", "value": ""})
    assert blank.status_code == 422 and "a correction states the new value" in blank.content.decode()
    reasonless = author_browser.post(f"/books/{book.pk}/observations/{first}/", {"action": "retire"})
    assert reasonless.status_code == 422 and "say why you retire it" in reasonless.content.decode()
    assert Observation.objects.get(pk=first).status == "working"
    retired = author_browser.post(f"/books/{book.pk}/observations/{first}/", {"action": "retire", "rationale": "No."})
    assert retired.status_code == 302
    assert Observation.objects.get(pk=first).status == "retired"
    assert editor_browser.post(url, {"action": "retire"}).status_code == 403


# --- 6. The author's constraints reach the agents ---------------------------------------------


def test_every_constraint_the_author_recorded_is_in_every_roles_dossier_with_its_decision(
    author_api, sol_api, luna_api, author_browser, book
):
    start(author_api, book)
    charter = propose(sol_api, book, constraints=["No supernatural explanation"])
    assert resolve(author_api, charter, rationale="Fair play.").status_code == 200
    card = ask_gate(sol_api, book, "G0")
    assert card.status_code == 201, card.content
    verdict = decide(
        author_api, book, card.json()["approval_id"], "approve-with-constraint", constraint="No second murder early"
    )
    assert verdict.status_code == 200, verdict.content
    card = ask_gate(sol_api, book, "G0")
    assert card.status_code == 201, card.content
    steer = decide(author_api, book, card.json()["approval_id"], "redirect", constraint="Make it the sister's arc")
    assert steer.status_code == 200, steer.content
    log = {e.approval_id: e.sequence for e in DecisionLogEntry.objects.filter(book=book)}
    for role, api in (("sol", sol_api), ("terra", author_api), ("luna", luna_api)):
        content = api.post(f"/books/{book.pk}/dossiers", {"agent_role": role}).json()["content"]
        rows = [(c["kind"], c["text"], c["decision"]["sequence"]) for c in content["author_constraints"]]
        assert rows == [
            ("charter-constraint", "No supernatural explanation", log[uuid.UUID(charter["approval_id"])]),
            ("constraint", "No second murder early", rows[1][2]),
            ("steer", "Make it the sister's arc", rows[2][2]),
        ], role
        assert rows[1][2] < rows[2][2] and rows[1][2] in log.values()
        assert content["author_constraints"][0]["decision"]["rationale"] == "Fair play."
        assert content["author_constraints"][1]["decision"]["gate"] == "G0"
    dossier_id = luna_api.get(f"/books/{book.pk}/dossiers").json()["items"][0]["id"]
    page = author_browser.get(f"/books/{book.pk}/dossiers/{dossier_id}/").content.decode()
    assert "The author's constraints" in page and "No second murder early" in page
    assert "Make it the sister&#x27;s arc" in page and "No supernatural explanation" in page


# --- 7. Handoff discipline ------------------------------------------------------------------------


def _handoff(api, book, to_role="luna", allowed=()):
    response = api.post(
        f"/books/{book.pk}/handoffs",
        {
            "to_role": to_role,
            "decision": "Which structure carries the reveal?",
            "allowed_sources": list(allowed),
            "statements": [{"text": "The keeper lies.", "status": "fact"}],
        },
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_a_handoff_result_cites_only_the_sources_the_handoff_allowed(author_api, sol_api, luna_api, book):
    session = start(author_api, book)
    allowed = turn(author_api, session, "author", "Allowed turn.").json()
    other = turn(author_api, session, "author", "Not allowed.").json()
    handoff = _handoff(sol_api, book, allowed=[{"type": "turn", "id": allowed["id"]}])
    bad = luna_api.post(
        f"/handoffs/{handoff['id']}/result",
        {
            "facts": [
                {"text": "ok", "source_refs": [{"type": "turn", "id": allowed["id"]}]},
                {
                    "text": "not ok",
                    "source_refs": [{"type": "turn", "id": allowed["id"]}, {"type": "turn", "id": other["id"]}],
                },
            ]
        },
    )
    assert bad.status_code == 422, bad.content
    assert bad.json()["field"] == "facts[1].source_refs[1]" and other["id"] in bad.json()["detail"]
    assert not ScratchpadEntry.objects.filter(handoff_id=handoff["id"]).exists()
    good = luna_api.post(
        f"/handoffs/{handoff['id']}/result",
        {"facts": [{"text": "ok", "source_refs": [{"type": "turn", "id": allowed["id"]}]}]},
    )
    assert good.status_code == 200 and good.json()["status"] == "returned"


def test_a_handoff_may_allow_a_whole_type_such_as_the_library(author_api, sol_api, luna_api, book):
    from .factories import KnowledgeChunkFactory

    session = start(author_api, book)
    said = turn(author_api, session, "author", "A turn.").json()
    chunk = KnowledgeChunkFactory()
    handoff = _handoff(sol_api, book, allowed=[{"type": "other", "id": "any:chunk"}])
    cited_chunk = {"facts": [{"text": "guidance", "source_refs": [{"type": "chunk", "id": str(chunk.pk)}]}]}
    assert luna_api.post(f"/handoffs/{handoff['id']}/result", cited_chunk).status_code == 200
    handoff = _handoff(sol_api, book, allowed=[{"type": "other", "id": "any:chunk"}])
    cited_turn = {"facts": [{"text": "x", "source_refs": [{"type": "turn", "id": said["id"]}]}]}
    assert luna_api.post(f"/handoffs/{handoff['id']}/result", cited_turn).status_code == 422


TERRA_RESULT = {
    "options": [{"text": "Two timelines."}],
    "analysis": "The engine holds; the reveal needs an early plant.",
    "risks": ["The reader may guess the forger."],
    "charter_language": "Main thrust: a keeper proves a drowning was murder.",
}


@pytest.mark.parametrize("missing", ["analysis", "options", "risks", "charter_language"])
def test_a_terra_result_to_sol_carries_analysis_alternatives_risks_and_charter_language(
    author_api, sol_api, terra_api, book, missing
):
    start(author_api, book)
    handoff = _handoff(sol_api, book, to_role="terra")
    partial = {k: v for k, v in TERRA_RESULT.items() if k != missing}
    if missing == "options":
        partial["facts"] = [{"text": "A fact."}]
    response = terra_api.post(f"/handoffs/{handoff['id']}/result", partial)
    assert response.status_code == 422 and response.json()["field"] == missing, response.content
    assert Handoff.objects.get(pk=handoff["id"]).status == "open"
    done = terra_api.post(f"/handoffs/{handoff['id']}/result", TERRA_RESULT)
    assert done.status_code == 200, done.content
    assert done.json()["result"] == {k: v for k, v in TERRA_RESULT.items() if k != "options"}
    assert [e["kind"] for e in done.json()["result_entries"]] == ["alternative"]


def test_a_digest_lists_the_alternatives_of_what_it_summarises(author_api, sol_api, terra_api, book):
    session = start(author_api, book)

    def entry(kind, content, refs=()):
        response = terra_api.post(
            f"/sessions/{session.pk}/scratchpad", {"kind": kind, "content": content, "source_refs": list(refs)}
        )
        assert response.status_code == 201, response.content
        return response.json()["id"]

    hyp = entry("hypothesis", "The keeper forged it.")
    alt = entry("alternative", "Her sister forged it.", [{"type": "entry", "id": hyp}])
    # A handoff result: its option is an alternative of the facts it came with.
    handoff = _handoff(sol_api, book, to_role="terra")
    terra_api.post(f"/handoffs/{handoff['id']}/result", {**TERRA_RESULT, "facts": [{"text": "The lamp log."}]})
    by_handoff = {e.kind: str(e.pk) for e in ScratchpadEntry.objects.filter(handoff_id=handoff["id"])}

    refused = terra_api.post(
        f"/sessions/{session.pk}/scratchpad",
        {"kind": "digest", "content": "So far.", "source_refs": [{"type": "entry", "id": hyp}]},
    )
    assert refused.status_code == 422 and refused.json()["field"] == "source_refs"
    assert "Her sister forged it." in refused.json()["detail"]
    refused = terra_api.post(
        f"/sessions/{session.pk}/scratchpad",
        {"kind": "digest", "content": "So far.", "source_refs": [{"type": "entry", "id": by_handoff["observation"]}]},
    )
    assert refused.status_code == 422 and "Two timelines." in refused.json()["detail"]
    entry(
        "digest",
        "So far, with the road not taken.",
        [{"type": "entry", "id": hyp}, {"type": "entry", "id": alt}],
    )


# --- 8. Gates carry seed 000's objects --------------------------------------------------------------


def _thrusts(api, session, *titles):
    ids = []
    for title in titles:
        response = api.post(f"/sessions/{session.pk}/thrusts", thrust_body(title=title))
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    return ids


def test_g15_ratifies_exactly_one_thrust_and_keeps_the_others_with_the_reason(
    author_api, sol_api, terra_api, author_browser, book
):
    session = start(author_api, book)
    chosen, other, third = _thrusts(terra_api, session, "The keeper's doubt", "Two timelines", "The sister")
    for gate in ("G0", "G1"):
        pass_gate(sol_api, author_api, book, gate)
    missing = sol_api.post(
        f"/books/{book.pk}/loop/gates/G1.5/request",
        {"summary": "thrust", "decisions_requested": ["which thrust"], "reversibility_class": "reversible"},
    )
    assert missing.status_code == 422 and missing.json()["field"] == "thrust_id"
    card = ask_gate(sol_api, book, "G1.5", thrust_id=chosen)
    assert card.status_code == 201, card.content
    verdict = decide(author_api, book, card.json()["approval_id"], "approve", rationale="The doubt drives it.")
    assert verdict.status_code == 200, verdict.content
    view = author_api.get(f"/books/{book.pk}/discovery").json()
    status = {t["id"]: (t["status"], t["not_chosen_reason"]) for t in view["thrusts"]}
    assert status[chosen] == ("selected", "")
    for not_chosen in (other, third):
        assert status[not_chosen][0] == "rejected"
        assert "The keeper's doubt" in status[not_chosen][1] and "The doubt drives it." in status[not_chosen][1]
    entry = DecisionLogEntry.objects.filter(book=book, gate="G1.5").get()
    assert entry.detail["effect"]["thrust"]["selected"] == chosen
    page = author_browser.get(f"/books/{book.pk}/").content.decode()
    assert "Two timelines" in page and "Not chosen:" in page


def test_g2_needs_an_approved_charter_and_its_log_names_the_version_and_digest(
    author_api, sol_api, terra_api, luna_api, book
):
    from discovery.services.charters import charter_content_digest

    session = start(author_api, book)
    _thrusts(terra_api, session, "The keeper's doubt")
    for gate in ("G0", "G1"):
        pass_gate(sol_api, author_api, book, gate)
    pass_gate(sol_api, author_api, book, "G1.5")
    clean_chain(sol_api, book)
    review(terra_api, book, "canon-integrity")  # the roster names Terra
    review(luna_api, book, "reader-trust")  # and Luna
    assert sol_api.post(f"/books/{book.pk}/loop/rounds", {}).status_code == 200
    refused = ask_gate(sol_api, book, "G2")
    assert refused.status_code == 409 and "no approved Story Charter" in refused.json()["detail"]
    # A charter approved before G2 is accepted and its log row records where the loop stood.
    v1 = propose(sol_api, book)
    assert resolve(author_api, v1).status_code == 200
    charter_row = DecisionLogEntry.objects.get(book=book, subject_type="charter")
    assert charter_row.detail["loop_gate"] == "G2" and charter_row.detail["content_digest"]
    card = ask_gate(sol_api, book, "G2")
    assert card.status_code == 201, card.content
    assert decide(author_api, book, card.json()["approval_id"], "approve").status_code == 200
    g2 = DecisionLogEntry.objects.get(book=book, gate="G2")
    charter = StoryCharter.objects.get(pk=v1["id"])
    assert g2.detail["effect"]["charter"] == {
        "id": v1["id"],
        "version": 1,
        "content_digest": charter_content_digest(charter.content),
    }


def test_a_newer_charter_approved_while_the_g2_card_waits_makes_the_card_stale(
    author_api, sol_api, terra_api, luna_api, book
):
    start(author_api, book)
    for gate in ("G0", "G1", "G1.5"):
        pass_gate(sol_api, author_api, book, gate)
    resolve(author_api, propose(sol_api, book))
    saturate(sol_api, luna_api, terra_api, book)
    card = ask_gate(sol_api, book, "G2")
    assert card.status_code == 201, card.content
    assert resolve(author_api, propose(sol_api, book, main_thrust="v2")).status_code == 200
    stale = decide(author_api, book, card.json()["approval_id"], "approve")
    assert stale.status_code == 409, stale.content
    assert not DecisionLogEntry.objects.filter(book=book, gate="G2").exists()


def test_charter_approval_creates_no_chapter_and_g3_creates_chapter_1_once_from_the_brief(
    author_api, sol_api, terra_api, luna_api, author_browser, book
):
    start(author_api, book)
    resolve(author_api, propose(sol_api, book))
    assert not Chapter.objects.filter(book=book).exists()
    assert 'data-testid="handoff"' not in author_browser.get(f"/books/{book.pk}/").content.decode()
    for gate in ("G0", "G1", "G1.5"):
        pass_gate(sol_api, author_api, book, gate)
    saturate(sol_api, luna_api, terra_api, book)
    pass_gate(sol_api, author_api, book, "G2")
    brief = {
        "slug": "decision-brief",
        "type": "decision-brief",
        "content": {"success_metrics": ["fair play by chapter 20"], "chapter_1": "The letter in the lamp room."},
    }
    assert sol_api.post(f"/books/{book.pk}/loop/artifacts", brief).status_code == 201
    # The export never presents the proposed brief as committed.
    export = author_api.get(f"/books/{book.pk}/loop/export")
    names = zipfile.ZipFile(io.BytesIO(export.content)).namelist()
    assert not [n for n in names if n.endswith("/decision-brief.json")]
    assert ask_gate(sol_api, book, "G3").status_code == 409
    card = ask_gate(sol_api, book, "G3", artifacts=["decision-brief"])
    assert card.status_code == 201, card.content
    assert decide(author_api, book, card.json()["approval_id"], "approve").status_code == 200
    assert list(Chapter.objects.filter(book=book).values_list("number", "spec")) == [
        (1, "The letter in the lamp room.")
    ]
    names = zipfile.ZipFile(io.BytesIO(author_api.get(f"/books/{book.pk}/loop/export").content)).namelist()
    assert [n for n in names if n.endswith("/decision-brief.json")]
    assert DiscoverySession.objects.get(book=book).status == "closed"
    # The book page says so at the top: handed off, and where drafting starts.
    page = author_browser.get(f"/books/{book.pk}/").content.decode()
    handoff = page.split('data-testid="handoff"')[1].split("</section>")[0]
    assert "Drafting starts at Chapter 1" in handoff and "The letter in the lamp room." in handoff


# --- 9. The plan's edges -------------------------------------------------------------------------------


def test_validation_status_moves_only_forward_through_the_validation_plan_routes(author_api, sol_api, luna_api, book):
    start(author_api, book)
    made = luna_api.post(
        f"/books/{book.pk}/loop/validation",
        {
            "assumption": "readers track two timelines",
            "kill_condition": "beta readers lose the thread",
            "activity": "read chapters 1-3 aloud",
        },
    )
    assert made.status_code == 201, made.content
    item = made.json()["id"]
    status_url = f"/books/{book.pk}/loop/validation/{item}/status"
    skip = luna_api.post(status_url, {"validation_status": "validated"})
    assert skip.status_code == 422 and skip.json()["field"] == "validation_status"
    assert luna_api.post(status_url, {"validation_status": "validating"}).json()["validation_status"] == "validating"
    back = luna_api.post(status_url, {"validation_status": "hypothesis"})
    assert back.status_code == 422 and "only forward" in back.json()["detail"]
    assert luna_api.post(status_url, {"validation_status": "refuted"}).status_code == 200
    assert luna_api.post(status_url, {"validation_status": "validated"}).status_code == 422
    listed = author_api.get(f"/books/{book.pk}/loop/validation").json()["items"]
    assert [(i["id"], i["validation_status"]) for i in listed] == [(item, "refuted")]
    # The plan node's own validation status follows the same rule.
    root = sol_api.get(f"/books/{book.pk}/loop/nodes").json()["items"][0]["id"]
    node = sol_api.patch(f"/books/{book.pk}/loop/nodes/{root}", {"validation_status": "refuted"})
    assert node.status_code == 422 and node.json()["field"] == "validation_status"


def test_a_lens_withdraws_its_own_unratified_trace_node_or_edge(author_api, sol_api, terra_api, luna_api, book):
    start(author_api, book)
    trace(terra_api, book, [("t-a", "premise"), ("t-b", "story-question")], [("t-a", "t-b")], lens="canon-integrity")
    trace(luna_api, book, [("l-a", "chapter")], [], lens="reader-trust")
    base = f"/books/{book.pk}/loop/trace"
    # Another lens's node or edge: 403.
    assert luna_api.post(f"{base}/nodes/t-a/withdraw", {}).status_code == 403
    assert luna_api.post(f"{base}/edges/withdraw", {"from_id": "t-a", "to_id": "t-b"}).status_code == 403
    edge = terra_api.post(f"{base}/edges/withdraw", {"from_id": "t-a", "to_id": "t-b", "reason": "wrong link"})
    assert edge.status_code == 200 and edge.json()["active"] is False
    node = luna_api.post(f"{base}/nodes/l-a/withdraw", {"reason": "duplicate"})
    assert node.status_code == 200, node.content
    assert (node.json()["status"], node.json()["status_reason"]) == ("abandoned", "withdrawn by luna: duplicate")
    # A node backed by a ratified slot goes through the cascade and the author: 409.
    assert (
        terra_api.post(
            f"/books/{book.pk}/loop/artifacts", {"slug": "arc", "type": "arc", "lens": "canon-integrity", "content": {}}
        ).status_code
        == 201
    )
    assert (
        terra_api.post(
            f"{base}/nodes", {"node_id": "t-c", "kind": "arc", "artifact": "arc", "produced_by": "canon-integrity"}
        ).status_code
        == 201
    )
    card = ask_gate(sol_api, book, "G0", artifacts=["arc"])
    assert decide(author_api, book, card.json()["approval_id"], "approve").status_code == 200
    ratified = terra_api.post(f"{base}/nodes/t-c/withdraw", {})
    assert ratified.status_code == 409 and "cascade" in ratified.json()["detail"]


# --- The whole flow: a book made from scratch through the API, from G0 to hand-off -------------------


def test_a_book_made_from_scratch_goes_from_g0_to_hand_off_through_one_flow(
    author, author_api, sol_api, terra_api, luna_api
):
    made = author_api.post("/books", {"title": "The Salt Ledger", "premise": "A clerk finds a forged tide table."})
    assert made.status_code == 201, made.content
    book_id = made.json()["id"]
    book = Book.objects.get(pk=book_id)
    started = author_api.post(f"/books/{book_id}/discovery")
    assert started.status_code == 201
    session = DiscoverySession.objects.get(pk=started.json()["session_id"])
    said = turn(
        author_api,
        session,
        "author",
        "The clerk is the only one who reads tide tables.",
        observations=[
            {"key": "protagonist", "value": "a harbour clerk", "provenance": "author-stated"},
            {"key": "setting", "value": "a salt port", "provenance": "author-stated"},
        ],
    ).json()
    protagonist, setting = (o["id"] for o in said["observations"])
    asked = sol_api.post(
        f"/sessions/{session.pk}/question",
        {"question": "Who gains from a forged tide?", "source_refs": [{"type": "turn", "id": said["id"]}]},
    )
    assert asked.status_code == 201
    assert turn(author_api, session, "author", "The salt merchant.").json()["answers_id"] == asked.json()["id"]
    author_api.post(f"/observations/{protagonist}/resolve", {"action": "confirm"})
    author_api.post(f"/observations/{setting}/resolve", {"action": "correct", "value": "a salt port in 1820"})

    # G0, G1, then Terra's thrusts through a Sol -> Terra handoff, and G1.5 ratifies one of them.
    for gate in ("G0", "G1"):
        pass_gate(sol_api, author_api, book, gate)
    handoff = _handoff(sol_api, book, to_role="terra", allowed=[{"type": "turn", "id": said["id"]}])
    chosen, other = _thrusts(terra_api, session, "The merchant's tide", "The clerk's lie")
    returned = terra_api.post(
        f"/handoffs/{handoff['id']}/result",
        {
            **TERRA_RESULT,
            "facts": [{"text": "The clerk reads tides.", "source_refs": [{"type": "turn", "id": said["id"]}]}],
        },
    )
    assert returned.status_code == 200, returned.content
    card = ask_gate(sol_api, book, "G1.5", thrust_id=chosen)
    assert (
        decide(author_api, book, card.json()["approval_id"], "approve", rationale="Money drives it.").status_code == 200
    )

    # The charter, approved with its constraints; the conversation goes on after it.
    charter = propose(terra_api, book, main_thrust="A clerk proves the tide was forged.", constraints=["No ghosts"])
    assert resolve(author_api, charter).status_code == 200
    assert turn(sol_api, session, "sol", "Does the merchant know the clerk can read?").status_code == 201

    # G2 ratifies that charter version; G3 ratifies the brief and hands off, creating Chapter 1 once.
    saturate(sol_api, luna_api, terra_api, book)
    card = ask_gate(sol_api, book, "G2")
    assert card.status_code == 201, card.content
    assert decide(author_api, book, card.json()["approval_id"], "approve").status_code == 200
    assert DecisionLogEntry.objects.get(book=book, gate="G2").detail["effect"]["charter"]["version"] == 1
    brief = {
        "slug": "decision-brief",
        "type": "decision-brief",
        "content": {"success_metrics": ["the forgery is deducible by chapter 12"], "chapter_1": "The ledger."},
    }
    assert sol_api.post(f"/books/{book_id}/loop/artifacts", brief).status_code == 201
    card = ask_gate(sol_api, book, "G3", artifacts=["decision-brief"])
    assert card.status_code == 201, card.content
    assert decide(author_api, book, card.json()["approval_id"], "approve").status_code == 200

    assert LoopMeta.objects.get(book=book).status == "handed-off"
    assert list(Chapter.objects.filter(book=book).values_list("number", "spec")) == [(1, "The ledger.")]
    session.refresh_from_db()
    assert session.status == "closed"
    late = turn(author_api, session, "author", "One more thought.")
    assert late.status_code == 409 and "handed off" in late.json()["detail"]
    view = author_api.get(f"/books/{book_id}/discovery").json()
    assert [t["status"] for t in view["thrusts"]] == ["selected", "rejected"]
    assert {o["value"] for o in view["observations"]} == {"a harbour clerk", "a salt port in 1820"}
    assert len(view["turns"]) == 3 and [c["status"] for c in view["charters"]] == ["approved"]
    dossier = author_api.post(f"/books/{book_id}/dossiers", {"agent_role": "luna"}).json()["content"]
    assert [c["text"] for c in dossier["author_constraints"]] == ["No ghosts"]
    assert dossier["observations"] == []  # every observation was resolved
    assert decision_log_verify(book).ok
    assert other in {t["id"] for t in view["thrusts"]}
