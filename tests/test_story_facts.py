"""Issue 26, extraction and canon from the conversation: facts with their chapter cues, from her words to canon.

Through her routes only (Django's test client posting what her browser posts), with the offline provider and Sol
acting on his own: her turn names facts with chapter cues ("secret until chapter twelve", "dies in chapter 9",
"shown in chapter four"); Luna extracts each as a working observation citing the turn and carrying the cue; she
confirms them beside the turn; Sol proposes claims from them whose story records are what the words say; only her
verdict makes one canon."""

from __future__ import annotations

import pytest
from django.test import Client

from approvals.models import Approval
from discovery.agents.providers.offline import extract_from, fact_claim
from discovery.models import Book, KnowledgeClaim, Observation, Turn
from discovery.story_rules import chapter_cues, chapter_number

from .agents_support import work_off_queue
from .factories import UserFactory

FACTS = (
    "The harbour master is the killer, but that stays secret until chapter twelve. "
    "Old Tom dies in chapter 9. The drowned man's letter is shown in chapter four."
)


@pytest.mark.parametrize(
    ("words", "number"),
    [("9", 9), ("4th", 4), ("twelve", 12), ("twenty-one", 21), ("Thirty Two", 32), ("fourth", 4), ("dozen", None)],
)
def test_chapter_numbers_are_read_as_digits_and_as_words(words, number):
    assert chapter_number(words) == number


@pytest.mark.parametrize(
    ("sentence", "story"),
    [
        ("The keeper is the killer, secret until chapter twelve.", {"known_by": "nobody", "first_shown_chapter": 12}),
        ("Ada's scar is shown in chapter four.", {"first_shown_chapter": 4}),
        ("Old Tom dies in chapter 9.", {"true_until_chapter": 9}),
        ("From chapter 3 until chapter 7, Odo is the mayor.", {"true_from_chapter": 3, "true_until_chapter": 7}),
        ("The letter is known only to Mara and Odo, first seen in the second chapter.",
         {"first_shown_chapter": 2, "known_by": "characters", "known_by_characters": ["Mara", "Odo"]}),
        ("The twist comes out in chapter 20.", {"first_shown_chapter": 20, "reveal": "twist"}),
        ("The lamp is lit every night.", {}),
    ],
)  # fmt: skip
def test_chapter_cues_name_the_story_record_the_words_say(sentence, story):
    found = chapter_cues(sentence)["story"]
    assert {
        k: str(v) if hasattr(v, "value") else v for k, v in found.items() if k != "reveal" or "reveal" in story
    } == (story)


def test_a_fact_sentence_becomes_a_claim_with_its_story_record():
    secret = fact_claim("The harbour master is the killer, but that stays secret until chapter twelve.")
    assert (secret["subject"], secret["predicate"], secret["value"]) == ("The harbour master", "is", "the killer")
    assert secret["story"]["known_by"] == "nobody" and secret["story"]["first_shown_chapter"] == 12
    dies = fact_claim("Old Tom dies in chapter 9.")
    assert (dies["subject"], dies["predicate"], dies["value"], dies["story"]) == (
        "Old Tom",
        "is",
        "alive",
        {"true_until_chapter": 9},
    )
    assert fact_claim("The lamp is lit every night.") is None
    assert [key for key, _ in extract_from(FACTS)].count("fact") == 3


def _browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _post(client: Client, path: str, data: dict | None = None):
    response = client.post(path, data or {})
    assert response.status_code in (200, 302), (path, response.status_code, response.content[:1500])
    work_off_queue()
    return response


@pytest.mark.django_db
@pytest.mark.agents_act
def test_facts_with_chapter_cues_go_from_her_turn_to_canon_with_their_story_records(settings):
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "PROVIDER": "offline"}
    user = UserFactory(username="keeper")
    browser = _browser(user)
    _post(
        browser, "/books/new/", {"title": "Saltmarsh", "premise": "A keeper finds a letter.", "genre_pack": "mystery"}
    )
    book = Book.objects.get(owner=user)
    _post(browser, f"/books/{book.pk}/discovery/start/")
    _post(browser, f"/books/{book.pk}/turns/", {"content": FACTS})
    turn = Turn.objects.get(session__book=book, role="author")

    # Luna extracted each fact as a working observation citing the turn; the page shows the cue in words.
    facts = Observation.objects.filter(turn=turn, key="fact").order_by("created_at")
    assert [o.status for o in facts] == ["working"] * 3, list(Observation.objects.values_list("key", "value"))
    assert {o.provenance for o in facts} == {"agent-inferred"}
    page = browser.get(f"/books/{book.pk}/").content.decode()
    assert "secret until chapter 12" in page and "true until chapter 9" in page and "first shown in chapter 4" in page

    # She corrects one before confirming: the story record follows her corrected words.
    letter = facts.get(value__contains="letter")
    _post(
        browser,
        f"/books/{book.pk}/observations/{letter.pk}/",
        {"action": "correct", "value": "The drowned man's letter is shown in chapter five."},
    )
    _post(browser, f"/books/{book.pk}/turns/{turn.pk}/confirm/")
    assert not Observation.objects.filter(turn=turn, status="working").exists()
    # Sol proposed claims from the confirmed facts, and asks her verdict on his next step.
    _post(browser, f"/books/{book.pk}/agents/start/", {"role": "sol", "task": "next-question"})

    claims = {c.subject: c for c in KnowledgeClaim.objects.filter(base__scope="book", proposed_by="sol")}
    killer = claims["The harbour master"]
    assert (killer.predicate, killer.value, killer.known_by, killer.first_shown_chapter) == (
        "is",
        "the killer",
        "nobody",
        12,
    )
    tom = claims["Old Tom"]
    assert (tom.value, tom.true_until_chapter) == ("alive", 9)
    letter_claim = claims["The drowned man's letter"]
    assert letter_claim.first_shown_chapter == 5, "the claim reads her corrected value"
    assert {r["type"] for c in claims.values() for r in c.source_refs} == {"observation"}
    assert all(c.status == "proposed" for c in claims.values()), "nothing is canon without her verdict"

    ask = Approval.objects.get(book=book, kind="canon-promotion", subject_id=str(tom.pk), status="pending")
    _post(browser, f"/review/{ask.pk}/", {"verdict": "approve", "rationale": "Tom dies in nine."})
    tom.refresh_from_db()
    assert tom.status == "approved" and tom.true_until_chapter == 9
    codex = browser.get(f"/books/{book.pk}/codex/?as_of_chapter=10").content.decode()
    assert "alive" not in codex, "as of chapter 10, Tom is no longer alive"
