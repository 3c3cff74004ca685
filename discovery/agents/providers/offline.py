"""The offline provider: deterministic rules over a run's context (its dossier and look-ups).

Nothing to install and no network. The same context always gives the same plan, so it is the
embedded default, the test oracle of the model provider's stub, and what the demo runs on.
Each rule is small and says why it acts; where it does nothing, it says so in a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .base import Reply

OFFLINE_MODEL = "rules-1"

# The Story Charter's fields, the observation keys that speak to each, and Sol's question for it.
CHARTER_FIELDS: list[tuple[str, str, tuple[str, ...], str]] = [
    (
        "main_thrust",
        "the main thrust",
        ("thrust", "spine", "core", "about", "premise"),
        "In one sentence, what is this book about at its core: the thing every chapter should serve?",
    ),
    (
        "protagonist",
        "the protagonist",
        ("protagonist", "hero", "heroine", "detective", "lead", "character", "narrator", "name"),
        "Who carries this story, and what do they want badly enough to act against their own interest?",
    ),
    (
        "central_conflict",
        "the central conflict",
        ("conflict", "antagonist", "villain", "opposition", "obstacle", "stakes", "culprit"),
        "What stands in the protagonist's way, and what is lost if they fail?",
    ),
    (
        "reader_promise",
        "the reader promise",
        ("promise", "aftertaste", "reader", "experience", "feeling", "emotion"),
        "What should the reader be promised on page one, and feel on the last page?",
    ),
    (
        "ending_horizon",
        "the ending",
        ("ending", "end", "resolution", "climax", "finale"),
        "How should the book end: what is resolved, and what is left open on purpose?",
    ),
    (
        "genre_contract",
        "the genre contract",
        ("genre", "convention", "conventions", "obligation", "obligations", "subgenre"),
        "Which genre promises must this book keep, and which will it bend?",
    ),
    (
        "thematic_questions",
        "the themes",
        ("theme", "themes", "thematic", "meaning", "moral"),
        "Which question about people should the book keep asking without answering too soon?",
    ),
    (
        "narrative_form",
        "the narrative form",
        ("form", "pov", "viewpoint", "tense", "structure", "voice", "narration"),
        "Whose eyes do we see through, and how is the story told: viewpoint, tense, structure?",
    ),
    (
        "constraints",
        "the constraints",
        ("constraint", "constraints", "must", "never", "rule", "rules", "limit"),
        "What must this book never do, and what is already fixed?",
    ),
]
FIELD_LABEL = {field: label for field, label, _, _ in CHARTER_FIELDS}
# What Luna searches the library for, per field (she searches these words one by one, so each
# hit records which of them it matched).
FIELD_TOPICS = {
    "main_thrust": "premise, structure and promise",
    "protagonist": "character agency and choice",
    "central_conflict": "conflict, stakes and causality",
    "reader_promise": "promise, payoff and reader expectations",
    "ending_horizon": "payoff, reveal and ending",
    "genre_contract": "genre conventions and reader expectations",
    "thematic_questions": "theme and meaning",
    "narrative_form": "structure, scene and pacing",
    "constraints": "conventions and trust",
}
# Charter fields whose absence from the confirmed observations is a productive unknown.
UNKNOWN_FIELDS = (
    "protagonist",
    "central_conflict",
    "reader_promise",
    "ending_horizon",
    "genre_contract",
    "thematic_questions",
    "narrative_form",
)
GENRE_PROMISES = {
    "mystery": ["a fair-play puzzle the reader can solve from the clues on the page"],
    "romance": ["a relationship the reader roots for, and an ending that honours it"],
    "thriller": ["rising danger with a clock the reader can hear"],
    "fantasy": ["a world with rules that matter, and a cost for breaking them"],
}
GENRE_OBLIGATIONS = {
    "mystery": ["every decisive clue is visible before the reveal", "the culprit appears early and plays fair"],
    "romance": ["the central relationship drives the plot", "an emotionally satisfying ending"],
    "thriller": ["stakes escalate", "the protagonist is in danger"],
}
GUIDANCE_DECISION = "Look in the library for guidance on {label} ({topics}) for this book."
THRUSTS_DECISION = "Draft thrust candidates (core, stretch, wild) from the premise and the observations so far."
CHARTER_DECISION = (
    "Draft a Story Charter version from the confirmed observations; list what is still unknown as productive unknowns."
)
CONTRADICTIONS_DECISION = "Compare the observations and proposed claims with the approved canon you may read."
MIN_CONFIRMED_FOR_CHARTER = 3


# --- Small text helpers ---------------------------------------------------------------------


def _norm(value) -> str:
    text = value if isinstance(value, str) else str(value)
    return " ".join(re.findall(r"\w+", text.lower()))


def _short(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join((text or "").split())) if s.strip()]


def _tokens(key: str) -> set[str]:
    return set(re.findall(r"[a-z]+", key.lower()))


def field_of(key: str) -> str | None:
    """The charter field an observation key speaks to, if any (first match in the field order)."""
    tokens = _tokens(key)
    for field, _, keywords, _ in CHARTER_FIELDS:
        if tokens & set(keywords):
            return field
    return None


def _by_field(observations: Iterable[dict]) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for obs in observations:
        field = field_of(obs.get("key", ""))
        if field:
            found.setdefault(field, []).append(obs)
    return found


def _ref(kind: str, ref_id) -> dict:
    return {"type": kind, "id": str(ref_id)}


def _author_turns(context: dict) -> list[dict]:
    return [t for t in context.get("turns") or [] if t["role"] == "author"]


# --- Sol: the next question, handoffs, approvals, the gate ------------------------------------


def _open_contradiction(context: dict) -> dict | None:
    """The earliest contradiction entry that no question has cited yet."""
    asked = {ref.get("id") for q in context.get("questions") or [] for ref in q.get("source_refs") or []}
    for entry in context["dossier"].get("scratchpad") or []:
        if entry["kind"] == "contradiction" and entry["id"] not in asked:
            return entry
    return None


def _answered(context: dict) -> bool:
    """The author has answered the current question (a turn of hers after it was asked)."""
    turns = _author_turns(context)
    if not turns:
        return False
    questions = context.get("questions") or []
    return not questions or turns[-1]["created_at"] > questions[-1]["created_at"]


def _sol_question(context: dict, notes: list[str]) -> tuple[dict | None, str | None]:
    """The next question and the charter field it is about (None for a contradiction)."""
    if not _answered(context):
        notes.append("The author has not answered the current question yet; Sol waits for her turn.")
        return None, None
    latest = _author_turns(context)[-1]
    contradiction = _open_contradiction(context)
    if contradiction is not None:
        question = (
            f"Luna found a contradiction: {_short(contradiction['content'], 600)} "
            "Which side should hold for this book, and why?"
        )
        notes.append(f"Asked about the open contradiction (entry #{contradiction['sequence']}).")
        return {
            "question": question,
            "source_refs": [_ref("entry", contradiction["id"]), _ref("turn", latest["id"])],
        }, None
    support = _by_field(context.get("confirmed_observations") or [])
    asked = {q["question"] for q in context.get("questions") or []} | {context.get("current_question") or ""}
    candidates = [f for f, _, _, question in CHARTER_FIELDS if question not in asked] or [f for f, *_ in CHARTER_FIELDS]
    field = min(candidates, key=lambda f: (len(support.get(f, [])), [c[0] for c in CHARTER_FIELDS].index(f)))
    label, question = next((lab, q) for f, lab, _, q in CHARTER_FIELDS if f == field)
    count = len(support.get(field, []))
    refs = [_ref("turn", latest["id"])] + [_ref("observation", o["id"]) for o in support.get(field, [])[:3]]
    notes.append(f"Asked about {label}: the charter field least supported by confirmed observations ({count}).")
    return {"question": question, "source_refs": refs}, field


def _has_handoff(context: dict, decision: str, *, open_only: bool = False, after: str | None = None) -> bool:
    for handoff in context.get("handoffs") or []:
        if handoff["decision"] != decision:
            continue
        if open_only and handoff["status"] != "open":
            continue
        if after and handoff["created_at"] < after:
            continue
        return True
    return False


def _handoff(task: str, to_role: str, decision: str, context: dict, question: str | None) -> dict:
    statements = []
    premise = context["book"].get("premise")
    if premise:
        statements.append({"text": _short(premise, 4_000), "status": "fact"})
    if question:
        statements.append({"text": question, "status": "question"})
    turns = _author_turns(context)
    sources = [_ref("turn", turns[-1]["id"])] if turns else []
    return {
        "task": task,
        "handoff": {"to_role": to_role, "decision": decision, "allowed_sources": sources, "statements": statements},
    }


def _sol_handoffs(context: dict, field: str | None, question: dict | None, notes: list[str]) -> list[dict]:
    handoffs: list[dict] = []
    turns = _author_turns(context)
    asked = question["question"] if question else None
    if field is not None:
        decision = GUIDANCE_DECISION.format(label=FIELD_LABEL[field], topics=FIELD_TOPICS[field])
        if not _has_handoff(context, decision):
            handoffs.append(_handoff("guidance", "luna", decision, context, asked))
            notes.append(f"Handed Luna a search of the library on {FIELD_LABEL[field]}.")
    thrusts = context.get("thrusts") or []
    if turns and not thrusts and not _has_handoff(context, THRUSTS_DECISION):
        handoffs.append(_handoff("thrusts", "terra", THRUSTS_DECISION, context, None))
        notes.append("Handed Terra the thrust candidates: none exist yet.")
    confirmed = context.get("confirmed_observations") or []
    charters = context.get("charters") or []
    pending = [c for c in charters if c["status"] == "proposed"]
    newest = max((o["created_at"] for o in confirmed), default="")
    if (
        thrusts
        and not pending
        and len(confirmed) >= MIN_CONFIRMED_FOR_CHARTER
        and (not charters or charters[-1]["created_at"] < newest)
        and not _has_handoff(context, CHARTER_DECISION, open_only=True)
    ):
        handoffs.append(_handoff("charter", "terra", CHARTER_DECISION, context, None))
        notes.append(f"Handed Terra a charter draft: {len(confirmed)} confirmed observations and no pending charter.")
    has_canon = bool(context["dossier"].get("claims"))
    has_material = bool(confirmed or context["dossier"].get("observations") or context.get("proposed_claims"))
    if (
        has_canon
        and has_material
        and turns
        and not _has_handoff(context, CONTRADICTIONS_DECISION, after=turns[-1]["created_at"])
    ):
        handoffs.append(_handoff("contradictions", "luna", CONTRADICTIONS_DECISION, context, None))
        notes.append("Handed Luna a comparison with approved canon: new material since the last check.")
    return handoffs[:3]


def _sol_approvals(context: dict, notes: list[str]) -> list[dict]:
    """Proposed claims that are ready: grounded in a source, not yet requested, named by no contradiction."""
    disputed = {
        ref.get("id")
        for entry in context["dossier"].get("scratchpad") or []
        if entry["kind"] == "contradiction"
        for ref in entry.get("source_refs") or []
    }
    asks = []
    for claim in context.get("proposed_claims") or []:
        typed = [r for r in claim.get("source_refs") or [] if r.get("type") != "other"]
        if claim["approval_requested"] or claim["id"] in disputed or not typed:
            continue
        asks.append(
            {
                "claim_id": claim["id"],
                "note": f"Grounded in {len(typed)} source(s); no contradiction names it.",
            }
        )
        notes.append(f"Asked the author to decide the claim '{claim['subject']} {claim['predicate']}'.")
    return asks[:10]


def _gate_ask(gate: str, summary: str, decision: str, recommended: str) -> dict:
    return {
        "gate": gate,
        "summary": _short(summary, 500),
        "decisions_requested": [_short(decision, 500)],
        "recommended": recommended,
        "reversibility_class": "reversible",
    }


def _sol_gate(context: dict, notes: list[str]) -> dict | None:
    """The current gate's card, when its preconditions hold."""
    loop = context.get("loop") or {}
    gate = loop.get("gate")
    if not gate:
        return None
    if loop.get("status") not in ("working", "converged") or loop.get("pending_card") or loop.get("reruns_queued"):
        notes.append(f"{gate} waits: the loop is {loop.get('status')} or a card or a re-run is pending.")
        return None
    book = context["book"]
    if gate == "G0":
        if not book.get("premise"):
            notes.append("G0 waits for a premise to ratify.")
            return None
        return _gate_ask(
            "G0", f"Ratify the premise as the value seed: {book['premise']}", "Is this why the book exists?", "approve"
        )
    if gate == "G1":
        fit = book.get("genre_pack") or "no genre pack yet"
        return _gate_ask("G1", f"Genre and series fit: {fit}", "Does the book fit its genre and series?", "approve")
    if gate == "G1.5":
        proposed = [t for t in context.get("thrusts") or [] if t["status"] == "proposed"]
        if len(proposed) < 2:
            notes.append("G1.5 waits for at least two thrust candidates to choose between.")
            return None
        core = next((t for t in proposed if t["kind"] == "core"), proposed[0])
        titles = "; ".join(t["title"] for t in proposed)
        return _gate_ask(
            "G1.5",
            f"Choose the story thrust this book carries: {titles}",
            "Which thrust does this book carry?",
            f"the core thrust, '{core['title']}'",
        )
    if gate == "G2":
        pending = [c for c in context.get("charters") or [] if c["status"] == "proposed"]
        if not pending:
            notes.append("G2 waits for a proposed Story Charter.")
            return None
        if loop.get("g2_reasons"):
            notes.append("G2 is not ready: " + "; ".join(loop["g2_reasons"]))
            return None
        charter = pending[-1]
        return _gate_ask(
            "G2",
            f"Ratify Story Charter v{charter['version']}: {charter['main_thrust']}",
            "Does this charter govern the book?",
            "approve",
        )
    notes.append(f"{gate} hands the book to drafting; Sol leaves that step to the author.")
    return None


