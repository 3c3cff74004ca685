"""Synthetic books for the benches: a book in mid-discovery with a chosen amount of everything.

Bulk rows (claims, scratchpad, observations, turns) are inserted with ``bulk_create``; what has rules
(pending approvals and their digests, decision-log entries) goes through the real services.
Call only after :func:`bench.common.setup_django`.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import timedelta

from bench import common


@dataclass
class BenchBook:
    book: object
    author: object
    session: object
    password: str


def build_book(
    label: str,
    *,
    claims: int = 0,
    scratchpad: int = 0,
    observations: int = 0,
    turns: int = 20,
    pending: int = 0,
    decisions: int = 0,
    thrusts: int = 0,
    charters: int = 1,
    research: int = 0,
    dossiers: int = 0,
    text: common.ZipfText | None = None,
) -> BenchBook:
    """A book owned by ``bench-<label>`` with a session, bases and the amounts asked for."""
    from django.db import transaction
    from django.utils import timezone

    from approvals.models import Approval, ApprovalKind, Verdict
    from approvals.services import approval_request, decision_log_append
    from discovery.models import (
        ContextDossier,
        DiscoverySession,
        KnowledgeBase,
        KnowledgeClaim,
        KnowledgeLink,
        Observation,
        ScratchpadEntry,
        StoryCharter,
        ThrustCandidate,
        Turn,
    )
    from library.models import ResearchItem
    from tests.factories import PASSWORD, BookFactory, SeriesFactory, UserFactory

    text = text or common.ZipfText(common.SEED)
    rng = random.Random(f"{common.SEED}-{label}")
    now = timezone.now()
    author = UserFactory(username=f"bench-{label}")
    series = SeriesFactory(owner=author, title=f"Series {label}")
    book = BookFactory(owner=author, series=series, title=f"Book {label}", slug=f"bench-{label}")

    def words(low: int, high: int) -> str:
        return text.paragraph(rng.randint(low, high))

    with transaction.atomic():
        session = DiscoverySession.objects.create(book=book)
        turn_rows = Turn.objects.bulk_create(
            [
                Turn(session=session, ordinal=i + 1, role="author" if i % 2 == 0 else "sol", content=words(20, 80))
                for i in range(max(turns, 1))
            ]
        )
        book_base = KnowledgeBase.objects.create(scope="book", owner_id=str(book.pk), name=f"{label} canon")
        series_base = KnowledgeBase.objects.create(scope="series", owner_id=str(series.pk), name=f"{label} series")
        run_base = KnowledgeBase.objects.create(scope="run", owner_id=str(session.pk), name=f"{label} run")
        KnowledgeLink.objects.create(book=book, base=series_base, relation="series-canon")
        literary = KnowledgeBase.objects.filter(scope="literary").first()
        if literary:
            KnowledgeLink.objects.get_or_create(book=book, base=literary, relation="literary-guidance")
        bases = [book_base] * 6 + [series_base] * 3 + [run_base]

        if claims:
            decided = Approval.objects.bulk_create(
                [
                    Approval(
                        book=book,
                        kind=ApprovalKind.CANON_PROMOTION,
                        subject_type="claim",
                        subject_id=str(uuid.uuid4()),
                        subject_digest="0" * 64,
                        summary=f"Canon batch {i}",
                        requested_by_role="sol",
                        status=Approval.Status.DECIDED,
                        verdict=Verdict.APPROVE,
                        rationale="Consistent with the charter.",
                        decided_by=author,
                        decided_at=now,
                    )
                    for i in range(max(1, claims // 25))
                ]
            )
            for approval in decided:  # a decided approval always has its log entry
                decision_log_append(
                    book=book,
                    decision=Verdict.APPROVE,
                    subject_type="claim",
                    subject_id=approval.subject_id,
                    rationale=approval.rationale,
                    ratified_by_user=author,
                    approval=approval,
                )
            made = KnowledgeClaim.objects.bulk_create(
                [
                    KnowledgeClaim(
                        base=bases[i % len(bases)],
                        subject=f"{text.words[(300 + i) % len(text.words)]} {i}",
                        predicate=rng.choice(("fears", "owns", "remembers", "hides", "wants")),
                        value={"text": words(4, 20), "weight": i % 7} if i % 3 else words(3, 12),
                        provenance="agent-proposed",
                        status=KnowledgeClaim.Status.APPROVED,
                        proposed_by="sol",
                        approval=decided[i % len(decided)],
                    )
                    for i in range(claims)
                ],
                batch_size=1000,
            )
            _log_canon(book, author, made)
        ScratchpadEntry.objects.bulk_create(
            [
                ScratchpadEntry(
                    id=uuid.UUID(int=rng.getrandbits(128), version=4),
                    session=session,
                    sequence=i + 1,
                    agent_role=("sol", "terra", "luna")[i % 3],
                    kind=("observation", "hypothesis", "question", "contradiction", "alternative")[i % 5],
                    content=words(10, 60),
                    confidence=round(rng.random(), 2),
                    source_refs=[],
                    created_at=now + timedelta(milliseconds=i),
                )
                for i in range(scratchpad)
            ],
            batch_size=1000,
        )
        Observation.objects.bulk_create(
            [
                Observation(
                    session=session,
                    turn=turn_rows[i % len(turn_rows)],
                    key=f"{text.words[(500 + i) % len(text.words)]}-{i}",
                    value=words(5, 30),
                    provenance="author-stated" if i % 2 else "agent-inferred",
                    confidence=round(rng.random(), 2),
                    status=Observation.Status.WORKING,
                )
                for i in range(observations)
            ],
            batch_size=1000,
        )
        ThrustCandidate.objects.bulk_create(
            [
                ThrustCandidate(
                    session=session,
                    proposed_by="terra",
                    kind=("core", "stretch", "wild")[i % 3],
                    title=f"Thrust {i}",
                    main_thrust=words(10, 30),
                    character_engine=words(10, 30),
                    central_conflict=words(10, 30),
                    reader_promise=[words(3, 8)],
                )
                for i in range(thrusts)
            ]
        )
        for version in range(1, charters + 1):
            StoryCharter.objects.create(
                book=book,
                session=session,
                version=version,
                status=StoryCharter.Status.SUPERSEDED if version < charters else StoryCharter.Status.PROPOSED,
                proposed_by="sol",
                content={"main_thrust": words(8, 20), "reader_promise": [words(3, 8)]},
            )
        ResearchItem.objects.bulk_create(
            [
                ResearchItem(
                    book=book,
                    proposed_by="terra",
                    url=f"https://example.org/research/{i}",
                    title=f"Research {i}",
                    excerpt=words(10, 40),
                    claim=words(5, 15),
                    citation=f"Almanac {i}",
                )
                for i in range(research)
            ]
        )
        ContextDossier.objects.bulk_create(
            [
                ContextDossier(
                    id=uuid.uuid4(),
                    book=book,
                    session=session,
                    agent_role=("sol", "terra", "luna")[i % 3],
                    content={"schema": "dossier/1", "note": words(5, 10)},
                    created_at=now + timedelta(seconds=i),
                )
                for i in range(dossiers)
            ]
        )

    if pending:
        proposed = KnowledgeClaim.objects.bulk_create(
            [
                KnowledgeClaim(
                    base=book_base,
                    subject=f"pending {i}",
                    predicate="suggests",
                    value=words(3, 10),
                    provenance="agent-proposed",
                    status=KnowledgeClaim.Status.PROPOSED,
                    proposed_by="sol",
                )
                for i in range(pending)
            ]
        )
        with transaction.atomic():
            for claim in proposed:
                approval_request(
                    book=book,
                    kind=ApprovalKind.CANON_PROMOTION,
                    subject_type="claim",
                    subject_id=claim.pk,
                    summary=f"Canon: {claim.subject} {claim.predicate}",
                    requested_by_role="sol",
                )
    if decisions:
        with transaction.atomic():
            for i in range(decisions):
                decision_log_append(
                    book=book,
                    decision=("approve", "reject", "park")[i % 3],
                    subject_type="claim",
                    subject_id=uuid.uuid4(),
                    rationale=words(5, 20),
                    ratified_by_user=author,
                )
    return BenchBook(book=book, author=author, session=session, password=PASSWORD)


def _log_canon(book, author, claims) -> None:
    """Each approved claim's approving log entry, with its canon record, chained by the recipe and bulk-inserted
    (verification checks every approved claim against the entry that approved it)."""
    from django.utils import timezone

    from approvals.canon_record import canon_digest
    from approvals.chain import GENESIS_HASH, chain_fields, current_key_id, entry_hash, entry_text, seal_of
    from approvals.models import DecisionLogEntry

    last = DecisionLogEntry.objects.filter(book=book).order_by("-sequence").values_list("sequence", "hash").first()
    sequence, prev_hash = last if last else (0, GENESIS_HASH)
    ts = timezone.now()
    rows = []
    for claim in claims:
        sequence += 1
        fields = {
            "base_id": str(claim.base_id),
            "subject": claim.subject,
            "predicate": claim.predicate,
            "value": claim.value,
            "provenance": claim.provenance,
            "evidence": claim.evidence,
            "source_refs": claim.source_refs,
        }
        recipe = chain_fields(
            book_id=book.pk,
            sequence=sequence,
            ts=ts,
            gate=None,
            decision="approve",
            subject_type="claim",
            subject_id=claim.pk,
            ratified_by=f"author:{author.get_username()}",
            reversibility_class="reversible",
            rationale="Consistent with the charter.",
            detail={"canon": {"digest": canon_digest(fields), "value": claim.value}},
            prev_hash=prev_hash,
        )
        digest = entry_hash(recipe)
        rows.append(
            DecisionLogEntry(
                book=book,
                entry=entry_text(recipe),
                ratified_by_user=author,
                approval=claim.approval,
                hash=digest,
                seal=seal_of(digest),
                seal_key_id=current_key_id(),
            )
        )
        prev_hash = digest
    DecisionLogEntry.objects.bulk_create(rows, batch_size=1000)
