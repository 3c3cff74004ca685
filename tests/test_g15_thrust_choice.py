"""G1.5: the author picks the thrust, says why the others were not chosen, and the log proves it.

Sol names a thrust on the G1.5 card (his recommendation); the author sees every open thrust candidate,
chooses one (Sol's or another: her right, not a stale card) and may give a reason per thrust not chosen.
The same choice through the loop verdict route, the approvals decide route and the decision page.
"""

from __future__ import annotations

import re
import uuid

import pytest

from approvals.models import Approval, DecisionLogEntry
from approvals.selectors import decision_log_verify
from discovery.loop.models import LoopMeta
from discovery.models import ThrustCandidate

from .discovery_support import start, thrust_body
from .factories import ThrustCandidateFactory
from .loop_scenes import ask_gate, decide, pass_gate, url

pytestmark = pytest.mark.django_db


def _thrusts(api, session, *titles) -> list[str]:
    ids = []
    for title in titles:
        response = api.post(f"/sessions/{session.pk}/thrusts", thrust_body(title=title))
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    return ids


@pytest.fixture
def g15(author_api, sol_api, terra_api, book):
    """A book at G1.5 with three open thrusts; Sol's card recommends the first. Returns (approval id, ids)."""
    session = start(author_api, book)
    ids = _thrusts(terra_api, session, "The keeper's doubt", "Two timelines", "The sister")
    for gate in ("G0", "G1"):
        pass_gate(sol_api, author_api, book, gate)
    card = ask_gate(sol_api, book, "G1.5", thrust_id=ids[0])
    assert card.status_code == 201, card.content
    return card.json()["approval_id"], ids


def _status(book) -> dict[str, tuple[str, str]]:
    return {str(t.pk): (t.status, t.not_chosen_reason) for t in ThrustCandidate.objects.filter(session__book=book)}


def _verdict(api, book, approval_id, **body):
    return api.post(
        url(book, f"/approvals/{approval_id}/verdict"),
        {"verdict": "approve", "rationale": "Two timelines carry the doubt.", **body},
    )


def test_the_author_chooses_another_thrust_than_sols_and_the_log_records_her_reasons(author_api, book, g15):
    approval_id, (sols, other, third) = g15
    response = _verdict(author_api, book, approval_id, thrust_id=other, not_chosen={sols: "Too quiet for a book."})
    assert response.status_code == 200, response.content
    status = _status(book)
    assert status[other] == ("selected", "")
    assert status[sols] == ("rejected", "Too quiet for a book.")
    # No reason given for the third: the generic sentence names her choice and her rationale.
    assert status[third][0] == "rejected"
    assert "'Two timelines'" in status[third][1] and "Two timelines carry the doubt." in status[third][1]
    entry = DecisionLogEntry.objects.get(book=book, gate="G1.5")
    thrust = entry.detail["effect"]["thrust"]
    assert thrust["selected"] == other and thrust["recommended"] == sols
    assert thrust["chose_the_recommended"] is False
    reasons = {n["id"]: (n["reason"], n["author_reason"]) for n in thrust["not_chosen"]}
    assert reasons[sols] == ("Too quiet for a book.", True)
    assert reasons[third][1] is False and "Two timelines carry the doubt." in reasons[third][0]
    assert response.json()["detail"]["effect"]["thrust"] == thrust
    assert LoopMeta.objects.get(book=book).gate == "G2"
    assert decision_log_verify(book).ok


def test_approving_without_a_choice_ratifies_sols_recommendation(author_api, book, g15):
    approval_id, (sols, other, third) = g15
    assert decide(author_api, book, approval_id, "approve").status_code == 200
    status = _status(book)
    assert status[sols][0] == "selected" and status[other][0] == status[third][0] == "rejected"
    thrust = DecisionLogEntry.objects.get(book=book, gate="G1.5").detail["effect"]["thrust"]
    assert thrust["chose_the_recommended"] is True


def _nothing_decided(book, approval_id) -> None:
    assert Approval.objects.get(pk=approval_id).status == "pending"
    assert not DecisionLogEntry.objects.filter(book=book, gate="G1.5").exists()
    assert {s for s, _ in _status(book).values()} <= {"proposed", "rejected"}
    assert not ThrustCandidate.objects.filter(session__book=book, status="selected").exists()