def sol_next_question(context: dict) -> dict:
    notes: list[str] = []
    question, field = _sol_question(context, notes)
    return {
        "question": question,
        "handoffs": _sol_handoffs(context, field, question, notes),
        "approval_requests": _sol_approvals(context, notes),
        "gate": _sol_gate(context, notes),
        "notes": notes,
    }


# --- Luna: guidance from the library; contradictions with canon ----------------------------------


def _advice(content: str) -> str:
    sentences = _sentences(content)
    for sentence in sentences:
        if re.search(r"\b(should|must|needs?|give|make|keep|plan|check|track)\b", sentence, re.I):
            return sentence
    return sentences[0] if sentences else content


def luna_guidance(context: dict) -> dict:
    library = context.get("library") or {}
    hits = library.get("hits") or []
    title = context["book"]["title"]
    if not hits:
        words = ", ".join(library.get("query_words") or []) or "this question"
        return {
            "observations": [],
            "result": {
                "questions": [
                    {
                        "text": f"The library holds nothing on {words}. Should the author decide this without "
                        "guidance, or should staff add a source?"
                    }
                ]
            },
            "notes": [f"The library had nothing on {words}; Luna says so instead of guessing."],
        }
    used = hits[:3]
    observations = [
        {
            "kind": "observation",
            "content": _short(
                f"{hit['citation']} ({hit['source_title']}): {' '.join(_sentences(hit['content'])[:2])}", 1_500
            ),
            "source_refs": [_ref("chunk", hit["chunk_id"])],
            "provenance": "literary-guidance",
        }
        for hit in used
    ]
    facts = [
        {
            "text": f"'{hit['citation']}' bears on this ({', '.join(hit['matched'])}): {_sentences(hit['content'])[0]}",
            "source_refs": [_ref("chunk", hit["chunk_id"])],
        }
        for hit in used
    ]
    best = used[0]
    inferences = [
        {
            "text": f"For '{title}': {_advice(best['content'])}",
            "source_refs": [_ref("chunk", best["chunk_id"])],
        }
    ]
    questions = [
        {
            "text": "Which of these should govern the book: " + "; ".join(h["citation"] for h in used) + "?",
            "source_refs": [_ref("chunk", h["chunk_id"]) for h in used],
        }
    ]
    return {
        "observations": observations,
        "result": {"facts": facts, "inferences": inferences, "questions": questions},
        "notes": [f"Searched the library for: {', '.join(library.get('query_words') or [])}"],
    }


