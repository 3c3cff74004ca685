"""The continuity check's offline rules (issue 28): one chapter's text against canon in time, by the codex's
entries and aliases and the claims' story records. Pure functions of their input, deterministic.

- ``reveal-too-early``: a fact the reader may not see before chapter R (a secret, a reveal, anything first
  shown later) is stated in an earlier chapter: its value and a name of its subject's entry in one sentence.
- ``evidence-not-shown``: in a reveal's chapter, a piece of its decisive evidence that no earlier chapter's
  text shows (its value and a name of its entry in one sentence).
- ``out-of-time``: an entry acts (outside dialogue, its name followed by a verb) in a chapter outside the
  chapters where its existence claim ("is alive", "exists"...) holds.
- ``not-in-canon``: a capitalised name no entry or alias knows. Sentence-initial words, dialogue, headings and
  ordinary capitalised words (a stop list, and any word the manuscript also writes in lower case) are not names.
- ``first-shown-differs``: the first chapter whose text shows a fact comes after the chapter canon plans for it
  (``first_shown_chapter``). Shown before its chapter is ``reveal-too-early``, not filed twice.

Reader promises (``reader_promises``): every reveal, every clue a reveal needs and the charter's promise, traced
through the chapter texts by the same matching: planted in chapter N, paid off in chapter M.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass

EXISTENCE_PREDICATES = {"is alive", "alive", "lives", "is living", "exists", "is present", "is in the story"}

# Words that end a title run: the title itself is ordinary, the name after it is what counts.
TITLES = {
    "Mr",
    "Mrs",
    "Ms",
    "Miss",
    "Dr",
    "Sir",
    "Lord",
    "Lady",
    "Father",
    "Mother",
    "Brother",
    "Sister",
    "Saint",
    "St",
    "Captain",
    "Inspector",
    "Uncle",
    "Aunt",
}
ORDINARY = {
    *TITLES,
    "I",
    "Madam",
    *["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    *[
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ],
    *["God", "Christmas", "Easter", "English", "French", "German", "Latin", "OK", "Chapter", "Part", "Book"],
    *[
        "The",
        "A",
        "An",
        "And",
        "But",
        "Or",
        "If",
        "When",
        "Then",
        "He",
        "She",
        "It",
        "They",
        "We",
        "You",
        "His",
        "Her",
        "Its",
        "Their",
        "Our",
        "My",
        "Your",
    ],
}
# A verb right after a name: the entry acts. Past tenses in -ed, present in -s, and the common irregulars.
IRREGULAR = set(
    [
        "said",
        "says",
        "came",
        "comes",
        "went",
        "goes",
        "took",
        "takes",
        "stood",
        "stands",
        "sat",
        "sits",
        "ran",
        "runs",
        "spoke",
        "speaks",
        "saw",
        "sees",
        "knew",
        "knows",
        "told",
        "tells",
        "rang",
        "rings",
        "held",
        "holds",
        "made",
        "makes",
        "left",
        "leaves",
        "found",
        "finds",
        "gave",
        "gives",
        "looked",
        "smiled",
        "nodded",
        "laughed",
        "walked",
        "turned",
        "opened",
        "closed",
        "wrote",
        "writes",
        "read",
        "reads",
        "heard",
        "hears",
        "felt",
        "feels",
        "kept",
        "keeps",
        "brought",
        "brings",
        "began",
        "begins",
        "drew",
        "draws",
        "fell",
        "falls",
        "rose",
        "rises",
        "stepped",
        "answered",
        "asked",
        "whispered",
        "shouted",
        "climbed",
        "lit",
        "lights",
    ]
)
NOT_ACTING = {"was", "is", "has", "had", "does", "as", "its", "this", "his", "yes", "us", "always", "perhaps"}

WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
CAPITALISED = re.compile(r"\b[A-Z][a-z]+(?:['’-][A-Za-z]+)?(?:\s+[A-Z][a-z]+(?:['’-][A-Za-z]+)?)*\b")
SENTENCE_END = re.compile(r"[.!?…]+[\"”’)\]]*(?=\s)|\n")
DIALOGUE = re.compile(r"“[^”]*”|\"[^\"\n]*\"")


@dataclass(frozen=True)
class Entry:
    id: str
    name: str
    aliases: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True)
class Claim:
    id: str
    entry_id: str | None
    predicate: str
    value: object
    true_from_chapter: int | None = None
    true_until_chapter: int | None = None
    known_by: str = "reader"
    first_shown_chapter: int | None = None
    reveal: str = "none"
    decisive: bool = False
    evidence_for_id: str | None = None


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, stripped of surrounding space; a line break also ends one (headings)."""
    spans, position = [], 0

    def add(start: int, end: int) -> None:
        piece = text[start:end]
        lead = len(piece) - len(piece.lstrip())
        if piece.strip():
            spans.append((start + lead, start + lead + len(piece.strip())))

    for match in SENTENCE_END.finditer(text):
        add(position, match.start() if match.group(0) == "\n" else match.end())
        position = match.end()
    add(position, len(text))
    return spans


