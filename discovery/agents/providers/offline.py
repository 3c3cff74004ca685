"""The offline provider: deterministic rules over a run's context (its dossier and look-ups).

Nothing to install and no network. The same context always gives the same plan, so it is the
embedded default, the test oracle of the model provider's stub, and what the demo runs on.
Each rule is small and says why it acts; where it does nothing, it says so in a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from discovery.continuity import Claim, Entry, check_chapter, lowercase_words
from discovery.story_rules import chapter_cues

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


# --- What a person's turn speaks to (Luna extracts it; Sol reads the same rule so as not to ask again) -----------

# The observation key for each charter field (``field_of`` maps each back to its field).
FIELD_KEY = {
    "main_thrust": "main thrust",
    "protagonist": "protagonist",
    "central_conflict": "central conflict",
    "reader_promise": "reader promise",
    "ending_horizon": "ending",
    "genre_contract": "genre contract",
    "thematic_questions": "theme",
    "narrative_form": "narrative form",
    "constraints": "constraints",
}
# The question each field is asked with; the opening question of every discovery asks for the reader promise.
QUESTION_FIELD = {question: field for field, _, _, question in CHARTER_FIELDS}
QUESTION_FIELD["What experience should remain with the reader after the final page?"] = "reader_promise"
_NAME = r"([A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)"
# Named people, places and things: (pattern, observation key). "protagonist name" speaks to the protagonist;
# "named person" and "place" speak to no charter field.
_LEAD = r"\b(?:protagonist|heroine|hero|narrator|detective|lead)(?:'s name)?\s+is\s+(?:called\s+|named\s+)?"
NAME_PATTERNS = [
    (re.compile(_LEAD + _NAME), "protagonist name"),
    (re.compile(rf"\b(?:named|called)\s+{_NAME}"), "named person"),
    (re.compile(rf"\b(?:town|village|city|island|port|harbour|harbor|house|ship) of {_NAME}"), "place"),
]  # fmt: skip
# A sentence that places a fact on the chapter axis ("shown in chapter four", "secret until chapter twelve", "dies
# in chapter 9"): the whole sentence is the observation, so its story record travels with her words.
FACT_KEY = "fact"


def extract_from(content: str, answers: str = "") -> list[tuple[str, str]]:
    """(key, value) pairs a turn speaks to: the field of the question it answers (the whole answer), each other
    charter field a sentence names by keyword (that sentence), each sentence with a chapter cue (a ``fact``), and
    the people, places and things it names."""
    found: list[tuple[str, str]] = []
    asked = QUESTION_FIELD.get((answers or "").strip())
    if asked:
        found.append((FIELD_KEY[asked], _short(content, 1_000)))
    for sentence in _sentences(content):
        words = _tokens(sentence)
        for field, _, keywords, _ in CHARTER_FIELDS:
            if field == asked or any(f == FIELD_KEY[field] for f, _ in found):
                continue
            if words & (set(keywords) - {"name", "about", "end", "must", "core", "character", "lead"}):
                found.append((FIELD_KEY[field], _short(sentence, 1_000)))
    for sentence in _sentences(content):
        if chapter_cues(sentence)["story"]:
            found.append((FACT_KEY, _short(sentence, 1_000)))
    names: set[str] = set()
    for pattern, key in NAME_PATTERNS:
        for match in pattern.finditer(content):
            name = match.group(1).strip()
            if name not in names:
                names.add(name)
                found.append((key, name))
    return found


def _answered_fields(context: dict) -> set[str]:
    """The charter fields the author has already spoken to: an observation that still stands (confirmed or
    waiting for her), or what her turns say by the extraction rule (before Luna has extracted it)."""
    fields = {field_of(o["key"]) for o in context.get("observations") or []}
    fields |= {field_of(o["key"]) for o in context.get("confirmed_observations") or []}
    for turn in _author_turns(context):
        fields |= {field_of(key) for key, _ in extract_from(turn["content"], turn.get("answers", ""))}
    return {f for f in fields if f}


# --- Sol: the next question, handoffs, approvals, the gate ------------------------------------


def _open_contradiction(context: dict) -> dict | None:
    """The earliest contradiction entry that no question has cited yet (nor one with the same words: a
    duplicate entry is not asked about twice)."""
    asked = {ref.get("id") for q in context.get("questions") or [] for ref in q.get("source_refs") or []}
    entries = [e for e in context["dossier"].get("scratchpad") or [] if e["kind"] == "contradiction"]
    asked_words = {_norm(e["content"]) for e in entries if e["id"] in asked}
    for entry in entries:
        if entry["id"] not in asked and _norm(entry["content"]) not in asked_words:
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
    answered = _answered_fields(context)
    candidates = [f for f, _, _, question in CHARTER_FIELDS if question not in asked and f not in answered]
    if not candidates:
        notes.append("Every charter field has been asked or answered; Sol asks nothing more about the charter.")
        return None, None
    field = min(candidates, key=lambda f: (len(support.get(f, [])), [c[0] for c in CHARTER_FIELDS].index(f)))
    label, question = next((lab, q) for f, lab, _, q in CHARTER_FIELDS if f == field)
    count = len(support.get(field, []))
    refs = [_ref("turn", latest["id"])] + [_ref("observation", o["id"]) for o in support.get(field, [])[:3]]
    notes.append(f"Asked about {label}: the charter field least supported by confirmed observations ({count}).")
    return {"question": question, "source_refs": refs}, field


def _thrusts_due_at_g15(context: dict, thrusts: list[dict]) -> bool:
    """At G1.5 with fewer than two proposed thrusts to choose between (a discovery reopened at G1.5 or before keeps
    only the chosen and the set-aside ones), and not asked since the newest thrust: Terra drafts new candidates."""
    loop = context.get("loop") or {}
    if loop.get("gate") != "G1.5" or loop.get("pending_card") or not thrusts:
        return False
    if len([t for t in thrusts if t["status"] == "proposed"]) >= 2:
        return False
    newest = max(t["created_at"] for t in thrusts)
    return not _has_handoff(context, THRUSTS_DECISION, after=newest)


def _has_handoff(context: dict, decision: str, *, open_only: bool = False, after: str | None = None) -> bool:
    for handoff in context.get("handoffs") or []:
        if handoff["decision"] != decision:
            continue
        if open_only and (handoff["status"] != "open" or handoff.get("failed")):
            continue
        if after and handoff["created_at"] < after:
            continue
        return True
    return False


TASK_SOURCE_TYPES = {
    "guidance": ("chunk",),
    "contradictions": ("observation", "claim", "entry", "turn", "charter"),
    "charter": ("observation",),
    "thrusts": ("observation",),
    "canon-review": ("charter", "claim", "entry", "observation"),
    "trust-review": ("charter", "claim"),
    "brief": ("charter", "thrust", "claim"),
}


def _handoff(task: str, to_role: str, decision: str, context: dict, question: str | None) -> dict:
    statements = []
    premise = context["book"].get("premise")
    if premise:
        statements.append({"text": _short(premise, 4_000), "status": "fact"})
    if question:
        statements.append({"text": question, "status": "question"})
    turns = _author_turns(context)
    sources = [_ref("turn", turns[-1]["id"])] if turns else []
    # The sources the worker may cite beyond that turn (a result cites only what its handoff allowed).
    sources += [_ref("other", f"any:{kind}") for kind in TASK_SOURCE_TYPES.get(task, ())]
    return {
        "task": task,
        "handoff": {"to_role": to_role, "decision": decision, "allowed_sources": sources, "statements": statements},
    }


EXTRACT_DECISION = "Extract the observations the author's turn #{ordinal} speaks to: charter fields, names, places."
BRIEF_DECISION = (
    "Draft the decision brief from the ratified charter, the selected thrust and canon (success metrics, Chapter 1's "
    "spec), and link it in the traceability graph."
)
CANON_REVIEW_DECISION = "Review the charter for canon integrity at G2: canon, contradictions, what is not yet canon."
TRUST_REVIEW_DECISION = "Review the charter for reader trust at G2: promises and payoffs, fair play, genre obligations."


def _extraction_handoffs(context: dict, notes: list[str]) -> list[dict]:
    """Luna extracts each of the author's turns once: a turn that carries no observation yet."""
    observed = {o["turn_id"] for o in context.get("observations") or []}
    handoffs = []
    for turn in _author_turns(context)[-3:]:
        decision = EXTRACT_DECISION.format(ordinal=turn["ordinal"])
        if turn["id"] in observed or _has_handoff(context, decision):
            continue
        handoffs.append(
            {
                "task": "extract",
                "handoff": {
                    "to_role": "luna",
                    "decision": decision,
                    "allowed_sources": [_ref("turn", turn["id"])],
                    "statements": [{"text": _short(turn["content"], 4_000), "status": "fact"}],
                },
            }
        )
        notes.append(f"Handed Luna the extraction of turn #{turn['ordinal']}.")
    return handoffs