def test_a_chosen_id_that_is_not_an_open_thrust_of_this_book_is_a_422_naming_thrust_id(
    author_api, book, other_book, g15
):
    approval_id, (_sols, _other, _third) = g15
    foreign = str(ThrustCandidateFactory(session__book=other_book).pk)
    rejected = str(ThrustCandidateFactory(session__book=book, status="rejected").pk)
    for thrust_id in (foreign, rejected, str(uuid.uuid4()), "not-a-uuid"):
        response = _verdict(author_api, book, approval_id, thrust_id=thrust_id)
        assert response.status_code == 422, (thrust_id, response.content)
        assert response.json()["field"] == "thrust_id"
    _nothing_decided(book, approval_id)


def test_a_reason_for_the_chosen_thrust_or_for_one_not_on_the_card_is_a_422_naming_not_chosen(
    author_api, book, other_book, g15
):
    approval_id, (sols, other, _third) = g15
    foreign = str(ThrustCandidateFactory(session__book=other_book).pk)
    for not_chosen in ({other: "It is the one."}, {foreign: "Not mine."}):
        response = _verdict(author_api, book, approval_id, thrust_id=other, not_chosen=not_chosen)
        assert response.status_code == 422, response.content
        assert response.json()["field"] == "not_chosen"
    # A reason longer than the thrust's field holds is refused by the input schema, naming it.
    too_long = _verdict(author_api, book, approval_id, thrust_id=other, not_chosen={sols: "x" * 10_001})
    assert too_long.status_code == 422 and too_long.json()["field"].startswith("not_chosen"), too_long.content
    _nothing_decided(book, approval_id)


def test_a_thrust_is_chosen_only_by_approving_the_g15_card(author_api, book, g15):
    approval_id, (_sols, other, _third) = g15
    response = author_api.post(
        url(book, f"/approvals/{approval_id}/verdict"), {"verdict": "park", "rationale": "Later.", "thrust_id": other}
    )
    assert response.status_code == 422 and response.json()["field"] == "thrust_id"
    _nothing_decided(book, approval_id)


def test_a_charter_approval_takes_no_thrust_choice(author_api, book, g15):
    from .approval_subjects import propose_charter

    charter = propose_charter(book)
    response = author_api.post(
        f"/approvals/{charter.approval_id}/verdict",
        {"verdict": "approve", "rationale": "Yes.", "thrust_id": g15[1][1]},
    )
    assert response.status_code == 422 and response.json()["field"] == "thrust_id"
    assert Approval.objects.get(pk=charter.approval_id).status == "pending"


@pytest.mark.parametrize("agent", ["sol_api", "terra_api", "luna_api"])
def test_agents_cannot_choose_the_thrust(request, agent, book, g15):
    approval_id, (_sols, other, _third) = g15
    response = _verdict(request.getfixturevalue(agent), book, approval_id, thrust_id=other)
    assert response.status_code == 403, response.content
    _nothing_decided(book, approval_id)


def test_the_approvals_decide_route_takes_the_same_choice(author_api, book, g15):
    approval_id, (_sols, other, third) = g15
    response = author_api.post(
        f"/approvals/{approval_id}/verdict",
        {"verdict": "approve", "rationale": "The sister.", "thrust_id": third, "not_chosen": {other: "Confusing."}},
    )
    assert response.status_code == 200, response.content
    status = _status(book)
    assert status[third][0] == "selected" and status[other] == ("rejected", "Confusing.")
    assert response.json()["entry"]["detail"]["effect"]["thrust"]["selected"] == third
    # Decided, the card offers no choice any more: the log entry says what was chosen.
    assert "thrusts" not in author_api.get(f"/approvals/{approval_id}").json()["proposal"]