def _name_pattern(name: str) -> re.Pattern:
    """A name as a pattern: its spaces match any run of space; a lower-case name matches in any case. Its word
    bounds are checked by ``_bounded`` (a look-around in each of hundreds of patterns costs ten times the compile)."""
    flags = 0 if name[:1].isupper() else re.IGNORECASE
    return re.compile(re.escape(name).replace(r"\ ", r"\s+"), flags)


def _bounded(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] stands as a whole word: no letter, digit, apostrophe or hyphen runs into it."""
    before = text[start - 1] if start else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or before in "_'’-") and not (after.isalnum() or after in "_-")


def _value_text(value: object) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str | int | float):
        text = " ".join(str(value).split())
        return text if len(text) >= 2 else None
    return None


class Scanner:
    """The entries' names as patterns, compiled when first asked for; each entry's mentions in a text are found in
    one pass over the text and kept, so asking about one sentence is a binary search."""

    def __init__(self, entries: Iterable[Entry]):
        self.entries = {e.id: e for e in entries}
        self._patterns: dict[str | None, list[re.Pattern]] = {}
        self._found: dict[tuple[str | None, str], tuple[list[int], list[re.Match]]] = {}
        self._values: dict[str, re.Pattern] = {}
        self._sentences: dict[str, list[tuple[int, int]]] = {}

    def sentences(self, text: str) -> list[tuple[int, int]]:
        """The text's sentences (:func:`sentences`), split once per text."""
        if text not in self._sentences:
            self._sentences[text] = sentences(text)
        return self._sentences[text]

    def stating(self, claim: Claim, text: str) -> tuple[int, int] | None:
        """The first sentence of the text that states the claim (names its entry and says its value), or None:
        only the sentences that name the entry are read."""
        return next(
            (s for s in self.naming(claim.entry_id, text, self.sentences(text)) if self.states(claim, text, s)), None
        )

    def _all(self, entry_id: str | None, text: str) -> tuple[list[int], list[re.Match]]:
        key = (entry_id, text)
        if key not in self._found:
            if entry_id not in self._patterns:
                entry = self.entries.get(entry_id)
                self._patterns[entry_id] = [_name_pattern(n) for n in (entry.names if entry else ()) if n.strip()]
            matches = sorted(
                (m for p in self._patterns[entry_id] for m in p.finditer(text) if _bounded(text, m.start(), m.end())),
                key=lambda m: m.start(),
            )
            self._found[key] = ([m.start() for m in matches], matches)
        return self._found[key]

    def mentions(self, entry_id: str | None, text: str, start: int = 0, end: int | None = None) -> list[re.Match]:
        end = len(text) if end is None else end
        starts, matches = self._all(entry_id, text)
        first, last = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
        return [m for m in matches[first:last] if m.end() <= end]

    def naming(self, entry_id: str | None, text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """The sentences of ``spans`` (in order, as ``sentences`` gives them) that name the entry."""
        starts = [a for a, _b in spans]
        found: list[tuple[int, int]] = []
        for mention in self._all(entry_id, text)[1]:
            at = bisect.bisect_right(starts, mention.start()) - 1
            if at >= 0 and mention.end() <= spans[at][1] and (not found or found[-1] != spans[at]):
                found.append(spans[at])
        return found

    def states(self, claim: Claim, text: str, span: tuple[int, int]) -> bool:
        """Whether the sentence ``span`` names the claim's entry and says its value."""
        value = _value_text(claim.value)
        if value is None or not self.mentions(claim.entry_id, text, *span):
            return False
        value = value.lower()
        if value not in self._values:
            self._values[value] = _name_pattern(value)
        return any(_bounded(text, m.start(), m.end()) for m in self._values[value].finditer(text, *span))


def _finding(kind, key, text, span, *, claims=(), entries=(), message) -> dict:
    return {
        "kind": kind,
        "key": key,
        "span_start": span[0],
        "span_end": span[1],
        "quote": text[span[0] : span[1]],
        "claim_ids": [str(c) for c in claims],
        "entry_ids": [str(e) for e in entries],
        "message": message,
    }


def _hidden_until(claim: Claim) -> float | None:
    """The first chapter the reader may see this fact, when it is held back at all."""
    if claim.first_shown_chapter is not None:
        return claim.first_shown_chapter
    if claim.known_by == "nobody":
        return float("inf")
    return None


def _in_dialogue(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in DIALOGUE.finditer(text)]


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= position < b for a, b in spans)