def _g2_g3_handoffs(context: dict, notes: list[str]) -> list[dict]:
    """At G2, with an approved charter: Terra drafts the brief and reviews canon integrity, Luna reviews reader
    trust (each once, unless its work is already there). At G3 with no open brief (a discovery reopened at G3 set
    the handed-off one aside): Terra drafts a new one."""
    loop = context.get("loop") or {}
    if loop.get("gate") not in ("G2", "G3") or not [
        c for c in context.get("charters") or [] if c["status"] == "approved"
    ]:
        return []
    if loop.get("pending_card") or loop.get("status") not in ("working", "converged"):
        return []
    handoffs = []
    reviews = set(loop.get("reviews") or [])
    wanted = [("brief", "terra", BRIEF_DECISION, loop.get("brief") is not None)]
    if loop.get("gate") == "G2":
        wanted += [
            ("canon-review", "terra", CANON_REVIEW_DECISION, "canon-integrity" in reviews),
            ("trust-review", "luna", TRUST_REVIEW_DECISION, "reader-trust" in reviews),
        ]
    for task, role, decision, done in wanted:
        if done or _has_handoff(context, decision, open_only=True):
            continue
        handoffs.append(_handoff(task, role, decision, context, None))
        notes.append(f"Handed {role.capitalize()} {task.replace('-', ' ')} at {loop['gate']}.")
    return handoffs


