"""Issue 26, extraction: she confirms, corrects or retires observations beside the turn and among what waits for
her (the inbox), with "Confirm all from this turn"; the composer lets her state an observation herself
(author-stated); Sol never asks again about what she has answered or confirmed. Through her routes (what her
browser posts); Luna's extraction comes through Luna's own route."""

from __future__ import annotations

import pytest

from discovery.agents.providers.offline import CHARTER_FIELDS, sol_next_question
from discovery.models import Observation, ObservationRevision, Turn

from .agents_support import work_off_queue

pytestmark = pytest.mark.django_db

PROTAGONIST_QUESTION = next(q for f, _, _, q in CHARTER_FIELDS if f == "protagonist")


def _started(author_browser, book):
    assert author_browser.post(f"/books/{book.pk}/discovery/start/").status_code == 302


def _her_turn(author_browser, book, content: str, **stated) -> Turn:
    data = {"content": content, **{f"stated_{k}": v for k, v in stated.items()}}
    response = author_browser.post(f"/books/{book.pk}/turns/", data)
    assert response.status_code == 302, response.content[:1500]
    return Turn.objects.filter(session__book=book).order_by("-ordinal").first()


def _extracted(luna_api, turn: Turn, *pairs) -> list[str]:
    ids = []
    for key, value in pairs:
        made = luna_api.post(
            f"/turns/{turn.pk}/observations", {"key": key, "value": value, "provenance": "agent-inferred"}
        )
        assert made.status_code == 201, made.content
        ids.append(made.json()["id"])
    return ids


def test_the_inbox_lists_what_waits_for_her_by_turn_and_she_decides_it_there(
    author_browser, editor_browser, luna_api, book
):
    _started(author_browser, book)
    first = _her_turn(author_browser, book, "Mara keeps the light. Old Tom dies in chapter 9.")
    second = _her_turn(author_browser, book, "The town of Saltmarsh lies.")
    name, tom, wrong = _extracted(
        luna_api, first, ("protagonist name", "Mara"), ("fact", "Old Tom dies in chapter 9."), ("place", "Tide")
    )
    (town,) = _extracted(luna_api, second, ("place", "Saltmarsh"))

    inbox = author_browser.get("/review/").content.decode()
    assert "Observations to confirm" in inbox and "4 waiting" in inbox
    assert (
        f"/books/{book.pk}/turns/{first.pk}/confirm/" in inbox
        and f"/books/{book.pk}/turns/{second.pk}/confirm/" in inbox
    )
    assert "true until chapter 9" in inbox, "the fact's chapter cue reads in words"
    assert "No observation waits" in editor_browser.get("/review/").content.decode(), "the editor decides nothing"

    # Correct one, retire one (a reason is needed), then confirm the rest of the turn at once: all from the inbox.
    back = author_browser.post(
        f"/books/{book.pk}/observations/{name}/", {"action": "correct", "value": "Mara Quell", "next": "inbox"}
    )
    assert back.status_code == 302 and back["Location"].startswith("/review/")
    reasonless = author_browser.post(f"/books/{book.pk}/observations/{wrong}/", {"action": "retire", "next": "inbox"})
    assert reasonless.status_code == 422 and "say why you retire it" in reasonless.content.decode()
    assert Observation.objects.get(pk=wrong).status == "working"
    retired = author_browser.post(
        f"/books/{book.pk}/observations/{wrong}/",
        {"action": "retire", "rationale": "Tide is not a place here.", "next": "inbox"},
    )
    assert retired.status_code == 302
    revision = ObservationRevision.objects.get(observation_id=wrong)
    assert (revision.action, revision.rationale) == ("retire", "Tide is not a place here.")
    confirmed = author_browser.post(f"/books/{book.pk}/turns/{first.pk}/confirm/", {"next": "inbox"})
    assert confirmed.status_code == 302 and confirmed["Location"].startswith("/review/")
    states = dict(Observation.objects.filter(turn=first).values_list("id", "status"))
    assert {str(k): v for k, v in states.items()} == {name: "confirmed", tom: "confirmed", wrong: "retired"}
    assert Observation.objects.get(pk=name).status == "confirmed"

    inbox = author_browser.get("/review/").content.decode()
    assert "1 waiting" in inbox and "Saltmarsh" in inbox and f"observation-{town}" in inbox
    assert f"observation-{tom}" not in inbox
    # An editor cannot decide from the inbox's forms either.
    assert editor_browser.post(f"/books/{book.pk}/turns/{second.pk}/confirm/", {"next": "inbox"}).status_code == 403
    assert Observation.objects.get(pk=town).status == "working"