def check_chapter(
    *,
    number: int,
    text: str,
    entries: list[Entry],
    claims: list[Claim],
    earlier: dict[int, str],
    known_lower: set[str] | None = None,
) -> list[dict]:
    """Every finding of chapter ``number``'s ``text`` (``earlier``: the text of each chapter before it)."""
    scan = Scanner(entries)
    spans = scan.sentences(text)
    names = {e.id: e.name for e in entries}
    found: list[dict] = []

    # reveal-too-early
    for claim in claims:
        until = _hidden_until(claim)
        if until is None or number >= until or claim.entry_id is None:
            continue
        for span in scan.naming(claim.entry_id, text, spans):
            if scan.states(claim, text, span):
                when = "is never shown yet" if until == float("inf") else f"is first shown in chapter {until}"
                found.append(
                    _finding(
                        "reveal-too-early",
                        f"reveal:{claim.id}",
                        text,
                        span,
                        claims=[claim.id],
                        entries=[claim.entry_id],
                        message=f"This states that {names[claim.entry_id]} {claim.predicate} {claim.value}, "
                        f"which the reader {when}; this is chapter {number}.",
                    )
                )
                break

    # evidence-not-shown
    by_id = {c.id: c for c in claims}
    for reveal in claims:
        if reveal.reveal == "none" or reveal.first_shown_chapter != number:
            continue
        shown_at = scan.stating(reveal, text)
        if shown_at is None and reveal.entry_id is not None:
            first = scan.mentions(reveal.entry_id, text)
            shown_at = next((s for s in spans if first and s[0] <= first[0].start() < s[1]), None)
        shown_at = shown_at or (spans[0] if spans else (0, 0))
        for evidence in claims:
            if evidence.evidence_for_id != reveal.id or not evidence.decisive or evidence.id not in by_id:
                continue
            if any(scan.stating(evidence, t) for n, t in earlier.items() if n < number):
                continue
            who = names.get(evidence.entry_id, "its subject")
            found.append(
                _finding(
                    "evidence-not-shown",
                    f"evidence:{evidence.id}",
                    text,
                    shown_at,
                    claims=[reveal.id, evidence.id],
                    entries=[e for e in (evidence.entry_id,) if e],
                    message=f"The reveal here needs its decisive evidence ({who} {evidence.predicate} "
                    f"{evidence.value}), which no chapter before {number} shows.",
                )
            )

    # out-of-time
    dialogue = _in_dialogue(text)
    for claim in claims:
        if claim.predicate.strip().casefold() not in EXISTENCE_PREDICATES or claim.entry_id is None:
            continue
        low, high = claim.true_from_chapter or 1, claim.true_until_chapter or float("inf")
        if low <= number <= high:
            continue
        for mention in scan.mentions(claim.entry_id, text):
            if _inside(mention.start(), dialogue):
                continue
            after = WORD.match(text, _skip_space(text, mention.end()))
            if after is None or not _acts(after.group(0)):
                continue
            span = next((s for s in spans if s[0] <= mention.start() < s[1]), (mention.start(), after.end()))
            window = f"until chapter {high}" if number > high else f"from chapter {low}"
            found.append(
                _finding(
                    "out-of-time",
                    f"time:{claim.id}",
                    text,
                    span,
                    claims=[claim.id],
                    entries=[claim.entry_id],
                    message=f"{names[claim.entry_id]} acts here, in chapter {number}, but canon says "
                    f"{names[claim.entry_id]} {claim.predicate} only {window}.",
                )
            )
            break

    # first-shown-differs: shown later than planned (the first text to show it is this one, after its chapter)
    for claim in claims:
        planned = claim.first_shown_chapter
        if planned is None or number <= planned or claim.entry_id is None or _value_text(claim.value) is None:
            continue
        span = scan.stating(claim, text)
        if span is None or first_shown(scan, claim, earlier) is not None:
            continue
        found.append(
            _finding(
                "first-shown-differs",
                f"first-shown:{claim.id}",
                text,
                span,
                claims=[claim.id],
                entries=[claim.entry_id],
                message=f"The text first shows that {names[claim.entry_id]} {claim.predicate} {claim.value} here, "
                f"in chapter {number}; canon plans to show it in chapter {planned}, whose text does not.",
            )
        )

    # not-in-canon
    known = {n.casefold() for e in entries for n in e.names}
    known |= {w.casefold() for e in entries for n in e.names for w in n.split() if w[:1].isupper()}
    ordinary = known_lower if known_lower is not None else lowercase_words([text])
    starts = {a for a, _b in spans}
    reported: set[str] = set()
    for match in CAPITALISED.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if text[line_start : line_start + 1] == "#" or _inside(match.start(), dialogue):
            continue
        words = [(m.start(), m.group(0)) for m in re.finditer(r"\S+", match.group(0))]
        words = [(match.start() + off, w) for off, w in words]
        if _sentence_initial(text, words[0][0], starts):
            words = words[1:]
        while words and (words[0][1] in TITLES or words[0][1] in ORDINARY):
            words = words[1:]
        if not words:
            continue
        name = " ".join(w for _p, w in words)
        folded = name.casefold()
        if folded in known or folded in reported:
            continue
        if all(w.casefold() in known or w in ORDINARY or w.lower() in ordinary for _p, w in words):
            continue
        reported.add(folded)
        start, end = words[0][0], words[-1][0] + len(words[-1][1])
        found.append(
            _finding(
                "not-in-canon",
                f"name:{folded}",
                text,
                (start, end),
                message=f"“{name}” is named here, and no codex entry or alias knows it. Add it as an entry?",
            )
        )
    return sorted(found, key=lambda f: (f["span_start"], f["kind"]))


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t":
        position += 1
    return position


