"""Dossier assembly: queries that do not grow with the data, and time against reading and serialising the
same rows with bare SQL.

A book with N approved claims across its bases, scratchpad entries and observations (issue 8: 5,000 claims,
2,000 entries, 500 observations), and a second book with 4N of each. The SQL statement count of
``dossier_content`` and ``dossier_create`` (counted by the database's own trace, ``tests.sqltrace``) must be the
same for both. The floor reads the same rows with the same seven statements on the DB-API cursor, builds the
same dossier (the bench checks it is equal to ours) and encodes it with ``json.dumps``; ours is
``dossier_content`` plus the same ``json.dumps``. Interleaved rounds, alternating which goes first.

    python -m bench.bench_dossier --claims 5000 --scratchpad 2000 --observations 500
"""

from __future__ import annotations

import json
import uuid

from bench import common

SIZES = {
    "small": {"claims": 1_250, "scratchpad": 500, "observations": 125, "repeat": 7},
    "medium": {"claims": 2_500, "scratchpad": 1_000, "observations": 250, "repeat": 7},
    "large": {"claims": 5_000, "scratchpad": 2_000, "observations": 500, "repeat": 9},
}


class RawDossier:
    """The floor: the dossier of ``dossier_content`` read with bare SQL on the DB-API connection."""

    def __init__(self, vendor: str):
        self.sqlite = vendor == "sqlite"
        self.p = "?" if self.sqlite else "%s"

    def key(self, value):
        """A UUID as the database stores it (SQLite: 32 hex characters)."""
        return value.hex if self.sqlite else value

    def text(self, value) -> str | None:
        if value is None:
            return None
        if isinstance(value, uuid.UUID):
            return str(value)
        return f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"

    def decoded(self, value):
        # JSON columns arrive as text: SQLite's, and PostgreSQL's jsonb as Django's connection loads it.
        return json.loads(value) if isinstance(value, str) else value

    def iso(self, value) -> str | None:
        if value is None:
            return None
        if value.tzinfo is None:  # SQLite, through Django's converters: naive UTC
            return value.isoformat() + "+00:00"
        return value.isoformat()

    def build(self, cursor, *, book, session, agent_role: str) -> dict:
        from discovery.access import Cap, capabilities_of
        from discovery.selectors import DOSSIER_PAGE, SCOPE_READ_CAP, SCOPE_WITHHELD_LABEL, dossier_more_links

        limit = DOSSIER_PAGE
        more = {"claims": False, "scratchpad": False, "observations": False}

        def capped(name: str, items: list) -> list:
            more[name] = len(items) > limit
            return items[:limit]

        p, key, text, decoded = self.p, self.key, self.text, self.decoded
        caps = capabilities_of(agent_role)
        book_key = key(book.pk)

        def rows(sql: str, params) -> list[tuple]:
            cursor.execute(sql, params)
            return cursor.fetchall()

        charter = None
        if Cap.DISCOVERY_READ in caps:
            found = rows(
                "SELECT id, version, content, approval_id, source_refs FROM discovery_storycharter"
                f" WHERE book_id = {p} AND status = 'approved' ORDER BY version DESC LIMIT 1",
                (book_key,),
            )
            if found:
                pk, version, content, approval_id, refs = found[0]
                charter = {
                    "id": text(pk),
                    "version": version,
                    "content": decoded(content),
                    "approval_id": str(text(approval_id)),
                    "source_refs": decoded(refs),
                }
        sessions = [
            str(text(r[0])) for r in rows(f"SELECT id FROM discovery_discoverysession WHERE book_id = {p}", (book_key,))
        ]
        bases: dict[str, dict] = {}
        for pk, name, scope, owner_id, relation in rows(
            "SELECT b.id, b.name, b.scope, b.owner_id, l.relation FROM discovery_knowledgelink l"
            f" JOIN discovery_knowledgebase b ON b.id = l.base_id WHERE l.book_id = {p} ORDER BY b.scope, b.name",
            (book_key,),
        ):
            bases.setdefault(
                text(pk), {"id": text(pk), "name": name, "scope": scope, "owner_id": owner_id, "relation": relation}
            )
        run_owners = ", ".join([p] * len(sessions)) or "NULL"
        for pk, name, scope, owner_id in rows(
            "SELECT id, name, scope, owner_id FROM discovery_knowledgebase"
            f" WHERE (scope = 'book' AND owner_id = {p}) OR (scope = 'run' AND owner_id IN ({run_owners}))"
            " ORDER BY scope, name",
            (str(book.pk), *sessions),
        ):
            relation = "book-canon" if scope == "book" else "run"
            bases.setdefault(
                text(pk), {"id": text(pk), "name": name, "scope": scope, "owner_id": owner_id, "relation": relation}
            )
        given = [b for b in bases.values() if SCOPE_READ_CAP[b["scope"]] in caps]
        withheld = [
            f"{SCOPE_WITHHELD_LABEL[scope]} ({agent_role} lacks {SCOPE_READ_CAP[scope].value})"
            for scope in dict.fromkeys(b["scope"] for b in bases.values() if SCOPE_READ_CAP[b["scope"]] not in caps)
        ]
        if Cap.DISCOVERY_READ not in caps:
            withheld.insert(0, f"story charter ({agent_role} lacks {Cap.DISCOVERY_READ.value})")

        given_keys = [key(uuid.UUID(b["id"])) for b in given]
        claims = [
            {
                "id": text(pk),
                "base_id": text(base_id),
                "subject": subject,
                "predicate": predicate,
                "value": decoded(value),
                "provenance": provenance,
                "approval_id": str(text(approval_id)),
                "true_from_chapter": true_from,
                "true_until_chapter": true_until,
                "known_by": known_by,
                "known_by_characters": decoded(characters),
                "first_shown_chapter": first_shown,
                "decisive": bool(decisive),
                "evidence_for_id": text(evidence_for) if evidence_for else None,
                "reveal": reveal,
            }
            for (
                pk,
                base_id,
                subject,
                predicate,
                value,
                provenance,
                approval_id,
                true_from,
                true_until,
                known_by,
                characters,
                first_shown,
                decisive,
                evidence_for,
                reveal,
            ) in rows(
                "SELECT id, base_id, subject, predicate, value, provenance, approval_id, true_from_chapter,"
                " true_until_chapter, known_by, known_by_characters, first_shown_chapter, decisive, evidence_for_id,"
                " reveal FROM discovery_knowledgeclaim"
                f" WHERE base_id IN ({', '.join([p] * len(given_keys)) or 'NULL'}) AND status = 'approved'"
                f" ORDER BY created_at, id LIMIT {limit + 1}",
                given_keys,
            )
        ]
        claims = capped("claims", claims)
        scratchpad = []
        if session is not None and Cap.SCRATCHPAD_READ in caps:
            scratchpad = [
                {
                    "id": text(pk),
                    "session_id": text(session_id),
                    "sequence": sequence,
                    "agent_role": role,
                    "kind": kind,
                    "content": content,
                    "confidence": confidence,
                    "source_refs": decoded(refs),
                    "handoff_id": text(handoff_id),
                    "created_at": self.iso(created_at),
                }
                for pk, session_id, sequence, role, kind, content, confidence, refs, handoff_id, created_at in rows(
                    "SELECT e.id, e.session_id, e.sequence, e.agent_role, e.kind, e.content, e.confidence,"
                    " e.source_refs, e.handoff_id, e.created_at FROM discovery_scratchpadentry e"
                    " JOIN discovery_discoverysession s ON s.id = e.session_id"
                    f" WHERE s.book_id = {p} ORDER BY s.created_at, e.session_id, e.sequence LIMIT {limit + 1}",
                    (book_key,),
                )
            ]
            scratchpad = capped("scratchpad", scratchpad)
        elif Cap.SCRATCHPAD_READ not in caps:
            withheld.append(f"scratchpad ({agent_role} lacks {Cap.SCRATCHPAD_READ.value})")
        observations = []
        if Cap.DISCOVERY_READ in caps:
            observations = [
                {
                    "id": text(pk),
                    "session_id": text(session_id),
                    "turn_id": text(turn_id),
                    "key": obs_key,
                    "value": value,
                    "provenance": provenance,
                    "confidence": confidence,
                }
                for pk, session_id, turn_id, obs_key, value, provenance, confidence in rows(
                    "SELECT o.id, o.session_id, o.turn_id, o.key, o.value, o.provenance, o.confidence"
                    " FROM discovery_observation o JOIN discovery_discoverysession s ON s.id = o.session_id"
                    f" WHERE s.book_id = {p} AND o.status = 'working' ORDER BY o.created_at, o.id LIMIT {limit + 1}",
                    (book_key,),
                )
            ]
            observations = capped("observations", observations)
        # The author's constraints: the governing charter's, and every approve-with-constraint and steer in the log.
        approved = rows(
            "SELECT id, version, content, approval_id FROM discovery_storycharter"
            f" WHERE book_id = {p} AND status = 'approved' ORDER BY version DESC LIMIT 1",
            (book_key,),
        )
        governing = approved[0] if approved else None
        entries = rows(
            "SELECT sequence, decision, gate, subject_type, subject_id, approval_id, rationale, detail"
            f" FROM approvals_decisionlogentry WHERE book_id = {p}"
            f" AND (decision IN ('approve-with-constraint', 'redirect') OR approval_id = {p}) ORDER BY sequence",
            (book_key, key(governing[3]) if governing and governing[3] else None),
        )
        constraints = []
        if governing:
            charter_pk, version, content, approval_id = governing
            approval = str(text(approval_id)) if approval_id else None
            entry = next((e for e in entries if approval and e[5] and str(text(e[5])) == approval), None)
            for constraint in (decoded(content) or {}).get("constraints") or []:
                constraints.append(
                    {
                        "kind": "charter-constraint",
                        "text": constraint,
                        "decision": {
                            "what": f"Story charter v{version} approved",
                            "charter_id": str(text(charter_pk)),
                            "charter_version": version,
                            "approval_id": approval,
                            "sequence": entry[0] if entry else None,
                            "rationale": entry[6] if entry else None,
                        },
                    }
                )
        for sequence, decision, gate, subject_type, subject_id, approval_id, rationale, detail in entries:
            said = (
                (decoded(detail) or {}).get("constraint")
                if decision in ("approve-with-constraint", "redirect")
                else None
            )
            if not said:
                continue
            constraints.append(
                {
                    "kind": "constraint" if decision == "approve-with-constraint" else "steer",
                    "text": said,
                    "decision": {
                        "what": f"{decision} on {subject_type}" + (f" at {gate}" if gate else ""),
                        "verdict": decision,
                        "gate": gate,
                        "subject_type": subject_type,
                        "subject_id": subject_id,
                        "approval_id": str(text(approval_id)) if approval_id else None,
                        "sequence": sequence,
                        "rationale": rationale,
                    },
                }
            )
        return {
            "schema": "dossier/1",
            "author_constraints": constraints,
            "as_of_chapter": None,
            "book": {"id": str(book.pk), "title": book.title},
            "agent_role": agent_role,
            "session_id": str(session.pk) if session else None,
            "capabilities": sorted(c.value for c in caps),
            "charter": charter,
            "knowledge_bases": [{k: b[k] for k in ("id", "name", "scope", "relation")} for b in given],
            "claims": claims,
            "scratchpad": scratchpad,
            "observations": observations,
            "withheld": withheld,
            "limit": limit,
            "more": dossier_more_links(
                book_id=book.pk, session_id=session.pk if session else None, more=more, limit=limit
            ),
        }


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("Dossier assembly", args)
    vendor = common.setup_django("dossier")
    report = common.Report("dossier", args.size)

    from django.db import connection

    from bench.data import build_book
    from discovery.access import BookAccess, book_access
    from discovery.services.dossiers import dossier_content, dossier_create
    from novelgraph.core.auth import Principal
    from tests.sqltrace import sql_trace

    def author_of(bench_book) -> BookAccess:
        return book_access(Principal(user=bench_book.author), bench_book.book)

    text = common.ZipfText(common.SEED)
    books = {}
    for factor in (1, 4):
        start = common.now_ns()
        books[factor] = build_book(
            f"dossier-{factor}n",
            claims=args.claims * factor,
            scratchpad=args.scratchpad * factor,
            observations=args.observations * factor,
            text=text,
        )
        print(f"  built the {factor}N book in {(common.now_ns() - start) / 1e9:.1f}s")

    common.print_title(f"SQL statements per dossier on {vendor} (N = {args.claims} claims, the database's trace)")
    print(f"{'call':<46} {'at N':>8} {'at 4N':>8}")
    counts = {}
    for label, call in (
        ("dossier_content (assembly)", lambda b: dossier_content(book=b.book, session=b.session, agent_role="sol")),
        (
            "dossier_create (checks + assembly + store)",
            lambda b: dossier_create(access=author_of(b), agent_role="sol"),
        ),
    ):
        row = []
        for factor in (1, 4):
            with sql_trace() as trace:
                call(books[factor])
            row.append(len(trace))
        counts[label] = row
        print(f"{label:<46} {row[0]:>8} {row[1]:>8}")
    grows = {label: row for label, row in counts.items() if row[1] > row[0]}

    bench = books[1]
    content = dossier_content(book=bench.book, session=bench.session, agent_role="sol")
    sizes = {key: len(content[key]) for key in ("claims", "scratchpad", "observations")}
    print(f"  dossier at N: {sizes}, {len(json.dumps(content)) / 1e6:.2f} MB of JSON")
    access = author_of(bench)
    raw = RawDossier(vendor)
    connection.ensure_connection()
    cursor = connection.connection.cursor()

    def floor_once():
        return json.dumps(raw.build(cursor, book=bench.book, session=bench.session, agent_role="sol"))

    def ours_once():
        return json.dumps(dossier_content(book=bench.book, session=bench.session, agent_role="sol"))

    same = json.loads(floor_once()) == json.loads(ours_once())
    print(f"  the floor builds the same dossier as ours: {same}")

    assemble = common.Samples("dossier_content + json.dumps (ours)")
    create = common.Samples("dossier_create (+ checks + store)")
    floor = common.Samples("floor: raw SQL read + json.dumps")
    pairs = [
        (floor, lambda _: floor_once()),
        (assemble, lambda _: ours_once()),
        (create, lambda _: dossier_create(access=access, agent_role="sol")),
    ]
    for round_no in range(args.repeat):  # interleaved, the order reversed every other round
        common.interleaved(pairs if round_no % 2 == 0 else pairs[::-1], [None], rounds=1)
    common.print_title(f"dossier at N on {vendor}, {args.repeat} interleaved rounds")
    common.print_timings([floor, assemble, create], floor)

    report.figures.update(
        {
            "vendor": vendor,
            "n": {"claims": args.claims, "scratchpad": args.scratchpad, "observations": args.observations},
            "queries": counts,
            "floor_median_ms": floor.median_ms,
            "assemble_median_ms": assemble.median_ms,
            "create_median_ms": create.median_ms,
            "assemble_ratio": assemble.median_ms / floor.median_ms,
            "create_ratio": create.median_ms / floor.median_ms,
        }
    )
    report.ratio("dossier_content + json.dumps vs raw SQL read + json.dumps", common.round_ratios(assemble, floor))
    report.ratio(
        "dossier_create (checks, assembly, store) vs raw SQL read + json.dumps", common.round_ratios(create, floor)
    )
    if not same:
        report.note("the floor's dossier differs from ours: the ratio compares different work")
    for label, (at_n, at_4n) in counts.items():
        report.bar(f"{label}: queries at 4N minus at N ({at_n} -> {at_4n})", at_4n - at_n, 0, unit="")
    report.note(
        f"assembly {assemble.median_ms:.1f} ms = {assemble.median_ms / floor.median_ms:.1f}x reading the rows with "
        f"bare SQL and json.dumps ({floor.median_ms:.1f} ms); stored {create.median_ms:.1f} ms"
    )
    if grows:
        report.note(f"query count grows with the data: {grows}")
    report.save()
    return report


if __name__ == "__main__":
    main()
