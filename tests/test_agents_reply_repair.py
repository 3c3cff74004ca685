"""Reading a model's reply (discovery/agents/providers/repair.py): the repairs that are safe (they change how the
object is wrapped or punctuated, never what it says), and the refusals where reading would mean guessing."""

from __future__ import annotations

import pytest

from discovery.agents.providers.base import ProviderError
from discovery.agents.providers.openai_compatible import parse_reply
from discovery.agents.providers.repair import read_object, repaired_note, without_trailing_commas

PLAN = '{"thrusts": [{"kind": "core", "title": "The keeper"}], "notes": ["one"]}'
DATA = {"thrusts": [{"kind": "core", "title": "The keeper"}], "notes": ["one"]}


@pytest.mark.parametrize(
    ("text", "repairs"),
    [
        (PLAN, []),
        (f"  \n{PLAN}\n ", []),
        (f"```json\n{PLAN}\n```", ["a code fence removed"]),
        (f"```\n{PLAN}\n```", ["a code fence removed"]),
        (f"```JSON\n{PLAN}```", ["a code fence removed"]),
        (f"Here is the plan:\n{PLAN}", ["the prose around the object removed"]),
        (f"{PLAN}\nI hope this helps!", ["the prose around the object removed"]),
        (
            f"Sure, here it is (it's below):\n```json\n{PLAN}\n```\nAnything else?",
            ["a code fence removed", "the prose around the object removed"],
        ),
        ('{"thrusts": [{"kind": "core", "title": "The keeper",},], "notes": ["one",],}', ["4 trailing commas removed"]),
        ('{"thrusts": [{"kind": "core", "title": "The keeper"}], "notes": ["one"] ,\n }', ["1 trailing comma removed"]),
        # Prose with braces that are no JSON object is prose: only one object can be read, so it is the answer.
        (f"Filling in {{the template}} now: {PLAN} (see {{notes}})", ["the prose around the object removed"]),
    ],
)
def test_a_safe_repair_reads_the_same_object_and_says_what_it_did(text, repairs):
    data, done = read_object(text)
    assert data == DATA and done == repairs


def test_commas_and_braces_inside_strings_are_the_models_words_and_stay():
    text = '{"notes": ["a, }", "b,]", "say \\"x,}\\""], "title": "{not an object}",}'
    data, done = read_object(text)
    assert data == {"notes": ["a, }", "b,]", 'say "x,}"'], "title": "{not an object}"}
    assert done == ["1 trailing comma removed"]
    assert without_trailing_commas('["a,]", 1,]') == ('["a,]", 1]', 1)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (f"{PLAN}\n{PLAN}", "the model's reply holds 2 JSON objects; which one is the answer cannot be told"),
        (f'Option A: {PLAN} Option B: {{"notes": []}}', "the model's reply holds 2 JSON objects"),
        (PLAN[:40], "the model's reply is not JSON (its object is not finished: the reply was cut off)"),
        ("{'thrusts': []}", "the model's reply is not JSON (Expecting property name enclosed in double quotes"),
        ('{"thrusts": [] // none\n}', "the model's reply is not JSON (Expecting ',' delimiter"),
        ("{thrusts: []}", "the model's reply is not JSON (Expecting property name enclosed in double quotes"),
        ('{"done": True}', "the model's reply is not JSON (Expecting value"),
        ('{"confidence": NaN}', "the model's reply is not JSON (NaN is not a JSON number)"),
        ('{"confidence": Infinity}', "the model's reply is not JSON (Infinity is not a JSON number)"),
        ('{"notes": ["a",, "b"]}', "the model's reply is not JSON (Expecting value"),
        (f"[{PLAN}]", "the model's reply is JSON but not an object"),
        ('"just a string"', "the model's reply is JSON but not an object"),
        ("I could not do this task.", "the model's reply is not JSON (Expecting value at character 0)"),
        ("```json\n```", "the model's reply is not JSON"),
    ],
)
def test_what_is_not_safe_to_repair_is_refused_with_its_reason(text, reason):
    with pytest.raises(ProviderError) as refused:
        read_object(text)
    assert str(refused.value).startswith(reason), str(refused.value)


def test_an_empty_or_oversized_reply_is_refused_before_any_repair():
    for empty in (None, "", "  \n"):
        with pytest.raises(ProviderError, match="the model's reply was empty"):
            parse_reply(empty, max_chars=100)
    with pytest.raises(ProviderError, match="the model's reply is 120 characters; the limit is 100"):
        parse_reply("x" * 120, max_chars=100)
    assert parse_reply(f"```json\n{PLAN}\n```", max_chars=1_000) == (DATA, ["a code fence removed"])


def test_the_runs_note_names_each_repair():
    assert repaired_note(["a code fence removed", "2 trailing commas removed"]) == (
        "The model's reply was repaired before it was read: a code fence removed; 2 trailing commas removed."
    )
