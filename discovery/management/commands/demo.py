"""`python manage.py demo`: a local author, an editor, and a mystery in mid-discovery.

Everything is made through the same services the API and the pages call, acting as
the author (a person) or as Sol, Terra and Luna (agent principals of the author's
keys). Running it twice duplicates nothing: the scene is keyed on the author's
username and the book's title, and it is written in one transaction, so it either
exists whole or not at all.
"""

from __future__ import annotations

import os
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from approvals.services import approval_decide
from discovery.access import BookAccess, book_access
from discovery.management.commands.ensure_local_author import local_url
from discovery.models import Book, Series
from discovery.schemas import BookIn, CharterIn, ClaimIn, EntryIn, ObservationResolveIn, SeriesIn, ThrustIn, TurnIn
from discovery.services import (
    book_agents_act_set,
    book_create,
    charter_propose,
    claim_decide,
    claim_propose,
    claim_request_approval,
    claim_target,
    discovery_start,
    dossier_create,
    observation_resolve,
    scratchpad_append,
    series_create,
    thrust_propose,
    turn_add,
)
from library.models import KnowledgeChunk
from library.schemas import ResearchIn
from library.services import research_decide, research_propose
from novelgraph.core.auth import Principal

SERIES_TITLE = "The Drowned Coast Mysteries"
BOOK_TITLE = "The Lighthouse Letter"
PREMISE = (
    "A lighthouse keeper on a drowning coast finds a letter addressed to her future self, in her own "
    "handwriting, describing a murder that has not happened yet."
)


def _user(username: str, password: str, *, staff: bool) -> tuple[Any, bool]:
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults={"is_staff": staff, "is_superuser": staff})
    if created:
        user.set_password(password)
        user.save()
    return user, created


def _ref(kind: str, obj: Any) -> dict:
    return {"type": kind, "id": str(obj.pk)}