def _claim_text(claim: dict) -> str:
    value = claim["value"]
    shown = value if isinstance(value, str) else "; ".join(map(str, value)) if isinstance(value, list) else value
    return f"{claim['subject']} {claim['predicate']} {shown}"


def luna_contradictions(context: dict) -> dict:
    """Observations and proposed claims against the approved canon in the dossier (the bases the
    role may read: never series canon for Luna). A pair already named by an entry is not repeated."""
    canon = context["dossier"].get("claims") or []
    observations = (context.get("confirmed_observations") or []) + (context["dossier"].get("observations") or [])
    named = {
        frozenset(ref.get("id") for ref in entry.get("source_refs") or [])
        for entry in context["dossier"].get("scratchpad") or []
        if entry["kind"] == "contradiction"
    }
    found: list[dict] = []
    standing = 0

    def add(side: dict, side_type: str, side_text: str, claim: dict) -> None:
        nonlocal standing
        pair = frozenset({side["id"], claim["id"]})
        if pair in named:
            standing += 1
            return
        named.add(pair)
        found.append(
            {
                "kind": "contradiction",
                "content": _short(
                    f"{side_text} contradicts approved canon: {_claim_text(claim)}. Both cannot remain true as stated.",
                    2_000,
                ),
                "source_refs": [_ref(side_type, side["id"]), _ref("claim", claim["id"])],
                "confidence": 0.8,
            }
        )

    # Canon indexed by the names an observation key may use, and by (subject, predicate).
    by_name: dict[str, list[tuple[dict, str]]] = {}
    by_pair: dict[tuple[str, str], list[tuple[dict, str]]] = {}
    for claim in canon:
        subject, predicate, value = _norm(claim["subject"]), _norm(claim["predicate"]), _norm(claim["value"])
        for name in {predicate, subject, f"{subject} {predicate}"}:
            by_name.setdefault(name, []).append((claim, value))
        by_pair.setdefault((subject, predicate), []).append((claim, value))
    for obs in observations:
        value = _norm(obs["value"])
        for claim, canon_value in by_name.get(_norm(obs["key"]), []):
            if value != canon_value:
                add(obs, "observation", f"The observation '{obs['key']}: {obs['value']}'", claim)
    for proposed in context.get("proposed_claims") or []:
        value = _norm(proposed["value"])
        for claim, canon_value in by_pair.get((_norm(proposed["subject"]), _norm(proposed["predicate"])), []):
            if value != canon_value:
                add(proposed, "claim", f"The proposed claim '{_claim_text(proposed)}'", claim)
    found = found[:10]
    plan: dict = {
        "contradictions": found,
        "notes": [
            f"Compared {len(observations)} observation(s) and {len(context.get('proposed_claims') or [])} proposed "
            f"claim(s) with {len(canon)} approved canon claim(s): {len(found)} contradiction(s)."
        ],
    }
    if context.get("handoff"):
        nothing = (
            f"No new contradiction: the {standing} already named still stand."
            if standing
            else f"Nothing contradicts the {len(canon)} approved canon claim(s) Luna may read."
        )
        facts = [{"text": c["content"], "source_refs": c["source_refs"]} for c in found] or [{"text": nothing}]
        plan["result"] = {"facts": facts}
    return plan