# The built-in run that re-does each lens's work when a verdict or a cascade queued a re-run of it.
RERUN_TASKS = {"canon-integrity": ("canon-review", "terra"), "reader-trust": ("trust-review", "luna")}
RERUN_DECISION = "Re-run #{number} of the {lens} lens ({slots}): {reason}"
AUTHOR_ASKED = "The author asked: "


def _rerun_task(lens: str, slots: list[str]) -> tuple[str, str] | None:
    if lens == "explore-options":
        return ("brief", "terra") if "decision-brief" in slots else ("thrusts", "terra")
    return RERUN_TASKS.get(lens)


def _rerun_handoffs(context: dict, notes: list[str]) -> list[dict]:
    """Each queued re-run goes to a run of its lens, once (again only if the run that took it failed)."""
    handoffs = []
    for rerun in (context.get("loop") or {}).get("reruns") or []:
        slots = [str(s) for s in rerun.get("artifacts") or []]
        found = _rerun_task(rerun["lens"], slots)
        if found is None:
            notes.append(f"No built-in run re-does the {rerun['lens']} lens; its re-run waits for its lens.")
            continue
        task, role = found
        shown = ", ".join("the thrust candidates" if s.startswith("node:") else s for s in slots[:5])
        decision = _short(
            RERUN_DECISION.format(
                number=rerun.get("number", 1), lens=rerun["lens"], slots=shown, reason=rerun["reason"]
            ),
            1_000,
        )
        if any(h["decision"] == decision and not h.get("failed") for h in context.get("handoffs") or []):
            continue
        handoff = _handoff(task, role, decision, context, None)
        handoff["handoff"]["statements"].append(
            {"text": _short(AUTHOR_ASKED + rerun["reason"], 4_000), "status": "fact"}
        )
        handoffs.append(handoff)
        notes.append(f"Handed {role.capitalize()} the queued re-run of the {rerun['lens']} lens.")
    return handoffs


def _field_value(value):
    if isinstance(value, dict):
        return {k: _field_value(v) for k, v in value.items() if _field_value(v) is not None} or None
    if isinstance(value, list):
        return [_field_value(v) for v in value] or None
    return _norm(value) or None if isinstance(value, str) else value


def _charter_would_change(context: dict) -> bool:
    """Whether a draft from the confirmed observations would change a field of the newest charter version: a
    confirmation that changes no field's content asks for no new version."""
    charters = context.get("charters") or []
    if not charters or "fields" not in charters[-1]:
        return True
    draft = {k: v for k, v in terra_charter(context)["charter"].items() if k != "source_refs"}
    newest = charters[-1]["fields"] or {}
    return any(_field_value(value) != _field_value(newest.get(key)) for key, value in draft.items())


def _done_asking(context: dict) -> bool:
    """Sol has nothing more to ask: she answered the last question, no contradiction waits for her, and every
    charter field has been asked or answered."""
    if not _answered(context) or _open_contradiction(context) is not None:
        return False
    asked = {q["question"] for q in context.get("questions") or []} | {context.get("current_question") or ""}
    answered = _answered_fields(context)
    return all(question in asked or f in answered for f, _, _, question in CHARTER_FIELDS)


def _redraft_due(context: dict, question: dict | None) -> bool:
    """A new charter version once the conversation has settled (Sol asks nothing more), and only when what she
    confirmed changes a field's content: not one version per confirmation."""
    return question is None and _done_asking(context) and _charter_would_change(context)