def test_beside_the_turn_she_retires_with_a_reason_and_confirms_all_from_the_turn(author_browser, luna_api, book):
    _started(author_browser, book)
    turn = _her_turn(author_browser, book, "Mara keeps the light.")
    keep, drop = _extracted(luna_api, turn, ("protagonist name", "Mara"), ("named person", "Light"))
    page = author_browser.get(f"/books/{book.pk}/").content.decode()
    assert f'id="reason-{drop}"' in page and "Confirm all from this turn (2)" in page
    # The scratchpad's conversation says what waits and leads to the turn, where she decides.
    scratchpad = author_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()
    assert "2 observations from this turn wait for you" in scratchpad
    assert f'href="/books/{book.pk}/#turn-{turn.pk}"' in scratchpad
    assert (
        author_browser.post(
            f"/books/{book.pk}/observations/{drop}/", {"action": "retire", "rationale": "Not a person."}
        ).status_code
        == 302
    )
    assert author_browser.post(f"/books/{book.pk}/turns/{turn.pk}/confirm/").status_code == 302
    assert Observation.objects.get(pk=keep).status == "confirmed"
    assert Observation.objects.get(pk=drop).status == "retired"
    assert "from this turn wait" not in author_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()


def test_the_composer_lets_her_state_an_observation_herself_and_it_is_author_stated(
    author_browser, editor_browser, book
):
    _started(author_browser, book)
    page = author_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()
    assert 'name="stated_value"' in page and "State something yourself" in page
    assert 'name="stated_value"' not in editor_browser.get(f"/books/{book.pk}/scratchpad/").content.decode()

    turn = _her_turn(author_browser, book, "One more thing.", key="fact", value="Old Tom dies in chapter 9.")
    (stated,) = Observation.objects.filter(turn=turn)
    assert (stated.key, stated.value, stated.provenance, stated.status) == (
        "fact",
        "Old Tom dies in chapter 9.",
        "author-stated",
        "confirmed",
    )
    (revision,) = ObservationRevision.objects.filter(observation=stated)
    assert (revision.action, revision.previous_status, revision.decided_by_id) == ("confirm", "working", book.owner_id)
    # From the book page's answer form too, the key defaulting to a fact.
    answered = author_browser.post(
        f"/books/{book.pk}/turns/",
        {"content": "Yes.", "stated_value": "The letter is shown in chapter four.", "next": "book"},
    )
    assert answered.status_code == 302
    assert Observation.objects.filter(key="fact", value__contains="letter", provenance="author-stated").exists()

    # An editor's words are never labelled the author's: the one rule refuses it inline, and nothing is stored.
    before = Turn.objects.count()
    refused = editor_browser.post(f"/books/{book.pk}/turns/", {"content": "Note.", "stated_value": "Tom lives."})
    assert refused.status_code == 422 and "cannot label its own words author-stated" in refused.content.decode()
    assert Turn.objects.count() == before
    # A bad statement is an inline message naming what is wrong, with her draft kept.
    long = author_browser.post(f"/books/{book.pk}/turns/", {"content": "Draft kept.", "stated_key": "x" * 500})
    assert long.status_code == 422 and "Draft kept." in long.content.decode()


@pytest.mark.agents_act
def test_sol_never_asks_about_what_she_answered_stated_or_confirmed(settings, author_browser, book):
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "PROVIDER": "offline"}
    _started(author_browser, book)
    work_off_queue()
    # She states her protagonist herself, beside a turn that says nothing about him.
    _her_turn(author_browser, book, "I like the sea.", key="protagonist", value="Ada Quell, a keeper who lies.")
    work_off_queue()
    for _ in range(4):
        session = book.sessions.get()
        _her_turn(author_browser, book, "I am not sure yet.")
        work_off_queue()
    asked = list(book.sessions.get().questions.order_by("sequence").values_list("question", flat=True))
    assert PROTAGONIST_QUESTION not in asked, asked
    assert len(asked) == len(set(asked)), "never the same question twice"
    session.refresh_from_db()
    assert session.current_question != PROTAGONIST_QUESTION


def test_sols_rule_skips_a_field_confirmed_or_waiting_and_a_question_asked_before():
    turn = {"id": "t1", "ordinal": 1, "role": "author", "content": "Nothing here.", "answers": ""}
    turn["created_at"] = "2026-01-02"
    context = {
        "book": {"id": "b1", "premise": ""},
        "dossier": {"claims": [], "scratchpad": []},
        "turns": [turn],
        "questions": [{"question": CHARTER_FIELDS[0][3], "created_at": "2026-01-01", "source_refs": []}],
        "observations": [{"id": "o2", "turn_id": "t1", "key": "central conflict", "value": "x", "status": "working"}],
        "confirmed_observations": [{"id": "o1", "key": "protagonist", "value": "Ada", "created_at": "2026-01-02"}],
    }
    question = sol_next_question(context)["question"]["question"]
    asked_fields = {f for f, _, _, q in CHARTER_FIELDS if q == question}
    assert asked_fields and asked_fields.isdisjoint({"main_thrust", "protagonist", "central_conflict"}), question