# --- Terra: thrust candidates and a charter draft -----------------------------------------------


def _values(by_field: dict[str, list[dict]], field: str) -> list[str]:
    return [str(o["value"]) for o in by_field.get(field, [])]


def terra_thrusts(context: dict) -> dict:
    book = context["book"]
    premise = book.get("premise") or book["title"]
    genre = (book.get("genre_pack") or "").lower()
    observed = _by_field((context.get("confirmed_observations") or []) + (context["dossier"].get("observations") or []))
    protagonist = (_values(observed, "protagonist") or ["the protagonist"])[0]
    conflict = (_values(observed, "central_conflict") or ["what the premise sets in motion resists being settled"])[0]
    promises = (
        _values(observed, "reader_promise")
        or GENRE_PROMISES.get(genre)
        or ["a question raised on the first page and answered by the last"]
    )
    ending = (_values(observed, "ending_horizon") or ["The question the premise raises is answered on the page."])[0]
    obligations = GENRE_OBLIGATIONS.get(genre, [])
    drafts = 1 + len([t for t in context.get("thrusts") or [] if t["proposed_by"] == "terra"]) // 3
    suffix = f" (draft {drafts})" if drafts > 1 else ""
    thrusts = [
        {
            "kind": "core",
            "title": _short(f"Core: {premise}", 190 - len(suffix)) + suffix,
            "main_thrust": f"{premise} Told straight: {protagonist} follows the premise to its hardest consequence.",
            "character_engine": f"{protagonist} must act on what the premise reveals, and every step costs them "
            "something they value.",
            "central_conflict": conflict,
            "reader_promise": promises[:5],
            "genre_obligations": obligations,
            "ending_shape": ending,
            "risks": ["Played straight, the premise can feel familiar; the voice has to carry it."],
            "forecloses": ["Reframing the premise late in the book"],
        },
        {
            "kind": "stretch",
            "title": "Stretch: the cost lands at home" + suffix,
            "main_thrust": f"{premise} The stakes turn personal: settling it means {protagonist} must expose "
            "something of their own.",
            "character_engine": f"{protagonist}'s need to know fights their need to stay hidden.",
            "central_conflict": f"{conflict}; and {protagonist}'s own past is part of the answer.",
            "reader_promise": [*promises[:4], "a revelation that changes how the protagonist is seen"],
            "genre_obligations": obligations,
            "ending_shape": "The answer costs the protagonist the life they had; they choose to pay it.",
            "risks": ["The personal turn can crowd out the premise."],
            "forecloses": ["A protagonist who stays outside the story"],
        },
        {
            "kind": "wild",
            "title": "Wild: the premise is not what it seems" + suffix,
            "main_thrust": f"{premise} Then the book turns it inside out: what the reader took for the premise "
            "is itself the deception.",
            "character_engine": f"{protagonist} pursues the premise until they find they were misled from the "
            "first page.",
            "central_conflict": "The truth against the story everyone, the reader included, has been told.",
            "reader_promise": ["a twist the reader can look back on and find fairly planted"],
            "genre_obligations": obligations,
            "ending_shape": "The reversal lands, and the first chapter reads differently afterwards.",
            "risks": ["A reversal that is not fairly planted breaks the reader's trust."],
            "forecloses": ["A straightforward reading of the premise"],
        },
    ]
    used = sum(len(v) for v in observed.values())
    plan: dict = {
        "thrusts": thrusts,
        "notes": [
            f"Drafted core, stretch and wild from the premise and {used} observation(s) that speak to the charter."
        ],
    }
    if context.get("handoff"):
        plan["result"] = {"options": [{"text": f"{t['kind']}: {t['title']}"} for t in thrusts]}
    return plan