def _acts(word: str) -> bool:
    word = word.lower()
    if word in NOT_ACTING or word.endswith(("'s", "’s")):
        return False
    return word in IRREGULAR or (len(word) > 3 and (word.endswith("ed") or word.endswith("s")))


def _sentence_initial(text: str, position: int, starts: set[int]) -> bool:
    if position in starts:
        return True
    before = text[:position].rstrip(" \t\"“‘'*_(")
    return not before or before[-1] in ".!?…:\n" or before.endswith("—")


def lowercase_words(texts: Iterable[str]) -> set[str]:
    """The words the manuscript writes in lower case somewhere: capitalised elsewhere, they are ordinary words."""
    return {w for text in texts for w in WORD.findall(text) if w.islower()}


def first_shown(scan: Scanner, claim: Claim, texts: dict[int, str]) -> int | None:
    """The first chapter of ``texts`` whose text states the claim (its value and a name of its entry in one
    sentence), or None."""
    return next((number for number in sorted(texts) if scan.stating(claim, texts[number])), None)


def _first_naming(scan: Scanner, entry_ids: Iterable[str], texts: dict[int, str]) -> int | None:
    """The first chapter of ``texts`` that names any of the entries."""
    for number in sorted(texts):
        if any(scan.mentions(entry_id, texts[number]) for entry_id in entry_ids):
            return number
    return None


def _status(*, paid: int | None, planted: int | None, overdue: bool, never: bool = False) -> str:
    if never:
        return "never-planted"
    if paid is not None:
        return "paid-off"
    if overdue:
        return "overdue"
    return "open" if planted is not None else "to-come"