def _sol_handoffs(context: dict, field: str | None, question: dict | None, notes: list[str]) -> list[dict]:
    handoffs: list[dict] = (
        _rerun_handoffs(context, notes) + _extraction_handoffs(context, notes) + _g2_g3_handoffs(context, notes)
    )
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
    elif _thrusts_due_at_g15(context, thrusts):
        handoffs.append(_handoff("thrusts", "terra", THRUSTS_DECISION, context, None))
        notes.append("Handed Terra new thrust candidates: G1.5 has fewer than two to choose between.")
    confirmed = context.get("confirmed_observations") or []
    charters = context.get("charters") or []
    pending = [c for c in charters if c["status"] == "proposed"]
    newest = max((o["created_at"] for o in confirmed), default="")
    waiting = [o for o in context.get("observations") or [] if o["status"] == "working"]
    if (
        thrusts
        and not waiting
        and not pending
        and len(confirmed) >= MIN_CONFIRMED_FOR_CHARTER
        and (not charters or (charters[-1]["created_at"] < newest and _redraft_due(context, question)))
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
    return handoffs[:6]


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


# What a confirmed observation of a name makes Sol propose as canon: (predicate, value) by observation key.
NAME_CLAIMS = {
    "protagonist name": ("is", "the protagonist"),
    "named person": ("is", "a character of the book"),
    "place": ("is", "a place of the book"),
}


# The verbs a fact's sentence is split at: subject, predicate, value ("The keeper is the killer").
_FACT_VERB = re.compile(
    r"^(?P<subject>.+?)\s+(?P<predicate>is|are|was|were|has|have|had|knows|owns|loves|hates|hides|keeps|kills|killed|"
    r"lives|works|wants|holds|carries|becomes|became|wrote|writes|stole|steals|leaves|left|finds|found|meets|met|opens|"
    r"reads|sees|saw|learns|learned)\b\s*(?P<value>.*)$"
)
# Words left dangling where a cue stood ("..., but that stays [secret until chapter twelve].").
_DANGLING = re.compile(
    r"(?:[\s,;:\u2014\u2013-]+|\b(?:but|and|that|which|it|this|stays|remains|is|are|was|will|be|kept|only|though|yet|so|"
    r"then|first)\b)+$",
    re.IGNORECASE,
)
_LEADING = re.compile(r"^(?:[\s,;:\u2014\u2013-]+|\b(?:and|but|then|so)\b)+", re.IGNORECASE)


def fact_claim(text: str) -> dict | None:
    """A fact's sentence as a claim: subject, predicate and value from the words around its chapter cues, and the
    story record those cues name (``discovery.story_rules.chapter_cues``); None without a cue. Someone who "dies
    in chapter 9" is alive until then."""
    cues = chapter_cues(text)
    if not cues["story"]:
        return None
    kept, at = [], 0
    for start, end in cues["spans"]:
        kept.append(text[at:start])
        at = end
    kept.append(text[at:])
    statement = " ".join(" ".join(kept).split()).rstrip(".!?")
    for _ in range(5):
        statement = _LEADING.sub("", _DANGLING.sub("", statement)).strip()
    if not statement:
        return None
    story = {name: str(v) if name in ("known_by", "reveal") else v for name, v in cues["story"].items()}
    if cues["ends"]:
        return {"subject": _short(statement, 190), "predicate": "is", "value": "alive", "story": story}
    split = _FACT_VERB.match(statement)
    if split and split.group("value").strip():
        subject, predicate, value = split.group("subject"), split.group("predicate"), split.group("value").strip()
    else:
        subject, predicate, value = statement, "appears", "in the story"
    return {"subject": _short(subject, 190), "predicate": predicate, "value": _short(value, 1_000), "story": story}


def _sol_claims(context: dict, notes: list[str]) -> list[dict]:
    """Canon from the author's confirmed words: each named person or place once, and each fact with its story
    record (a claim already proposed or approved about the same subject and predicate is not proposed again);
    each cites its observation."""
    known = {
        (_norm(c["subject"]), _norm(c["predicate"]))
        for c in (context.get("proposed_claims") or []) + (context["dossier"].get("claims") or [])
    }
    claims = []
    for obs in context.get("confirmed_observations") or []:
        story: dict = {}
        if obs["key"] == FACT_KEY:
            fact = fact_claim(str(obs["value"]))
            if fact is None:
                continue
            subject, predicate, value, story = fact["subject"], fact["predicate"], fact["value"], fact["story"]
        elif obs["key"] in NAME_CLAIMS:
            predicate, value = NAME_CLAIMS[obs["key"]]
            subject = _short(str(obs["value"]), 190)
        else:
            continue
        if (_norm(subject), _norm(predicate)) in known:
            continue
        known.add((_norm(subject), _norm(predicate)))
        claims.append(
            {
                "scope": "book",
                "scope_id": context["book"]["id"],
                "subject": subject,
                "predicate": predicate,
                "value": value,
                "provenance": "agent-inferred",
                "source_refs": [_ref("observation", obs["id"])],
                **story,
            }
        )
        notes.append(f"Proposed as canon: {subject} {predicate} {value} (from her confirmed words).")
    return claims[:10]


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
    if loop.get("parked"):
        notes.append(f"{gate} waits: the author parked it; Sol asks for it again after her next answer.")
        return None
    if loop.get("abandoned"):
        notes.append(f"{gate} waits: the author abandoned this line; Sol asks again once she says where the book goes.")
        return None
    ask = _gate_card(context, loop, gate, notes)
    words = loop.get("author_words") or []
    if ask is None or not words:
        return ask
    # Her steer or constraint on the card before: this card answers it, in its first words.
    said = "; ".join(f"your {w['kind']} '{_short(w['text'], 200)}'" for w in words)
    return {
        **ask,
        "summary": _short(f"Answering {said}: {ask['summary']}", 500),
        "decisions_requested": [
            _short(f"Does this answer {said}?", 500),
            *ask["decisions_requested"],
        ][:5],
    }


def _gate_card(context: dict, loop: dict, gate: str, notes: list[str]) -> dict | None:
    book = context["book"]
    if gate == "G0":
        if not book.get("premise"):
            notes.append("G0 waits for a premise to ratify.")
            return None
        return _gate_ask(
            "G0",
            f"Ratify the premise as the book's reason to exist: {book['premise']}",
            "Is this why the book exists?",
            "approve",
        )
    if gate == "G1":
        fit = book.get("genre_pack") or "no genre pack yet"
        return _gate_ask("G1", f"Genre and series fit: {fit}", "Does the book fit its genre and series?", "approve")
    if gate == "G1.5":
        proposed = [t for t in context.get("thrusts") or [] if t["status"] == "proposed"]
        if len(proposed) < 2:
            notes.append("G1.5 waits for at least two thrust candidates to choose between.")
            return None
        core = next((t for t in reversed(proposed) if t["kind"] == "core"), proposed[-1])  # the newest draft
        titles = "; ".join(t["title"] for t in proposed)
        return {
            **_gate_ask(
                "G1.5",
                f"Ratify the story thrust this book carries: '{core['title']}' (of {titles})",
                "Which thrust does this book carry?",
                f"the core thrust, '{core['title']}'",
            ),
            "thrust_id": core["id"],
        }
    if gate == "G2":
        approved = [c for c in context.get("charters") or [] if c["status"] == "approved"]
        if not approved:
            notes.append("G2 waits for the author to approve a Story Charter version.")
            return None
        blockers = loop.get("g2_blockers", loop.get("g2_reasons"))
        if blockers:
            notes.append("G2 is not ready: " + "; ".join(blockers))
            return None
        charter = approved[-1]
        return _gate_ask(
            "G2",
            f"Ratify Story Charter v{charter['version']}: {charter['main_thrust']}",
            "Does this charter govern the book?",
            "approve",
        )
    if gate == "G3":
        if loop.get("g3_reasons"):
            notes.append("G3 is not ready: " + "; ".join(loop["g3_reasons"]))
            return None
        return {
            **_gate_ask(
                "G3",
                "Hand off to drafting: ratify the decision brief and start Chapter 1",
                "Does this brief hand the book to drafting?",
                "approve",
            ),
            "artifacts": ["decision-brief"],
        }
    return None


def sol_next_question(context: dict) -> dict:
    notes: list[str] = []
    question, field = _sol_question(context, notes)
    gate = _sol_gate(context, notes)
    loop = context.get("loop") or {}
    # At G2, when a round is all saturation waits for, Sol closes it before asking.
    advance_round = bool(gate and gate["gate"] == "G2" and loop.get("g2_reasons"))
    if advance_round:
        notes.append("Closed the round: nothing else keeps saturation from holding.")
    return {
        "question": question,
        # Everything answered or asked, and she has answered the last: her current question closes.
        "done_asking": question is None and _done_asking(context),
        "handoffs": _sol_handoffs(context, field, question, notes)[:MAX_HANDOFFS],
        "approval_requests": _sol_approvals(context, notes),
        "claims": _sol_claims(context, notes),
        "advance_round": advance_round,
        "gate": gate,
        "notes": notes[:10],
    }


MAX_HANDOFFS = 10


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
    # The same words twice are one contradiction (two observations of one value, say): named once.
    said = {
        _norm(entry["content"])
        for entry in context["dossier"].get("scratchpad") or []
        if entry["kind"] == "contradiction"
    }
    found: list[dict] = []
    standing = 0

    def add(side: dict, side_type: str, side_text: str, claim: dict) -> None:
        nonlocal standing
        pair = frozenset({side["id"], claim["id"]})
        content = _short(
            f"{side_text} contradicts approved canon: {_claim_text(claim)}. Both cannot remain true as stated.",
            2_000,
        )
        if pair in named or _norm(content) in said:
            standing += 1
            return
        named.add(pair)
        said.add(_norm(content))
        found.append(
            {
                "kind": "contradiction",
                "content": content,
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
    # A re-run the author asked for (her constraint, or her reason to explore): each new thrust carries it.
    asked = [
        st["text"][len(AUTHOR_ASKED) :]
        for st in (context.get("handoff") or {}).get("statements") or []
        if str(st.get("text", "")).startswith(AUTHOR_ASKED)
    ]
    heeded = f" As the author asked ({_short(asked[0], 300)})." if asked else ""
    drafts = 1 + len([t for t in context.get("thrusts") or [] if t["proposed_by"] == "terra"]) // 3
    suffix = f" (draft {drafts})" if drafts > 1 else ""
    thrusts = [
        {
            "kind": "core",
            "title": _short(f"Core: {premise}", 190 - len(suffix)) + suffix,
            "main_thrust": f"{premise} Told straight: {protagonist} follows the premise to its hardest consequence."
            + heeded,
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
            "something of their own." + heeded,
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
            "is itself the deception." + heeded,
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
        plan["result"] = {
            "options": [{"text": f"{t['kind']}: {t['title']}"} for t in thrusts],
            "analysis": _short(
                "Three thrusts at rising distance from the premise: "
                + "; ".join(f"{t['kind']} keeps {t['character_engine']}" for t in thrusts),
                9_000,
            ),
            "risks": [risk for t in thrusts for risk in t.get("risks") or []][:10] or ["none named"],
            "charter_language": _short(f"Main thrust: {thrusts[0]['main_thrust']}", 9_000),
        }
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
        protagonist = {}
        for obs in protagonist_obs:
            slot = "name" if "name" in _tokens(obs["key"]) else "description"
            protagonist.setdefault(slot, str(obs["value"]))
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
            "options": [{"text": f"Rejected direction: {d}"} for d in charter["rejected_directions"][:5]]
            or [{"text": "Keep the premise's plain reading instead of this draft."}],
            "analysis": _short(
                f"The draft rests on {len(confirmed)} confirmed observation(s); "
                f"{len(unknowns)} field(s) stay productive unknowns.",
                9_000,
            ),
            "risks": [f"Unknown: {u}" for u in unknowns[:5]] or ["The draft may over-commit the ending."],
            "charter_language": _short(charter["main_thrust"], 9_000),
        }
    return plan


# --- Luna: extraction; the reader-trust review. Terra: the canon-integrity review; the decision brief ----------


def luna_extract(context: dict) -> dict:
    """The observations each handed turn speaks to (``extract_from``), each citing its turn, none repeated."""
    handoff = context.get("handoff") or {}
    wanted = {r["id"] for r in handoff.get("allowed_sources") or [] if r.get("type") == "turn"}
    turns = [t for t in context.get("turns") or [] if t["role"] in ("author", "editor")]
    if wanted:
        turns = [t for t in turns if t["id"] in wanted]
    have = {(o["turn_id"], o["key"], o["value"]) for o in context.get("observations") or []}
    observations = []
    for turn in turns:
        for key, value in extract_from(turn["content"], turn.get("answers", "")):
            if (turn["id"], key, value) in have:
                continue
            have.add((turn["id"], key, value))
            observations.append(
                {"turn_id": turn["id"], "key": key, "value": value, "provenance": "agent-inferred", "confidence": 0.7}
            )
    observations = observations[:30]
    plan: dict = {
        "observations": observations,
        "notes": [
            f"Extracted {len(observations)} observation(s) from {len(turns)} turn(s); each waits for the author."
        ],
    }
    if handoff:
        plan["result"] = {
            "facts": [
                {"text": f"{o['key']}: {_short(o['value'], 400)}", "source_refs": [_ref("turn", o["turn_id"])]}
                for o in observations[:10]
            ]
            or [{"text": "The turn names no charter field, person or place Luna can point to."}]
        }
    return plan


def _charter_text(charter: dict) -> str:
    return " ".join(str(v) for v in (charter.get("content") or {}).values())


def _finding(text: str, resolution: str, reason: str) -> dict:
    return {"text": _short(text, 1_900), "resolution": resolution, "reason": _short(reason, 1_900)}


def terra_canon_review(context: dict) -> dict:
    """The charter against approved canon, the open contradictions, and what is proposed but not canon."""
    charter = context.get("charter") or {}
    canon = context["dossier"].get("claims") or []
    findings = []
    if not charter:
        findings.append(_finding("There is no approved Story Charter to review.", "deferred", "G2 waits for one."))
    text = _norm(_charter_text(charter))
    for claim in canon[:20]:
        if _norm(claim["subject"]) and _norm(claim["subject"]) in text:
            findings.append(
                _finding(
                    f"The charter names {claim['subject']}, of whom approved canon holds: {_claim_text(claim)}.",
                    "resolved",
                    "No charter field states it otherwise.",
                )
            )
    if not canon:
        findings.append(
            _finding("No approved canon yet: the charter cannot contradict it.", "resolved", "Checked 0 claims.")
        )
    for entry in context["dossier"].get("scratchpad") or []:
        if entry["kind"] == "contradiction":
            findings.append(
                _finding(f"Open contradiction: {entry['content']}", "deferred", "The author settles which side holds.")
            )
    proposed = context.get("proposed_claims") or []
    if proposed:
        findings.append(
            _finding(
                f"{len(proposed)} proposed claim(s) are not canon yet.",
                "resolved",
                "Nothing from the scratchpad becomes canon without the author's verdict.",
            )
        )
    # The open questions routed to this lens: each checked against the admitted research, and resolved.
    research = context.get("research_decisions") or []
    resolved = []
    for q in (context.get("lens_questions") or [])[:MAX_HANDOFFS]:
        if q.get("kind") not in (None, "", "question"):
            continue  # a conflict or the like is the author's to settle
        if research:
            cites = f"decision:{research[-1]['sequence']}"
            answer = (
                f"Checked against {len(research)} admitted research item(s) (decision #{research[-1]['sequence']}) "
                f"and {len(canon)} approved canon claim(s): nothing in canon contradicts it; the chapter is held "
                "to the admitted research when it is drafted."
            )
        else:
            cites = f"question:{q['id']}"
            answer = "No admitted research bears on it yet; nothing in canon contradicts it."
        findings.append(_finding(f"Open question: {q['question']}", "resolved", answer))
        resolved.append({"question_id": q["id"], "resolution": _short(answer, 1_900), "cites": cites})
    cited = [r for r in charter.get("source_refs") or [] if r.get("type") == "observation"]
    findings.append(
        _finding(
            f"The charter cites {len(cited)} confirmed observation(s) of the author's words.",
            "resolved" if cited else "deferred",
            "Its fields rest on what she confirmed." if cited else "It was written without confirmed observations.",
        )
    )
    plan: dict = {
        "review": {
            "lens": "canon-integrity",
            "gate": "G2",
            "summary": f"Charter v{charter.get('version', '?')} against {len(canon)} approved canon claim(s).",
            "findings": findings[:50],
        },
        "questions": resolved,
        "notes": [f"Reviewed canon integrity: {len(findings)} finding(s)."],
    }
    if context.get("handoff"):
        plan["result"] = {
            "facts": [{"text": f["text"]} for f in findings[:10]],
            "options": [{"text": "Defer what waits for the author to the decision brief; resolve the rest now."}],
            "analysis": _short(plan["review"]["summary"] + " " + "; ".join(f["text"] for f in findings), 9_000),
            "risks": [f["text"] for f in findings if f["resolution"] == "deferred"][:10] or ["none found"],
            "charter_language": _short(str((charter.get("content") or {}).get("main_thrust") or ""), 9_000) or None,
        }
    return plan


def luna_trust_review(context: dict) -> dict:
    """Promises with payoffs, fair play (with no reveal yet, nothing to check), genre obligations, unknowns."""
    charter = context.get("charter") or {}
    content = charter.get("content") or {}
    genre = (context["book"].get("genre_pack") or "").lower()
    ending = str(content.get("ending_horizon") or "")
    findings = []
    for promise in (content.get("reader_promise") or [])[:5]:
        if ending:
            findings.append(
                _finding(f"Promise: {promise}", "resolved", f"The ending horizon pays it: {_short(ending, 300)}")
            )
        else:
            findings.append(
                _finding(f"Promise: {promise}", "deferred", "The ending is still open; the brief's metrics track it.")
            )
    reveals = [c for c in context["dossier"].get("claims") or [] if c.get("reveal")]
    if reveals:
        findings.append(
            _finding(
                f"{len(reveals)} reveal(s) in canon: each needs its clues shown before it.",
                "deferred",
                "Checked chapter by chapter while drafting.",
            )
        )
    else:
        findings.append(_finding("Fair play: no reveal yet, so there is nothing to check.", "resolved", "No reveal."))
    for obligation in GENRE_OBLIGATIONS.get(genre, []):
        findings.append(_finding(f"Genre obligation: {obligation}", "deferred", "Checked as chapters are drafted."))
    for unknown in (content.get("productive_unknowns") or [])[:5]:
        findings.append(_finding(f"Left open: {unknown}", "deferred", "A productive unknown, on purpose."))
    plan: dict = {
        "review": {
            "lens": "reader-trust",
            "gate": "G2",
            "summary": f"Reader trust in charter v{charter.get('version', '?')}: {len(findings)} finding(s).",
            "findings": findings[:50],
        },
        "notes": [f"Reviewed reader trust: {len(findings)} finding(s)."],
    }
    if context.get("handoff"):
        plan["result"] = {"facts": [{"text": f["text"]} for f in findings[:10]]}
    return plan


# The traceability the brief links: (node id, kind, label), and the edges between them.
BRIEF_NODES = [
    ("premise", "premise", "The premise"),
    ("thrust", "arc", "The selected thrust"),
    ("charter-main-thrust", "story-question", "Charter: main thrust"),
    ("charter-protagonist", "character-engine", "Charter: protagonist"),
    ("charter-conflict", "conflict", "Charter: central conflict"),
    ("chapter-1-spec", "chapter-spec", "Chapter 1's spec"),
    ("chapter-1", "chapter", "Chapter 1"),
]
CHARTER_NODES = ("charter-main-thrust", "charter-protagonist", "charter-conflict")
BRIEF_EDGES = (
    [("premise", "thrust")]
    + [("thrust", node) for node in CHARTER_NODES]
    + [(node, "chapter-1-spec") for node in CHARTER_NODES]
    + [("chapter-1-spec", "chapter-1")]
)


def _orphan_edges(context: dict, present: set[str]) -> list[dict]:
    """The graph's orphans, linked where the brief links its own: a node with no producer from the root, a node
    with no consumer into Chapter 1 (or the first leaf), so the strict lint passes on what the discovery made."""
    edges = []
    leaf = next(
        (n["node_id"] for n in context.get("trace") or [] if n["kind"] == "chapter" and n["node_id"] == "chapter-1"),
        "chapter-1" if "chapter-1" in present else None,
    )
    for orphan in context.get("orphans") or []:
        node, message = orphan["node_id"], orphan.get("message") or ""
        root = orphan.get("root") or "premise"
        if orphan.get("no_producer", "no producer" in message) and root in present and root != node:
            edges.append({"from_id": root, "to_id": node})
        if orphan.get("no_consumer", "no consumer" in message):
            target = leaf or next(
                (n["node_id"] for n in context.get("trace") or [] if n["kind"] == orphan.get("leaf_kind")), None
            )
            if target and target != node:
                edges.append({"from_id": node, "to_id": target})
    return edges


def terra_brief(context: dict) -> dict:
    book = context["book"]
    charter = context.get("charter") or {}
    content = charter.get("content") or {}
    genre = (book.get("genre_pack") or "").lower()
    thrust = next((t for t in reversed(context.get("thrusts") or []) if t["status"] == "selected"), None)
    protagonist = content.get("protagonist") or {}
    who = protagonist.get("name") or "the protagonist"
    promises = [str(p) for p in content.get("reader_promise") or []]
    metrics = [f"The reader promise is kept on the page: {_short(p, 300)}" for p in promises[:3]]
    if content.get("ending_horizon"):
        metrics.append(f"The ending lands as chartered: {_short(str(content['ending_horizon']), 300)}")
    if genre == "mystery":
        metrics.append("The culprit is deducible from clues shown on the page before the reveal.")
    metrics = metrics or ["The question the premise raises is answered on the page by the last chapter."]
    spec = _short(
        f"Open on {who}: {content.get('main_thrust') or book.get('premise') or book['title']} "
        f"Set the conflict moving ({content.get('central_conflict') or 'what the premise sets in motion'}) "
        f"and plant the first promise: {promises[0] if promises else 'the story question'}.",
        4_000,
    )
    canon = [_claim_text(c) for c in (context["dossier"].get("claims") or [])[:20]]
    existing = {n["node_id"] for n in context.get("trace") or []}
    nodes = [
        {
            "node_id": node_id,
            "kind": kind,
            "label": label if node_id != "thrust" or not thrust else _short(f"Thrust: {thrust['title']}", 190),
            "produced_by": "explore-options",
            **({"artifact": "decision-brief"} if node_id == "chapter-1-spec" else {}),
        }
        for node_id, kind, label in BRIEF_NODES
        if node_id not in existing
    ]
    edges = [{"from_id": a, "to_id": b} for a, b in BRIEF_EDGES]
    linked = _orphan_edges(context, {n["node_id"] for n in nodes} | existing)
    edges += [e for e in linked if e not in edges]
    brief = {
        "slug": "decision-brief",
        "type": "decision-brief",
        "status": "proposed",
        "lens": "explore-options",
        "content": {
            "charter": {"id": charter.get("id"), "version": charter.get("version")},
            "thrust": {"id": thrust["id"], "title": thrust["title"]} if thrust else None,
            "success_metrics": metrics,
            "chapters": [{"number": 1, "title": "Chapter 1", "spec": spec}],
            "chapter_1": spec,
            "canon": canon,
        },
    }
    plan: dict = {
        "brief": brief,
        "nodes": nodes,
        "edges": edges,
        "notes": [
            *(
                [f"Linked {len(linked)} edge(s) to the orphan node(s) of the graph, from the root and to a chapter."]
                if linked
                else []
            ),
            f"Drafted the decision brief from charter v{charter.get('version', '?')}"
            + (f" and the thrust '{thrust['title']}'" if thrust else "")
            + f": {len(metrics)} success metric(s), Chapter 1's spec, {len(canon)} canon claim(s).",
        ],
    }
    if context.get("handoff"):
        plan["result"] = {
            "facts": [{"text": f"Success metric: {m}"} for m in metrics[:5]],
            "options": [{"text": "Hand off with Chapter 1 alone; later chapters come from drafting."}],
            "analysis": _short(f"Chapter 1: {spec}", 9_000),
            "risks": ["The metrics are checked only when chapters exist."],
            "charter_language": _short(str(content.get("main_thrust") or spec), 9_000),
        }
    return plan


def luna_continuity(context: dict) -> dict:
    """Luna's continuity check of one chapter's revision: the deterministic rules of discovery.continuity."""
    manuscript = context.get("manuscript") or {}
    text, number = manuscript.get("text"), manuscript.get("chapter")
    if text is None or number is None:
        return {"findings": [], "notes": ["That revision's text is not there to check."]}
    others = {int(n): t for n, t in (manuscript.get("others") or {}).items()}
    entries = [Entry(e["id"], e["name"], tuple(e["aliases"])) for e in manuscript.get("entries", [])]
    claims = [Claim(**c) for c in manuscript.get("claims", [])]
    found = check_chapter(
        number=number,
        text=text,
        entries=entries,
        claims=claims,
        earlier={n: t for n, t in others.items() if n < number},
        known_lower=lowercase_words([text, *others.values()]),
    )
    said = f"{len(found)} finding(s)" if found else "nothing: the chapter agrees with canon"
    return {"findings": found, "notes": [f"Checked chapter {number} (revision {manuscript.get('revision')}): {said}."]}


FIRST_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)", re.S)


def luna_research_url(context: dict) -> dict:
    """Luna's reading of a page she collected: the author's claim and citation when she gave them, else the claim
    is the first sentence of the page's text after its heading (its own words, nothing added) and the citation
    the server's default."""
    asked = context.get("research_request") or {}
    page = context.get("page") or {}
    claim = asked.get("claim") or ""
    notes = [f"Collected “{page.get('title', '')}” from {page.get('host', '')} for the author's admission."]
    if not claim:
        title = (page.get("title") or "").strip()
        lines = [line for line in (page.get("text") or "").splitlines() if line.strip() and line.strip() != title]
        text = " ".join(" ".join(lines).split())
        first = FIRST_SENTENCE.match(text)
        claim = _short(first.group(1) if first else text, 500)
        notes.append("The claim is the page's first sentence; the author may reject it and ask with her own words.")
    return {"claim": claim, "citation": asked.get("citation") or "", "notes": notes}


RULES = {
    "continuity": luna_continuity,
    "research-url": luna_research_url,
    "extract": luna_extract,
    "canon-review": terra_canon_review,
    "trust-review": luna_trust_review,
    "brief": terra_brief,
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