def test_the_card_lists_every_open_thrust_and_a_thrust_added_while_it_waits_lapses_it(author_api, terra_api, book, g15):
    approval_id, (sols, other, third) = g15
    shown = author_api.get(f"/approvals/{approval_id}").json()["proposal"]["thrusts"]
    assert [(t["id"], t["recommended"]) for t in shown] == [(sols, True), (other, False), (third, False)]
    session = ThrustCandidate.objects.get(pk=sols).session
    (late,) = _thrusts(terra_api, session, "A late idea")
    response = _verdict(author_api, book, approval_id, thrust_id=other)
    assert response.status_code == 409 and response.json()["code"] == "superseded"
    renewed = response.json()["approval_id"]
    assert [t["id"] for t in author_api.get(f"/approvals/{renewed}").json()["proposal"]["thrusts"]] == [
        sols,
        other,
        third,
        late,
    ]
    assert _verdict(author_api, book, renewed, thrust_id=late).status_code == 200
    assert _status(book)[late][0] == "selected"


def test_the_decision_page_offers_every_thrust_sols_marked_and_records_the_authors_choice(
    author_browser, editor_browser, book, g15
):
    approval_id, (sols, other, third) = g15
    page = author_browser.get(f"/review/{approval_id}/").content.decode()
    for title in ("The keeper&#x27;s doubt", "Two timelines", "The sister"):
        assert title in page
    assert page.count('data-testid="recommended"') == 1
    checked = re.findall(r'name="thrust_id" value="([^"]+)" checked', page)
    assert checked == [sols], "Sol's recommendation is the default"
    assert "The thrust you choose below is ratified" in page
    # The editor reads the candidates (Sol's marked) but is offered no choice.
    read_only = editor_browser.get(f"/review/{approval_id}/").content.decode()
    assert 'name="thrust_id"' not in read_only
    assert 'data-testid="card-thrusts"' in read_only and "Two timelines" in read_only
    # A missing rationale comes back inline with her choice and her reasons kept.
    form = {"verdict": "approve", "rationale": "", "thrust_id": other, f"not_chosen-{sols}": "Too quiet."}
    again = author_browser.post(f"/review/{approval_id}/", form).content.decode()
    assert re.findall(r'name="thrust_id" value="([^"]+)" checked', again) == [other]
    assert "Too quiet.</textarea>" in again
    _nothing_decided(book, approval_id)
    response = author_browser.post(f"/review/{approval_id}/", {**form, "rationale": "Two timelines it is."})
    assert response.status_code == 302
    status = _status(book)
    assert status[other][0] == "selected" and status[sols] == ("rejected", "Too quiet.")
    assert "Two timelines it is." in status[third][1]


def test_on_the_decision_page_the_choice_counts_only_when_she_approves(author_browser, book, g15):
    approval_id, (sols, other, _third) = g15
    form = {"verdict": "park", "rationale": "Not now.", "thrust_id": other, f"not_chosen-{sols}": "No."}
    assert author_browser.post(f"/review/{approval_id}/", form).status_code == 302
    assert Approval.objects.get(pk=approval_id).verdict == "park"
    assert {s for s, _ in _status(book).values()} == {"proposed"}


def test_the_loop_page_card_lists_the_thrusts_with_sols_recommendation(author_browser, book, g15):
    page = author_browser.get(f"/books/{book.pk}/loop/").content.decode()
    assert "Two timelines" in page and "The sister" in page
    assert page.count('data-testid="recommended"') == 1


def test_on_the_decision_page_a_card_lapsed_by_a_new_thrust_is_put_before_her_again(
    author_browser, terra_api, book, g15
):
    approval_id, (sols, other, _third) = g15
    _thrusts(terra_api, ThrustCandidate.objects.get(pk=sols).session, "A late idea")
    response = author_browser.post(
        f"/review/{approval_id}/", {"verdict": "approve", "rationale": "Two timelines.", "thrust_id": other}
    )
    assert response.status_code == 409
    assert Approval.objects.get(pk=approval_id).status == "superseded"
    fresh = Approval.objects.get(book=book, status="pending")
    assert f'href="/review/{fresh.pk}/"' in response.content.decode().split('data-testid="renewed"')[1]
    page = author_browser.get(f"/review/{fresh.pk}/").content.decode()
    assert "A late idea" in page and page.count('data-testid="recommended"') == 1
    assert not ThrustCandidate.objects.filter(session__book=book, status="selected").exists()