def _base_thrust(context: dict) -> dict | None:
    thrusts = context.get("thrusts") or []
    for status, kind in (("selected", None), ("proposed", "core"), ("proposed", None)):
        for thrust in reversed(thrusts):
            if thrust["status"] == status and (kind is None or thrust["kind"] == kind):
                return thrust
    return None


def terra_charter(context: dict) -> dict:
    book = context["book"]
    genre = (book.get("genre_pack") or "").lower()
    confirmed = context.get("confirmed_observations") or []
    by_field = _by_field(confirmed)
    thrust = _base_thrust(context)
    origin = f"the thrust '{thrust['title']}'" if thrust else "the premise"

    def first(field: str, fallback: str) -> str:
        values = _values(by_field, field)
        return values[0] if values else fallback

    protagonist_obs = by_field.get("protagonist", [])
    if protagonist_obs:
        obs = protagonist_obs[0]
        protagonist = {("name" if "name" in _tokens(obs["key"]) else "description"): str(obs["value"])}
    else:
        engine = thrust["character_engine"] if thrust else "the protagonist of the premise"
        protagonist = {"description": f"Not yet confirmed; drafted from {origin}: {engine}"}
    promises = (
        _values(by_field, "reader_promise")
        or (thrust["reader_promise"] if thrust else [])
        or GENRE_PROMISES.get(genre)
        or ["a question raised on the first page and answered by the last"]
    )
    drafted_from = {
        "protagonist": origin,
        "central_conflict": origin if thrust else "",
        "reader_promise": origin if thrust else "the genre",
        "ending_horizon": origin if thrust else "",
        "genre_contract": "the book's genre pack" if book.get("genre_pack") else "",
    }
    unknowns = [
        f"{FIELD_LABEL[field]}: not yet confirmed by the author"
        + (f" (drafted from {drafted_from[field]})" if drafted_from.get(field) else "")
        for field in UNKNOWN_FIELDS
        if not by_field.get(field)
    ]
    charter = {
        "main_thrust": first(
            "main_thrust", thrust["main_thrust"] if thrust else (book.get("premise") or book["title"])
        ),
        "reader_promise": promises[:10],
        "protagonist": protagonist,
        "central_conflict": first(
            "central_conflict", thrust["central_conflict"] if thrust else "Not yet confirmed by the author."
        ),
        "genre_contract": first("genre_contract", book.get("genre_pack") or ""),
        "thematic_questions": _values(by_field, "thematic_questions")[:10],
        "narrative_form": first("narrative_form", ""),
        "ending_horizon": first("ending_horizon", (thrust or {}).get("ending_shape") or ""),
        "constraints": _values(by_field, "constraints")[:10],
        "productive_unknowns": unknowns,
        "rejected_directions": [t["title"] for t in context.get("thrusts") or [] if t["status"] == "rejected"][:10],
        "source_refs": [_ref("observation", o["id"]) for o in confirmed[:50]],
    }
    plan: dict = {
        "charter": charter,
        "notes": [
            f"Drafted from {len(confirmed)} confirmed observation(s) and {origin}; "
            f"{len(unknowns)} field(s) left as productive unknowns."
        ],
    }
    if context.get("handoff"):
        plan["result"] = {
            "facts": [
                {
                    "text": f"Charter draft: {_short(charter['main_thrust'], 400)}",
                    "source_refs": charter["source_refs"][:10],
                }
            ],
            "questions": [{"text": u} for u in unknowns[:5]],
        }
    return plan


RULES = {
    "next-question": sol_next_question,
    "guidance": luna_guidance,
    "contradictions": luna_contradictions,
    "thrusts": terra_thrusts,
    "charter": terra_charter,
}


def plan_for(task: str, context: dict) -> dict:
    """The offline plan for ``task``: a pure function of the context."""
    return RULES[task](context)


class OfflineProvider:
    name = "offline"
    model = OFFLINE_MODEL

    def plan(self, task: str, context: dict, *, role: str = "") -> Reply:
        return Reply(data=plan_for(task, context))
