"""A brand-new author's day in Debian's Chromium, using only the browser (agent steps through the API,
as agents would): from the empty account to a book with an editor, an approved Story Charter she
wrote herself, compared with the first version, a promoted canon claim, and the loop's gates passed in
the browser up to the G3 hand-off (Chapter 1 made from the decision brief). Then the editor's day:
she reads the book and answers in the conversation, but decides nothing. Every page is checked at 390 px.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from approvals.models import Approval, DecisionLogEntry
from discovery.loop.models import LoopMeta
from discovery.models import Book, Chapter, DiscoverySession, KnowledgeClaim, StoryCharter, ThrustCandidate
from novelgraph.core.services import api_key_create
from tests.discovery_support import thrust_body
from tests.factories import PASSWORD, UserFactory

from .conftest import assert_accessible_basics, assert_fits_phone_width, assert_no_serious_axe_violations, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def api(key: str, path: str, body: dict):
    client = Client()
    response = client.post(f"/api/v1{path}", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code in (200, 201), response.content
    return response.json()


def check_phone(page) -> None:
    """The page fits 390 px (no sideways scrolling) and axe-core finds nothing serious there; back to
    desktop width after."""
    page.set_viewport_size({"width": 390, "height": 844})
    assert_fits_phone_width(page)
    assert_no_serious_axe_violations(page)
    page.set_viewport_size({"width": 1280, "height": 900})


def test_a_new_author_goes_from_an_empty_account_to_an_approved_charter_and_canon(page, screenshot, seeded):
    author = UserFactory(username="nadia")
    editor = UserFactory(username="ed")
    log_in(page, "nadia", PASSWORD)

    # The empty dashboard offers to start; she starts a series, then its first book.
    assert page.get_by_role("heading", name="No books yet").is_visible()
    assert page.get_by_role("link", name="Start a new book").is_visible()
    assert_accessible_basics(page)
    screenshot(page, "first-sign-in")
    check_phone(page)
    page.get_by_role("link", name="Start a new series").click()
    page.get_by_label("Title (required)").fill("Salt Roads")
    page.get_by_label("Premise").fill("Smugglers, tides and a harbour that keeps secrets.")
    assert_accessible_basics(page)
    page.get_by_role("button", name="Create the series").click()
    page.wait_for_url("**/books/new/?series=*")
    assert page.get_by_label("Series", exact=True).input_value() != ""
    page.get_by_label("Title (required)").fill("The Pilot's Daughter")
    page.get_by_label("Premise").fill("A pilot's daughter reads the sea and the lies of the men who sail it.")
    page.get_by_label("Genre pack").select_option("mystery")
    page.get_by_label("Planned order in the series").fill("1")
    assert_accessible_basics(page)
    screenshot(page, "new-book")
    check_phone(page)
    page.get_by_role("button", name="Create the book").click()
    page.wait_for_url("**/books/*/")
    book = Book.objects.get(owner=author)
    assert book.series.title == "Salt Roads" and book.genre_pack == "mystery"
    assert page.get_by_role("status").filter(has_text="is yours").is_visible()

    # She starts the discovery, then invites an editor (and confirms a removal before it happens).
    page.get_by_role("button", name="Start the discovery").click()
    page.locator(".current-question").wait_for()
    page.get_by_role("navigation", name="This book").get_by_role("link", name="People").click()
    page.get_by_label("Username").fill("ed")
    page.get_by_role("button", name="Add as editor").click()
    page.get_by_role("list", name="Editors").get_by_text("ed").wait_for()
    assert book.editors.filter(pk=editor.pk).exists()
    page.once("dialog", lambda dialog: dialog.dismiss())  # she changes her mind: nothing happens
    page.get_by_role("button", name="Remove ed").click()
    assert book.editors.filter(pk=editor.pk).exists()
    assert_accessible_basics(page)
    check_phone(page)

    # Sol (through the API, as an agent) proposes the first charter version.
    sol = api_key_create(owner=author, role="sol", books=[book])[1]
    api(
        sol,
        f"/books/{book.pk}/charters",
        {
            "main_thrust": "A pilot's daughter proves the wreck was no accident.",
            "reader_promise": ["a fair-play puzzle"],
            "protagonist": {"name": "Tova"},
            "central_conflict": "The harbour protects its own.",
        },
    )

    # She answers Sol's question from the book page.
    page.get_by_role("navigation", name="This book").get_by_role("link", name="Overview").click()
    page.get_by_label("Answer with a turn").fill("Tova suspects her own father.")
    page.get_by_role("button", name="Answer", exact=True).click()
    page.wait_for_url("**/books/*/#turn-*")
    page.get_by_text("Tova suspects her own father.").wait_for()

    # She writes her own version from Sol's, then compares the two field by field.
    page.get_by_role("link", name="Write a version from the current one").click()
    assert page.get_by_label("Main thrust (required)").input_value().startswith("A pilot's daughter proves")
    page.get_by_label("Reader promise (required)").fill("a fair-play puzzle\na daughter who doubts her father")
    page.get_by_label("Protagonist (required)").fill("name: Tova\nflaw: trusts the sea more than people")
    assert_accessible_basics(page)
    check_phone(page)
    page.get_by_role("button", name="Propose this version").click()
    page.wait_for_url("**/books/*/#charter-*")
    mine = StoryCharter.objects.get(book=book, version=2)
    assert mine.proposed_by == "author"
    page.get_by_role("link", name="Compare versions side by side").click()
    assert page.get_by_test_id("changed-count").inner_text() == "2 fields differ."
    assert_accessible_basics(page)
    screenshot(page, "charter-compare")
    check_phone(page)

    # Sol's version, superseded in her mind by her own: she rejects it, saying why.
    sols = StoryCharter.objects.get(book=book, version=1)
    page.goto(f"/review/{sols.approval_id}/")
    page.get_by_label("Verdict").select_option("reject")
    page.get_by_label("Rationale (required)").fill("My version keeps the doubt.")
    page.get_by_role("button", name="Record the decision").click()
    page.locator("[data-testid=log-entry]").wait_for()
    assert_no_serious_axe_violations(page)  # the decided page, as updated in place

    # She reviews her version: readable fields, each verdict explained; approves it with a rationale.
    page.goto(f"/review/{mine.approval_id}/")
    assert page.get_by_test_id("subject").inner_text() == "Story charter v2"
    assert "binding Story Charter" in page.get_by_test_id("verdict-help").inner_text()
    assert_accessible_basics(page)
    check_phone(page)
    page.get_by_label("Verdict").select_option("approve")
    page.get_by_label("Rationale (required)").fill("Her doubt is the engine.")
    page.get_by_role("button", name="Record the decision").click()
    page.locator("[data-testid=log-entry]").wait_for()
    assert page.get_by_test_id("approval-status").inner_text() == "decided", "the pill updates in place"
    mine.refresh_from_db()
    assert mine.status == "approved"

    # Sol proposes a canon claim and asks for approval (API); she promotes it in the browser.
    claim = api(
        sol,
        "/claims",
        {
            "scope": "book",
            "scope_id": str(book.pk),
            "subject": "Tova",
            "predicate": "is the daughter of",
            "value": "the harbour pilot",
            "provenance": "agent-inferred",
        },
    )
    asked = api(sol, f"/claims/{claim['id']}/request-approval", {"book_id": str(book.pk)})
    page.goto("/review/")
    page.get_by_role("link", name="Canon: Tova is the daughter of the harbour pilot").first.click()
    page.wait_for_url(f"**/review/{asked['approval_id']}/")
    page.get_by_label("Verdict").select_option("approve")
    page.get_by_label("Rationale (required)").fill("Stated in turn one.")
    page.get_by_role("button", name="Record the decision").click()
    page.locator("[data-testid=log-entry]").wait_for()
    assert KnowledgeClaim.objects.get(pk=claim["id"]).status == "approved"
    assert Approval.objects.filter(book=book, status="pending").count() == 0
    # The nav badge refreshes itself after the in-place decision: no count left, without a reload.
    page.locator("#review-nav .count").wait_for(state="detached")

    page.goto(f"/books/{book.pk}/")
    assert (
        "Tova is the daughter of the harbour pilot"
        in page.locator("#kb-title + *, section[aria-labelledby=kb-title]").first.inner_text()
    )
    assert_no_serious_axe_violations(page)
    page.goto(f"/review/books/{book.pk}/log/")
    assert page.get_by_test_id("log-badge").inner_text() == "verified"
    assert "ratified by nadia, the author" in page.locator("main").inner_text()
    check_phone(page)
    screenshot(page, "new-author-log")

    # The loop's gates, G0 to the G3 hand-off: the agents ask through the API, as agents would; she reads
    # each card and gives her verdict on its review page in the browser.
    terra = api_key_create(owner=author, role="terra", books=[book])[1]
    luna = api_key_create(owner=author, role="luna", books=[book])[1]
    session = DiscoverySession.objects.get(book=book)
    thrust = api(
        terra,
        f"/sessions/{session.pk}/thrusts",
        thrust_body(
            title="The wreck was no accident",
            main_thrust="Tova proves the pilot's boat was sunk on purpose.",
            character_engine="Her need to be believed by men who never listen to her.",
            central_conflict="The harbour wants the wreck forgotten.",
        ),
    )
    ledger = api(
        terra,
        f"/sessions/{session.pk}/thrusts",
        thrust_body(
            title="The harbour's ledger",
            kind="stretch",
            main_thrust="Tova reads the harbour's ledger and finds her father's hand in every false entry.",
            character_engine="Her loyalty to her father against her reading of the sea.",
            central_conflict="The ledger protects the men who pay the harbour.",
        ),
    )
    summers = api(
        terra,
        f"/sessions/{session.pk}/thrusts",
        thrust_body(
            title="Two summers",
            kind="wild",
            main_thrust="The wreck told twice, the summer it happened and twenty years on.",
            character_engine="Tova at twelve and at thirty-two, each doubting the other.",
            central_conflict="Memory against the ledger.",
        ),
    )

    def choose_the_ledger() -> None:
        """At G1.5 she sees every thrust, Sol's marked and checked; she picks another, and says why not Sol's."""
        choice = page.get_by_test_id("thrust-choice")
        assert choice.get_by_test_id("thrust-option").count() == 3
        recommended = choice.get_by_test_id("thrust-option").filter(has=page.get_by_test_id("recommended"))
        assert "The wreck was no accident" in recommended.inner_text()
        assert recommended.get_by_role("radio").is_checked(), "Sol's recommendation is the default"
        choice.get_by_role("radio", name=re.compile("The harbour's ledger")).check()
        page.get_by_label("If not chosen: why not “The wreck was no accident” (optional)").fill(
            "An accident or not is a question; the ledger is a story."
        )
        choice.scroll_into_view_if_needed()
        screenshot(page, "thrust-pick")

    def gate_in_the_browser(gate: str, before=None, **extra) -> None:
        card = api(
            sol,
            f"/books/{book.pk}/loop/gates/{gate}/request",
            {
                "summary": f"ratify {gate}",
                "decisions_requested": [f"ratify what {gate} asks"],
                "recommended": "approve",
                "reversibility_class": "reversible",
                **extra,
            },
        )
        if card["approval_id"] is None:  # a reversible gate the loop's autonomy passes without asking her
            assert card["outcome"] == "passed" and LoopMeta.objects.get(book=book).gate != gate
            return
        page.goto(f"/review/{card['approval_id']}/")
        assert page.get_by_test_id("subject").inner_text() == f"ratify {gate}"
        assert_accessible_basics(page)
        page.get_by_label("Verdict").select_option("approve")
        page.get_by_label("Rationale (required)").fill(f"{gate} holds for me.")
        if before is not None:
            before()
        page.get_by_role("button", name="Record the decision").click()
        page.locator("[data-testid=log-entry]").wait_for()
        assert Approval.objects.get(pk=card["approval_id"]).verdict == "approve"
        meta = LoopMeta.objects.get(book=book)
        assert meta.gate != gate or meta.status == "handed-off", f"{gate} passed"

    for gate in ("G0", "G1"):
        gate_in_the_browser(gate)
    gate_in_the_browser("G1.5", before=choose_the_ledger, thrust_id=thrust["id"])
    chosen = {t.title: (t.status, t.not_chosen_reason) for t in ThrustCandidate.objects.filter(session=session)}
    assert chosen["The harbour's ledger"] == ("selected", "")
    why_not = "An accident or not is a question; the ledger is a story."
    assert chosen["The wreck was no accident"] == ("rejected", why_not)
    assert chosen["Two summers"][0] == "rejected" and "G1.5 holds for me." in chosen["Two summers"][1]
    logged = DecisionLogEntry.objects.get(book=book, gate="G1.5").detail["effect"]["thrust"]
    assert logged["selected"] == ledger["id"] and logged["recommended"] == thrust["id"]
    assert {n["id"] for n in logged["not_chosen"]} == {thrust["id"], summers["id"]}
    # Saturation for G2: a clean traceability chain (Sol), both required lenses reviewed, a full round.
    for node_id, kind in (("premise", "premise"), ("sq", "story-question"), ("ch1", "chapter")):
        api(sol, f"/books/{book.pk}/loop/trace/nodes", {"node_id": node_id, "kind": kind})  # signed by Sol
    for a, b in (("premise", "sq"), ("sq", "ch1")):
        api(sol, f"/books/{book.pk}/loop/trace/edges", {"from_id": a, "to_id": b})
    finding = [{"text": "the wreck is a fair clue", "resolution": "resolved", "reason": "planted in chapter 1"}]
    api(terra, f"/books/{book.pk}/loop/reviews", {"lens": "canon-integrity", "gate": "G2", "findings": finding})
    api(luna, f"/books/{book.pk}/loop/reviews", {"lens": "reader-trust", "gate": "G2", "findings": finding})
    api(sol, f"/books/{book.pk}/loop/rounds", {})
    gate_in_the_browser("G2")
    brief = {
        "success_metrics": ["the wreck is deducible by chapter 10"],
        "chapter_1": "The pilot's boat comes in empty.",
    }
    api(sol, f"/books/{book.pk}/loop/artifacts", {"slug": "decision-brief", "type": "decision-brief", "content": brief})
    gate_in_the_browser("G3", artifacts=["decision-brief"])

    assert LoopMeta.objects.get(book=book).status == "handed-off"
    assert list(Chapter.objects.filter(book=book).values_list("number", "spec")) == [
        (1, "The pilot's boat comes in empty.")
    ]
    # The book page says where she is: handed off, drafting starts at Chapter 1.
    page.goto(f"/books/{book.pk}/")
    handoff = page.get_by_test_id("handoff")
    assert "Drafting starts at Chapter 1" in handoff.inner_text()
    assert "The pilot's boat comes in empty." in handoff.inner_text()
    assert_no_serious_axe_violations(page)
    screenshot(page, "new-author-handoff")
    page.get_by_role("navigation", name="This book").get_by_role("link", name="Loop").click()
    page.wait_for_url(f"**/books/{book.pk}/loop/")
    assert page.locator(".loop-status").inner_text() == "Handed off to drafting"
    assert_accessible_basics(page)
    check_phone(page)
    # Canon as a place: in the codex she supersedes the claim with a rationale; the old value stays as history.
    page.goto(f"/books/{book.pk}/codex/")
    assert_accessible_basics(page)
    page.get_by_text("Supersede", exact=False).first.click()
    # The supersede form (the codex also holds "State a fact", with its own rationale).
    supersede = page.locator("form").filter(has=page.get_by_role("button", name="Supersede with this value")).first
    supersede.get_by_label("New value (required)").fill("the harbour pilot's widow")
    supersede.get_by_label("Rationale (required)").fill("The pilot drowned before the book begins.")
    supersede.get_by_role("button", name="Supersede with this value").click()
    page.get_by_test_id("claim-history").wait_for()
    assert "the harbour pilot" in page.get_by_test_id("claim-history").inner_text()
    assert KnowledgeClaim.objects.get(pk=claim["id"]).status == "revised"
    assert_accessible_basics(page)
    page.evaluate("() => window.scrollTo(0, 0)")
    screenshot(page, "new-author-codex")
    check_phone(page)
    # Its history is one click away: both versions, each decision with its rationale and its log entry.
    revision = KnowledgeClaim.objects.get(revises_id=claim["id"])
    page.locator(f"#claim-{revision.pk}").get_by_test_id("claim-history-link").click()
    page.wait_for_url(f"**/books/{book.pk}/codex/claims/*/")
    versions = page.get_by_test_id("claim-versions")
    assert versions.locator(".claim-version").count() == 2
    assert "the harbour pilot's widow" in page.get_by_test_id("canon-now").inner_text()
    rationales = page.get_by_test_id("decision-rationale").all_inner_texts()
    assert "The pilot drowned before the book begins." in rationales and len(rationales) == 2
    assert versions.get_by_role("link", name="Decision log entry").count() == 2
    assert_accessible_basics(page)
    check_phone(page)
    versions.get_by_role("link", name="Decision log entry").last.click()
    page.wait_for_url(re.compile(rf".*/review/books/{book.pk}/log/\?entry=\d+#entry-\d+$"))
    assert page.locator(f"#entry-{page.url.rsplit('#entry-', 1)[-1]}").is_visible()
    page.goto(f"/review/books/{book.pk}/log/")
    assert page.get_by_test_id("log-badge").inner_text() == "verified"
    assert_no_serious_axe_violations(page)
    assert page.js_errors == []


def test_the_editors_day_reads_and_writes_turns_but_decides_nothing(page, seeded):
    author = UserFactory(username="nadia")
    editor = UserFactory(username="ed")
    book = Book.objects.create(owner=author, title="The Pilot's Daughter", slug="pilots-daughter", genre_pack="mystery")
    book.editors.add(editor)
    key = api_key_create(owner=author, role="author")[1]
    api(key, f"/books/{book.pk}/discovery", {})
    log_in(page, "ed", PASSWORD)
    page.get_by_role("link", name="The Pilot's Daughter").click()
    assert "You are the editor" in page.locator(".page-head").inner_text()
    assert page.get_by_role("button", name="Start the discovery").count() == 0
    page.get_by_label("Answer with a turn").fill("The father is the obvious suspect: too obvious?")
    page.get_by_role("button", name="Answer", exact=True).click()
    page.wait_for_url("**/books/*/#turn-*")
    page.get_by_text("The father is the obvious suspect: too obvious?").wait_for()
    page.get_by_role("navigation", name="This book").get_by_role("link", name="People").click()
    assert page.get_by_role("button", name="Add as editor").count() == 0
    page.get_by_role("navigation", name="This book").get_by_role("link", name="Loop").click()
    assert_accessible_basics(page)
    check_phone(page)
    # At phone width the main navigation collapses behind the Menu button.
    page.set_viewport_size({"width": 390, "height": 844})
    main_nav = page.get_by_role("navigation", name="Main")
    assert not main_nav.is_visible()
    page.get_by_role("button", name="Menu").click()
    main_nav.get_by_role("link", name="Library").wait_for()
    assert page.get_by_role("button", name="Menu").get_attribute("aria-expanded") == "true"
    assert_fits_phone_width(page)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/books/{book.pk}/charters/new/")
    assert page.get_by_test_id("read-only").is_visible()
    assert page.get_by_role("button", name="Propose this version").count() == 0
    assert page.js_errors == []


def test_the_loop_pictures_stay_legible_at_phone_width_and_the_composer_is_one_tap_away(page, seeded):
    from io import StringIO

    from django.core.management import call_command

    call_command("demo", stdout=StringIO())
    book = Book.objects.get(title="The Lighthouse Letter")
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, "author", "novelgraph-author")
    page.goto(f"/books/{book.pk}/loop/")
    assert_fits_phone_width(page)
    label = page.locator("section[aria-labelledby=plan-h] svg .loop-label").first
    height = label.evaluate("(el) => el.getBoundingClientRect().height")
    assert height >= 10, f"plan-tree text is {height:.1f}px tall at phone width"
    assert_accessible_basics(page)
    page.goto(f"/books/{book.pk}/scratchpad/")
    page.get_by_role("link", name="Write your next turn").click()
    composer = page.get_by_label("Your turn")
    composer.wait_for()
    assert composer.evaluate(
        "(el) => { const r = el.getBoundingClientRect(); return r.top >= 0 && r.top < innerHeight; }"
    )


def test_a_verdict_that_discards_work_asks_first_and_a_gate_card_reads_plainly(page, seeded):
    author = UserFactory(username="nadia")
    book = Book.objects.create(owner=author, title="The Pilot's Daughter", slug="pilots-daughter-2")
    own = api_key_create(owner=author, role="author")[1]
    sol = api_key_create(owner=author, role="sol")[1]
    api(own, f"/books/{book.pk}/discovery", {})
    card = api(
        sol,
        f"/books/{book.pk}/loop/gates/G0/request",
        {
            "summary": "the value seed holds",
            "decisions_requested": ["ratify the seed"],
            "recommended": "approve",
            "reversibility_class": "reversible",
        },
    )
    log_in(page, "nadia", PASSWORD)
    page.goto(f"/review/{card['approval_id']}/")
    assert page.get_by_test_id("subject").inner_text() == "the book's reason to exist holds"
    fields = page.get_by_test_id("card-fields").inner_text()
    assert "Decisions requested" in fields and "ratify the seed" in fields and "{" not in fields
    assert page.get_by_test_id("verdict-help").locator("dt").count() == 7
    assert_accessible_basics(page)
    check_phone(page)

    page.get_by_label("Verdict").select_option("abandon")
    page.get_by_label("Rationale (required)").fill("Not this seed.")
    asked = []

    def dismiss(dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.get_by_role("button", name="Record the decision").click()
    assert asked and asked[0].startswith("abandon:")
    # It asks with the impact preview the page shows: what abandoning would change.
    preview = page.get_by_test_id("abandon-preview").inner_text()
    assert "is abandoned" in preview and preview.split("\n")[-1] in asked[0]
    assert Approval.objects.get(pk=card["approval_id"]).status == "pending", "dismissed: nothing recorded"

    page.get_by_label("Verdict").select_option("approve")
    page.get_by_role("button", name="Record the decision").click()  # approve asks nothing
    page.locator("[data-testid=log-entry]").wait_for()
    assert Approval.objects.get(pk=card["approval_id"]).verdict == "approve"
    assert page.js_errors == []