class Command(BaseCommand):
    help = "Create the demo: a local author and an editor, a series, and a mystery book in mid-discovery."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--if-empty",
            action="store_true",
            help="Only when the database has no books other than the demo (what `make run` uses).",
        )

    def handle(self, *args, **options) -> None:
        if options["if_empty"] and Book.objects.exclude(title=BOOK_TITLE).exists():
            self.stdout.write(
                "The database already has books; the demo was not loaded (run `manage.py demo` to add it)."
            )
            return
        author_name = os.environ.get("NOVELGRAPH_LOCAL_USER", "author")
        author_password = os.environ.get("NOVELGRAPH_LOCAL_PASSWORD", "novelgraph-author")
        editor_name = os.environ.get("NOVELGRAPH_DEMO_EDITOR", "editor")
        editor_password = os.environ.get("NOVELGRAPH_DEMO_EDITOR_PASSWORD", "novelgraph-editor")
        with transaction.atomic():
            author, _ = _user(author_name, author_password, staff=False)
            editor, _ = _user(editor_name, editor_password, staff=False)
            book = Book.objects.filter(owner=author, title=BOOK_TITLE).first()
            if book is None:
                book = self.build(author, editor)
                self.stdout.write(self.style.SUCCESS(f"Created the demo book {BOOK_TITLE!r}."))
            else:
                self.stdout.write(f"The demo book {BOOK_TITLE!r} already exists; nothing duplicated.")
        self.stdout.write(f"Book page: {local_url()}/books/{book.pk}/")
        for who, user, password in (("author", author, author_password), ("editor", editor, editor_password)):
            shown = password if user.check_password(password) else "(the password you set)"
            self.stdout.write(f"Log in at {local_url()}/login/ as the {who}: {user.get_username()} / {shown}")

    # --- The scene -----------------------------------------------------------

    def build(self, author, editor) -> Book:
        person = Principal(user=author)
        series = Series.objects.filter(owner=author, title=SERIES_TITLE).first() or series_create(
            principal=person,
            payload=SeriesIn(
                title=SERIES_TITLE,
                premise=(
                    "Cases from a coast the sea is slowly taking back, each solved by someone who lives on its edge."
                ),
                publication_target="Three books, one a year from 2027",
            ),
        )
        book = book_create(
            principal=person,
            payload=BookIn(
                title=BOOK_TITLE, series_id=series.pk, premise=PREMISE, genre_pack="mystery", planned_order=1
            ),
        )
        book.editors.add(editor)
        # The author as herself, and Sol, Terra and Luna as her agent keys would act on this book.
        me, sol, terra, luna = (
            book_access(Principal(user=author, key_role=role), book) for role in ("author", "sol", "terra", "luna")
        )
        # The scene is scripted: Sol does not take his own steps while it is written (he does once it is there).
        book_agents_act_set(access=me, on=False)
        session, _ = discovery_start(access=me)

        def turn(who: BookAccess, **fields):
            return turn_add(access=who, session=session, payload=TurnIn(**fields))

        # The conversation: the author answers the opening question, Sol follows up.
        t1 = turn(
            me,
            role="author",
            content=(
                "I want the reader to close the book uneasy about how much she trusted the narrator, "
                "and certain that every clue was on the page."
            ),
            observations=[
                {
                    "key": "reader-aftertaste",
                    "value": "unease about trusting the narrator",
                    "provenance": "author-stated",
                },
                {
                    "key": "genre-promise",
                    "value": "fair-play clues",
                    "provenance": "author-stated",
                },
            ],
        )
        # Every observation enters as working; the author confirms this one herself (a revision records it).
        observation_resolve(
            access=me,
            observation=t1.observations.get(key="genre-promise"),
            payload=ObservationResolveIn(action="confirm", rationale="The book promises fair play."),
        )
        t2 = turn(
            sol,
            role="sol",
            content="Who wrote the letter: Mara herself, or someone who can imitate her hand?",
            observations=[
                {
                    "key": "letter-author",
                    "value": "undecided between Mara and a forger",
                    "provenance": "agent-inferred",
                    "confidence": 0.4,
                }
            ],
        )
        t3 = turn(
            me,
            role="author",
            content="Her sister Ines forged it, years ago, to warn her. Ines drowned the winter after.",
            observations=[
                {"key": "forger", "value": "Ines, Mara's sister", "provenance": "author-stated"},
                {"key": "ines-fate", "value": "drowned the following winter", "provenance": "author-stated"},
            ],
        )

        # The curated passage the tour opens from the scratchpad.
        fair_play = KnowledgeChunk.objects.filter(citation="Fair-play mystery").first()

        # The scratchpad: every kind from each of Sol, Terra and Luna, citing what moved them.
        def note(who: BookAccess, kind: str, content: str, refs: list[dict], confidence: float | None = None):
            payload = EntryIn(kind=kind, content=content, confidence=confidence, source_refs=refs)
            return scratchpad_append(access=who, session=session, payload=payload)

        l_obs = note(
            luna, "observation", "The author names two people: Mara (narrator) and Ines (sister).", [_ref("turn", t3)]
        )
        l_q = note(
            luna, "question", "Does Mara know the handwriting is not hers?", [_ref("turn", t2), _ref("turn", t3)]
        )
        l_hyp = note(
            luna,
            "hypothesis",
            "The letter's date may be the clue that it was written earlier.",
            [_ref("entry", l_obs)],
            0.5,
        )
        l_con = note(
            luna,
            "contradiction",
            "Turn 1 wants an unreliable narrator; turn 3 makes Mara the victim of a forgery, not a liar.",
            [_ref("turn", t1), _ref("turn", t3)],
        )
        l_alt = note(
            luna,
            "alternative",
            "Mara forged it herself during a blackout she does not remember.",
            [_ref("entry", l_con)],
            0.2,
        )
        note(
            luna,
            "digest",
            "Luna so far: two people, one open question on the handwriting, one contradiction "
            "(and the blackout alternative it raised).",
            [_ref("entry", l_obs), _ref("entry", l_q), _ref("entry", l_con), _ref("entry", l_alt)],
        )
        t_obs = note(
            terra, "observation", "The clue economy rests on handwriting, tides and the lamp log.", [_ref("turn", t1)]
        )
        t_hyp = note(
            terra,
            "hypothesis",
            "The engine is Mara's need to be believed against her habit of hiding what she saw.",
            [_ref("turn", t1), _ref("entry", l_con)] + ([_ref("chunk", fair_play)] if fair_play else []),
            0.7,
        )
        note(terra, "question", "Should the reader learn Ines is dead before Mara does?", [_ref("turn", t3)])
        t_con = note(
            terra,
            "contradiction",
            "A fair-play solution needs the forger visible early; Ines is dead before chapter 1.",
            [_ref("entry", t_hyp), _ref("turn", t3)],
        )
        t_alt = note(
            terra, "alternative", "Tell it in two timelines: Ines writing, Mara reading.", [_ref("entry", t_con)], 0.45
        )
        note(
            terra,
            "digest",
            "Terra: engine found, one structural contradiction, one alternative form.",
            [_ref("entry", t_obs), _ref("entry", t_hyp), _ref("entry", t_con), _ref("entry", t_alt)],
        )
        s_obs = note(
            sol,
            "observation",
            "The author has settled who forged the letter; the why is open.",
            [_ref("turn", t3), _ref("entry", l_q)],
        )
        note(
            sol,
            "hypothesis",
            "Ines forged it because she foresaw a murder she could not prevent.",
            [_ref("entry", s_obs)],
            0.55,
        )
        s_q = note(sol, "question", "Which ending should remain: justice, or only the truth?", [_ref("entry", t_con)])
        note(
            sol,
            "contradiction",
            "Luna's blackout alternative and the author's Ines answer cannot both hold.",
            [_ref("entry", l_alt), _ref("turn", t3)],
        )
        note(
            sol,
            "alternative",
            "Keep the blackout as a red herring the reader can disprove from the lamp log.",
            [_ref("entry", l_alt)],
        )
        note(
            sol,
            "digest",
            "Sol's next question for the author: the ending's shape.",
            [_ref("entry", s_obs), _ref("entry", s_q), _ref("entry", l_hyp)],
        )

        # Thrust candidates from Terra (the session becomes charter-proposed).
        thrust_common = {
            "character_engine": "Mara's need to be believed against her habit of hiding what she saw.",
            "central_conflict": "The harbour master wants the drowning closed as an accident.",
        }
        thrust_propose(
            access=terra,
            session=session,
            payload=ThrustIn(
                **{
                    "kind": "core",
                    "title": "The letter is a warning",
                    "main_thrust": "Mara must prevent the murder the letter describes before the spring tide.",
                    "reader_promise": ["a fair-play puzzle", "a race against the tide"],
                    "risks": ["the forgery reveal could feel like a cheat"],
                    **thrust_common,
                }
            ),
        )
        thrust_propose(
            access=terra,
            session=session,
            payload=ThrustIn(
                **{
                    "kind": "stretch",
                    "title": "Two timelines",
                    "main_thrust": "Ines writing the letter and Mara reading it, converging on one night.",
                    "reader_promise": ["dramatic irony", "a double reveal"],
                    **thrust_common,
                }
            ),
        )
        thrust_propose(
            access=terra,
            session=session,
            payload=ThrustIn(
                **{
                    "kind": "wild",
                    "title": "The keeper is the murderer",
                    "main_thrust": "Mara discovers the letter describes a murder she will commit.",
                    "reader_promise": ["a devastating twist"],
                    "forecloses": ["a sequel with Mara as detective"],
                    **thrust_common,
                }
            ),
        )

        def claim(who: BookAccess, **fields):
            access, base = claim_target(who.principal, fields["scope"], fields["scope_id"])
            return claim_propose(access=access, base=base, payload=ClaimIn(**fields))

        # Claims: one series canon (Sol asks for its promotion), book canon, and an approved one.
        series_claim = claim(
            sol,
            scope="series",
            scope_id=str(series.pk),
            subject="The drowned coast",
            predicate="loses",
            value="a metre of shoreline every winter",
            provenance="agent-proposed",
            source_refs=[_ref("entry", t_obs)],
        )
        claim_request_approval(
            access=sol,
            claim_id=series_claim.pk,
            note="Series canon: every book's geography depends on it.",
        )
        claim(
            sol,
            scope="book",
            scope_id=str(book.pk),
            subject="Ines",
            predicate="motive for the letter",
            value="she foresaw a murder she could not prevent",
            provenance="agent-inferred",
            source_refs=[_ref("turn", t3)],
        )
        forger = claim(
            me,
            scope="book",
            scope_id=str(book.pk),
            subject="The letter",
            predicate="was forged by",
            value="Ines, Mara's sister",
            provenance="author-stated",
            source_refs=[_ref("turn", t3)],
            # The story record: true from the start, known only to Ines, revealed as the solution in chapter 12.
            true_from_chapter=1,
            known_by="characters",
            known_by_characters=["Ines"],
            first_shown_chapter=12,
            reveal="solution",
        )
        claim_decide(
            access=me,
            claim_id=forger.pk,
            approve=True,
            rationale="I said so in turn 3; it is the spine of the book.",
        )
        # The letter the reader sees from chapter 1, and the handwriting clue that plays fair:
        # decisive evidence for the solution, first shown in chapter 4, long before the reveal.
        letter = claim(
            me,
            scope="book",
            scope_id=str(book.pk),
            subject="The letter",
            predicate="is found by",
            value="Mara, in the lamp room, addressed to her future self",
            provenance="author-stated",
            source_refs=[_ref("turn", t1)],
            true_from_chapter=1,
            first_shown_chapter=1,
        )
        handwriting = claim(
            me,
            scope="book",
            scope_id=str(book.pk),
            subject="The letter's handwriting",
            predicate="slants",
            value="to the left, as Ines wrote; Mara writes upright",
            provenance="author-stated",
            source_refs=[_ref("turn", t3)],
            evidence={"kind": "documentary", "decisive": True},
            true_from_chapter=1,
            first_shown_chapter=4,
            decisive=True,
            evidence_for=forger.pk,
        )
        for story_claim, why in (
            (letter, "The letter is the book's first image."),
            (handwriting, "The clue the reader can use before the solution."),
        ):
            claim_decide(access=me, claim_id=story_claim.pk, approve=True, rationale=why)

        # Research: one admitted (a decision in the log), one pending.
        tides = research_propose(
            access=sol,
            payload=ResearchIn(
                url="https://tidesandcurrents.noaa.gov/",
                title="Spring tide heights on exposed coasts",
                claim="Spring tides run about 20% higher than mean high water on exposed coasts.",
                citation="NOAA Tides & Currents, tide predictions",
                excerpt="Spring tides occur near new and full moon, when the tidal range is greatest.",
            ),
        )
        research_decide(
            access=me,
            item=tides,
            verdict="approve",
            rationale="A primary source; the tide clock in act three depends on it.",
        )
        research_propose(
            access=luna,
            payload=ResearchIn(
                url="https://en.wikipedia.org/wiki/Lighthouse_keeper",
                title="Lighthouse keepers' logbooks",
                claim="Keepers logged the lamp's lighting and extinguishing times every night.",
                citation="Wikipedia, 'Lighthouse keeper'",
            ),
        )

        # Snapshots of what Sol and Luna were given (Luna gets no series canon).
        dossier_create(access=me, agent_role="sol")
        dossier_create(access=me, agent_role="luna")

        self.build_loop(book, me=me, sol=sol, terra=terra, luna=luna)

        # Last, Sol proposes the Story Charter: pending the author's decision.
        charter_propose(
            access=sol,
            payload=CharterIn(
                **{
                    "main_thrust": (
                        "Mara must prevent the murder her dead sister's letter describes before the spring tide."
                    ),
                    "reader_promise": ["a fair-play puzzle", "a race against the tide", "unease about the narrator"],
                    "protagonist": {"name": "Mara", "want": "to be believed", "need": "to stop hiding what she saw"},
                    "central_conflict": "The harbour master wants the drowning closed as an accident.",
                    "genre_contract": "Fair-play mystery: every clue on the page before the reveal.",
                    "ending_horizon": "The truth comes out; justice stays partial.",
                    "productive_unknowns": ["who the intended victim is"],
                    "rejected_directions": ["The keeper is the murderer (forecloses the series)"],
                    "source_refs": [_ref("turn", t1), _ref("turn", t3), _ref("entry", t_hyp)],
                }
            ),
        )
        book_agents_act_set(access=me, on=True)
        return book

    def build_loop(self, book: Book, *, me: BookAccess, sol: BookAccess, terra: BookAccess, luna: BookAccess) -> None:
        """The loop at G1.5: G0 ratified by the author, G1 passed by the controller, a plan-tree with
        candidates, open questions, and a traceability graph with exactly one orphan."""
        from discovery.loop.models import LoopMeta, PlanNode
        from discovery.loop.schemas import (
            CandidateIn,
            GateIn,
            NodeIn,
            QuestionIn,
            RouteIn,
            SelectIn,
            TraceEdgeIn,
            TraceNodeIn,
            TraceSettingsIn,
        )
        from discovery.loop.services import (
            candidate_add,
            candidate_select,
            gate_request,
            loop_ensure,
            plan_node_add,
            question_raise,
            question_route,
            trace_edge_add,
            trace_node_add,
            trace_settings,
        )

        loop_ensure(book=book)
        g0 = gate_request(
            access=sol,
            gate="G0",
            payload=GateIn(
                summary="Ratify the premise: why this book exists.",
                decisions_requested=["Is the premise the book's reason to exist?"],
                recommended="approve",
                reversibility_class="reversible",
            ),
        )
        approval_decide(
            access=me,
            approval_id=g0["approval_id"],
            verdict="approve",
            rationale="Yes: the letter is the book's reason to exist.",
        )
        gate_request(
            access=sol,
            gate="G1",
            payload=GateIn(
                summary="Genre and series fit: a fair-play mystery opening the Drowned Coast series.",
                decisions_requested=["Does the book fit the series and the genre?"],
                recommended="approve",
                reversibility_class="reversible",
            ),
        )

        root = PlanNode.objects.get(book=book, is_root=True)
        why = plan_node_add(
            access=sol,
            payload=NodeIn(parent_id=root.pk, intent="Why did Ines write the letter?", altitude="plotline"),
        )
        plan_node_add(
            access=sol,
            payload=NodeIn(
                parent_id=root.pk,
                intent="How does the reader see the forgery coming?",
                altitude="subplot",
                assumption="Readers notice handwriting details when primed once.",
                kill_condition="Two test readers miss the planted clue.",
                activity="Give chapter 2 to two readers.",
            ),
        )
        warning = candidate_add(
            access=terra,
            node_id=why.pk,
            payload=CandidateIn(
                altitude="plotline",
                mechanic="fair-play mystery",
                shape="A warning from the past, decoded clue by clue.",
                riskiest_assumption="Readers accept a letter predicting the future without the supernatural.",
            ),
        )
        candidate_add(
            access=terra,
            node_id=why.pk,
            payload=CandidateIn(
                altitude="book",
                mechanic="two timelines",
                shape="Ines's winter and Mara's spring, alternating.",
                riskiest_assumption="The second timeline does not give the solution away.",
            ),
        )
        candidate_add(
            access=luna,
            node_id=why.pk,
            payload=CandidateIn(
                altitude="plotline",
                mechanic="unreliable narrator",
                shape="Mara wrote it herself and forgot.",
                riskiest_assumption="The amnesia does not feel like a cheat.",
                rationale="Kept as a red herring.",
            ),
        )
        candidate_select(
            access=sol,
            node_id=why.pk,
            payload=SelectIn(
                candidate_id=warning.pk, rationale="Closest to the author's turn 3 and keeps the puzzle fair."
            ),
        )

        question_raise(
            access=luna,
            payload=QuestionIn(
                question="Is the tide table in chapter 9 consistent with the admitted research?",
                target_discipline="canon-integrity",
            ),
        )
        routed = question_raise(
            access=terra,
            payload=QuestionIn(
                question="Where does the reader first see Ines's handwriting?", target_discipline="reader-trust"
            ),
        )
        question_route(access=sol, question_id=routed.pk, payload=RouteIn(target_discipline="author"))

        # Traceability: premise -> story question -> engine -> arc -> chapter, plus one orphan.
        nodes = [
            ("premise", "premise", "The letter from the future"),
            ("story-question", "story-question", "Why did Ines write it?"),
            ("engine", "character-engine", "Mara's need to be believed"),
            ("arc-warning", "arc", "Decoding the warning"),
            ("clue-handwriting", "clue", "The slant of Ines's capitals"),
            ("chapter-1", "chapter", "Chapter 1: The Lamp Log"),
            ("subplot-harbour", "subplot", "The harbour master's debt"),  # no producer, no consumer: the orphan
        ]
        for node_id, kind, label in nodes:
            trace_node_add(
                access=sol, payload=TraceNodeIn(node_id=node_id, kind=kind, label=label, produced_by="sol")
            )
        trace_settings(access=sol, payload=TraceSettingsIn(root="premise", leaf_kind="chapter"))
        for source, target in [
            ("premise", "story-question"),
            ("story-question", "engine"),
            ("engine", "arc-warning"),
            ("arc-warning", "clue-handwriting"),
            ("clue-handwriting", "chapter-1"),
        ]:
            trace_edge_add(access=sol, payload=TraceEdgeIn(from_id=source, to_id=target))

        meta = LoopMeta.objects.get(book=book)
        if meta.gate != "G1.5":
            raise RuntimeError(f"the demo loop should stand at G1.5, not {meta.gate}")
