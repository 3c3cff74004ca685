"""The continuity check over a manuscript (issue 28), timed against a plain alias scan of it (the floor).

The check is Luna's offline rules (``discovery.continuity.check_chapter``, what her run calls once it has read the
manuscript): the last chapter's text against a codex of entries with aliases and approved canon with story records
(reveals held back, decisive evidence, entries alive only for some chapters), reading the earlier chapters' text
for the evidence a reveal needs and for where a fact was first shown. The manuscript is ``--words`` words in all,
in ``--chapters`` chapters of equal length. The floor is the least any check by names must do over the text it
reads: every entry's name and alias compiled into one regular expression (an alternation, longest first) and every
match found in every chapter. Both run interleaved in the same rounds; the ratio is the check's median over the
floor's, per round. The check of a manuscript half as long (each chapter cut to half) is timed too, so its growth
with the text shows (2x words: about 2x time when it is linear).

    python -m bench.bench_continuity --words 20000 --entries 200 --claims 500
"""

from __future__ import annotations

import random
import re

from bench import common

SIZES = {
    "small": {"words": 10_000, "entries": 200, "claims": 500, "chapters": 6, "rounds": 3},
    "medium": {"words": 30_000, "entries": 200, "claims": 500, "chapters": 10, "rounds": 3},
    "large": {"words": 100_000, "entries": 200, "claims": 500, "chapters": 20, "rounds": 3},
}
MENTION_SHARE = 0.08  # the share of sentences that name an entry


def _name(rng: random.Random) -> str:
    syllables = ["ar", "bel", "cor", "dun", "el", "fen", "gar", "hal", "is", "jor", "kel", "lin", "mor", "nes"]
    return "".join(rng.choice(syllables) for _ in range(rng.randint(2, 3))).capitalize()


def build_manuscript(text: common.ZipfText, *, words: int, entries: int, claims: int, chapters: int) -> dict:
    """A codex of ``entries`` (full name, first name, a descriptive alias), ``claims`` approved claims with story
    records over them, and a manuscript of ``words`` words in ``chapters`` chapters of equal length that names the
    entries in about one sentence in twelve: the last chapter to check and the earlier ones. Fixed by the seed."""
    from discovery.continuity import Claim, Entry

    rng = random.Random(common.SEED)
    codex, seen = [], set()
    while len(codex) < entries:
        first, last = _name(rng), _name(rng)
        if first in seen or f"{first} {last}" in seen:
            continue
        seen.update({first, f"{first} {last}"})
        alias = f"the {text.words[rng.randint(50, 400)]} of {last}"
        codex.append(Entry(f"e{len(codex)}", f"{first} {last}", (first, alias)))
    number = chapters
    canon = []
    for index in range(claims):
        entry = codex[index % entries]
        story: dict = {}
        shape = index % 5
        if shape == 0:  # alive for the first chapters only
            canon.append(Claim(f"c{index}", entry.id, "is alive", "yes", 1, rng.randint(1, number)))
            continue
        if shape == 1:  # held back until a later chapter (or from the reader altogether)
            story = {"first_shown_chapter": number + rng.randint(0, 3)} if index % 2 else {"known_by": "nobody"}
        if shape == 2:  # a reveal in this chapter, with decisive evidence to have shown before it
            story = {"first_shown_chapter": number, "reveal": "solution"}
        value = " ".join(text.words_for(2))
        canon.append(Claim(f"c{index}", entry.id, "carries", value, **story))
        if shape == 2:
            evidence = codex[(index * 7) % entries]
            canon.append(
                Claim(
                    f"d{index}",
                    evidence.id,
                    "keeps",
                    " ".join(text.words_for(2)),
                    decisive=True,
                    evidence_for_id=f"c{index}",
                )
            )
    canon = canon[:claims]

    def chapter_text(count: int) -> str:
        sentences = text.paragraph(count).split(". ")
        for i in range(len(sentences)):
            if rng.random() < MENTION_SHARE:
                entry = rng.choice(codex)
                sentences[i] = f"{rng.choice(entry.names)} {rng.choice(['said', 'walked', 'looked'])} {sentences[i]}"
        return ". ".join(sentences)

    length = max(100, words // chapters)
    earlier = {n: chapter_text(length) for n in range(1, number)}
    return {"number": number, "text": chapter_text(length), "entries": codex, "claims": canon, "earlier": earlier}


def halved(book: dict) -> dict:
    """The same book with each chapter cut to its first half: a manuscript half as long."""
    return {
        **book,
        "text": book["text"][: len(book["text"]) // 2],
        "earlier": {n: t[: len(t) // 2] for n, t in book["earlier"].items()},
    }


def manuscript(book: dict) -> list[str]:
    """Every chapter's text: what the check reads."""
    return [*book["earlier"].values(), book["text"]]


def alias_scanner(entries) -> re.Pattern:
    """The floor: every name and alias in one alternation (longest first, so a full name wins over its first
    name), bounded as the check bounds a name."""
    names = sorted({n for e in entries for n in e.names if n.strip()}, key=len, reverse=True)
    return re.compile(r"(?<![\w'’-])(?:" + "|".join(re.escape(n) for n in names) + r")(?![\w-])", re.IGNORECASE)


def check(book: dict, text: str) -> list[dict]:
    from discovery.continuity import check_chapter, lowercase_words

    return check_chapter(
        number=book["number"],
        text=text,
        entries=book["entries"],
        claims=book["claims"],
        earlier=book["earlier"],
        known_lower=lowercase_words([text, *book["earlier"].values()]),
    )


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("The continuity check against a plain alias scan", args)
    common.setup_django("continuity")
    report = common.Report("continuity", args.size)
    words = common.ZipfText(common.SEED, vocabulary=5_000)
    book = build_manuscript(words, words=args.words, entries=args.entries, claims=args.claims, chapters=args.chapters)
    half = halved(book)
    scanner = alias_scanner(book["entries"])

    def scan(b: dict) -> list:
        return [scanner.findall(t) for t in manuscript(b)]

    ours = common.Samples(f"check, {args.words} words")
    ours_half = common.Samples(f"check, {args.words // 2} words")
    floor = common.Samples(f"alias scan, {args.words} words (floor)")
    found = check(book, book["text"])  # warm-up: imports and the regex cache
    matches = sum(len(m) for m in scan(book))
    common.interleaved([(ours, lambda b: check(b, b["text"])), (floor, scan)], [book], rounds=args.rounds)
    common.interleaved([(ours_half, lambda b: check(b, b["text"]))], [half], rounds=args.rounds)

    common.print_title(
        f"A manuscript of {args.words} words in {args.chapters} chapters, the last one checked; "
        f"{args.entries} entries with aliases, {len(book['claims'])} claims"
    )
    common.print_timings([floor, ours, ours_half], floor)
    report.ratio("continuity check / alias scan (the manuscript)", common.round_ratios(ours, floor))
    growth = ours.median_ms / ours_half.median_ms if ours_half.median_ms else float("nan")
    report.figures["check ms"] = ours.median_ms
    report.figures["check ms at half the text"] = ours_half.median_ms
    report.figures["alias scan ms"] = floor.median_ms
    report.figures["growth, 2x the text"] = growth
    report.figures["findings"] = len(found)
    report.figures["alias matches"] = matches
    report.note(f"2x the text takes {growth:.2f}x the time (linear is about 2); {len(found)} findings, {matches} names")
    report.save()
    return report


if __name__ == "__main__":
    main()