def reader_promises(
    *, chapter: int, entries: list[Entry], claims: list[Claim], texts: dict[int, str], promises: list[str]
) -> list[dict]:
    """Every reader promise as of chapter ``chapter`` (``texts``: the text of each chapter up to it), each with
    where the text plants it, where it pays off, and its status: ``open`` (planted, not yet paid off),
    ``overdue`` (its planned chapter is reached and the text has not shown it), ``never-planted`` (a clue no
    chapter before its reveal shows), ``paid-off``, ``to-come``, or ``untraceable`` (a value the text cannot
    show in words, such as yes/no).

    - A reveal (a claim with a reveal, a planned ``first_shown_chapter``, or decisive evidence) is planted where
      the text first shows it and paid off in the first chapter from its planned one whose text shows it (with
      no planned chapter: where the text first shows it).
    - A clue (a reveal's decisive evidence) is planted where the text first shows it and paid off with its
      reveal, when it was planted before it. It is never planted once the reveal's chapter is reached and no
      chapter before it shows the clue; overdue when its own planned chapter is reached unshown.
    - The charter's promise is planted in the first chapter that names a codex entry the promise names, and paid
      off when every reveal about those entries has paid off (in the chapter of the last). A promise whose
      entries no reveal concerns stays open: the text alone cannot say it is kept. One that names no entry is
      untraceable.
    """
    texts = {n: t for n, t in texts.items() if n <= chapter}
    scan = Scanner(entries)
    names = {e.id: e.name for e in entries}
    clues_of: dict[str, list[Claim]] = {}
    for claim in claims:
        if claim.decisive and claim.evidence_for_id:
            clues_of.setdefault(claim.evidence_for_id, []).append(claim)
    reveals = [c for c in claims if c.reveal != "none" or c.first_shown_chapter is not None or c.id in clues_of]
    items: list[dict] = []
    paid_of: dict[str, int | None] = {}

    def words(claim: Claim) -> str:
        return f"{names.get(claim.entry_id, 'its subject')} {claim.predicate} {claim.value}"

    def item(kind: str, claim: Claim, **rest) -> dict:
        return {
            "kind": kind,
            "claim_id": claim.id,
            "entry_id": claim.entry_id,
            "reveal_id": claim.evidence_for_id if kind == "clue" else None,
            "words": words(claim),
            "planned_chapter": claim.first_shown_chapter,
            **rest,
        }

    for reveal in reveals:
        if reveal.entry_id is None or _value_text(reveal.value) is None:
            paid_of[reveal.id] = None
            items.append(
                item(
                    "reveal", reveal, first_shown_in_text=None, planted_in=None, paid_off_in=None, status="untraceable"
                )
            )
            continue
        shown = first_shown(scan, reveal, texts)
        planned = reveal.first_shown_chapter
        paid = first_shown(scan, reveal, {n: t for n, t in texts.items() if planned is None or n >= planned})
        paid_of[reveal.id] = paid
        status = _status(paid=paid, planted=shown, overdue=planned is not None and planned <= chapter)
        items.append(
            item("reveal", reveal, first_shown_in_text=shown, planted_in=shown, paid_off_in=paid, status=status)
        )

    by_id = {c.id: c for c in reveals}
    for reveal_id, clues in clues_of.items():
        reveal = by_id.get(reveal_id)
        if reveal is None:  # evidence for a claim that is not canon: no reveal to pay it off
            continue
        due = reveal.first_shown_chapter if reveal.first_shown_chapter is not None else paid_of.get(reveal_id)
        for clue in clues:
            if clue.entry_id is None or _value_text(clue.value) is None:
                items.append(
                    item(
                        "clue", clue, first_shown_in_text=None, planted_in=None, paid_off_in=None, status="untraceable"
                    )
                )
                continue
            shown = first_shown(scan, clue, texts)
            in_time = shown is not None and (due is None or shown < due)
            never = due is not None and due <= chapter and not in_time
            paid = paid_of.get(reveal_id) if in_time else None
            own = clue.first_shown_chapter
            status = _status(
                paid=paid, planted=shown, overdue=own is not None and own <= chapter and shown is None, never=never
            )
            items.append(
                item("clue", clue, first_shown_in_text=shown, planted_in=shown, paid_off_in=paid, status=status)
            )

    for promise in promises:
        named = [e.id for e in entries if scan.mentions(e.id, promise)]
        base = {
            "kind": "promise",
            "claim_id": None,
            "entry_id": named[0] if named else None,
            "reveal_id": None,
            "words": promise,
            "planned_chapter": None,
            "first_shown_in_text": None,
        }
        if not named:
            items.append({**base, "planted_in": None, "paid_off_in": None, "status": "untraceable"})
            continue
        planted = _first_naming(scan, named, texts)
        about = [r for r in reveals if r.entry_id in named]
        paid = None
        if about and all(paid_of.get(r.id) is not None for r in about):
            paid = max(paid_of[r.id] for r in about)
        base["first_shown_in_text"] = planted
        items.append(
            {
                **base,
                "planted_in": planted,
                "paid_off_in": paid,
                "status": _status(paid=paid, planted=planted, overdue=False),
            }
        )
    return items
