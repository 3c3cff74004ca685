"""The curated craft library's passages beyond the first five (seed 001; issue 26, "something for Luna to read").

Original editorial guidance written for NovelGraph by the NovelGraph team and licensed with it (see
:data:`library.seed.CURATED_LICENSE`). Each source groups the passages of one shelf: the foundations every
book shares (applicability ``general``), then one shelf per genre whose passages apply to that genre
(applicability: the genre's slug, also listed among their topics so a search for the genre finds them).

The agents look up these passages by the words of the charter field they are asked about (premise, protagonist,
conflict and stakes, reader promise, ending, genre contract, theme, narrative form, constraints), so every
genre shelf speaks to each of them; ``tests/test_library_curated.py`` checks that it does.

Three words stay out of these passages on purpose: "causality" (only *Scene causality* uses it, so a search for
it finds that one passage), and "twist", "feel"/"earned" (the natural question "how do I make a twist feel
earned?" finds *Promise and payoff* and then *Fair-play mystery*, as the README and the tour show).
"""

from __future__ import annotations

import re
import unicodedata

# Canonical genre slugs and the words a book's genre (free text, e.g. "cozy mystery", "Sci-Fi", "YA fantasy")
# is recognised by. A book may be of several ("YA fantasy": young-adult and fantasy).
GENRES: dict[str, tuple[str, ...]] = {
    "mystery": ("mystery", "mysteries", "detective", "crime", "whodunit", "whodunnit", "noir", "police"),
    "romance": ("romance", "romantic", "love", "romcom"),
    "fantasy": ("fantasy", "epic", "sword", "sorcery", "fae", "fairy", "mythic"),
    "thriller": ("thriller", "suspense", "espionage", "spy", "techno", "psychological"),
    "literary": ("literary", "literature", "upmarket"),
    "science-fiction": ("science", "sf", "scifi", "sci", "space", "cyberpunk", "dystopia", "dystopian", "speculative"),
    "horror": ("horror", "gothic", "ghost", "supernatural", "haunted"),
    "young-adult": ("ya", "young", "teen", "adult", "coming", "middle"),
    "historical": ("historical", "history", "period", "regency", "victorian", "medieval"),
}
# Words that alone would mis-file a genre ("adult" in "adult fiction", "science" in "political science").
_NEEDS_PARTNER = {"adult": "young", "science": "fiction", "coming": "age", "middle": "grade", "sword": "sorcery"}


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text or "")
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def genres_of(genre_pack: str | None) -> list[str]:
    """The genre slugs a book's genre names, in :data:`GENRES` order; a genre we do not know is kept as its
    own slug (so passages staff file under it are preferred too); ``[]`` for a book without a genre.

    "Cozy mystery" -> ["mystery"]; "YA fantasy" -> ["fantasy", "young-adult"]; "Sci-Fi" ->
    ["science-fiction"]; "Western" -> ["western"].
    """
    words = re.findall(r"[a-z]+", _fold(genre_pack or ""))
    if not words:
        return []
    present = set(words)
    found = []
    for slug, aliases in GENRES.items():
        for alias in aliases:
            partner = _NEEDS_PARTNER.get(alias)
            if alias in present and (partner is None or partner in present):
                found.append(slug)
                break
    if found:
        return found
    return ["-".join(words)[:100]]


def _shelf(title: str, applicability: str, entries: list[tuple[str, list[str], str]]) -> dict:
    topics_extra = [] if applicability == "general" else [applicability.replace("-", " ")]
    return {
        "title": title,
        "applicability": [applicability],
        "entries": [
            {"title": name, "topics": topics + [t for t in topics_extra if t not in topics], "content": content}
            for name, topics, content in entries
        ],
    }


FOUNDATIONS = _shelf(
    "NovelGraph Craft Library: Foundations",
    "general",
    [
        (
            "Premise in one sentence",
            ["premise", "main thrust", "core", "pitch", "promise"],
            "A working premise names a particular person, what they want, what stands in the way and why it "
            "matters now, in one sentence. If you cannot write it, the book is still a situation and not yet a "
            "story. Test the sentence against every chapter idea: each should serve the main thrust, complicate "
            "it or pay it off. Revise the premise as discovery teaches you, but keep one version current so "
            "that every collaborator argues with the same sentence.",
        ),
        (
            "Want and need",
            ["protagonist", "character", "want", "need", "arc", "agency"],
            "Give the protagonist a conscious want the reader can track (catch the killer, win the house, "
            "get home) and an unspoken need the story forces into the open (to trust, to forgive, to stop "
            "hiding). The plot tests the want; the ending answers the need. The richest climaxes make the two "
            "pull against each other, so that getting what they want would cost them what they need, and the "
            "choice between them shows who the character has become.",
        ),
        (
            "Central conflict and opposition",
            ["conflict", "central conflict", "antagonist", "opposition", "obstacle"],
            "The central conflict is the one opposition the whole book cannot settle until the end. Make the "
            "opposing force specific, motivated and at least as capable as the protagonist; an antagonist who "
            "believes they are right is harder to beat than one who is merely cruel. Secondary obstacles should "
            "come from the same source or sharpen it. If the conflict could be solved by one honest "
            "conversation, supply the reason that conversation cannot happen.",
        ),
        (
            "Stakes that escalate",
            ["stakes", "escalation", "consequence", "conflict", "tension"],
            "Stakes are what the protagonist loses if they fail, stated concretely enough that the reader can "
            "picture the loss. Escalate them along three lines: external (more people, more danger), personal "
            "(closer to what the character loves) and internal (closer to who they believe they are). Raise "
            "them through events, not announcements, and make sure the final stakes are ones only this "
            "protagonist can lose.",
        ),
        (
            "Choosing a point of view",
            ["point of view", "pov", "viewpoint", "narrative form", "narrator", "narrative"],
            "Point of view decides what the reader can know and when. First person gives intimacy and a voice "
            "but limits the reader to one mind; close third allows several viewpoint characters with clear "
            "breaks between them; omniscience allows commentary and irony but demands a confident narrator. "
            "Choose the viewpoint that keeps the central question open longest, and change viewpoint only at "
            "scene or chapter breaks, each time for a reason the reader can sense.",
        ),
        (
            "Structure in movements",
            ["structure", "acts", "midpoint", "narrative form", "form", "plot"],
            "Most long stories move in three or four parts: a setup that ends when the protagonist commits, a "
            "rising middle of attempts and complications, a midpoint that changes what the struggle is about, "
            "and a final movement in which the protagonist acts on what the story has taught them. Treat these as "
            "checkpoints rather than a formula. For each movement, write the question it opens and the "
            "decision that closes it; a movement with no decision usually sags.",
        ),
        (
            "Pacing by scene and sequel",
            ["pacing", "scene", "sequel", "rhythm", "structure"],
            "Pace comes from alternating action with reaction. A scene puts a goal against resistance and ends "
            "in a setback or a gain; the sequel that follows lets the character absorb the outcome, weigh the "
            "options and choose the next goal. Shorten sequels to speed the book up, lengthen them to deepen "
            "it. Vary the length of chapters and sentences with the tension, and never let two quiet "
            "chapters meet without a question pulling the reader across.",
        ),
        (
            "Setting as pressure",
            ["setting", "place", "world", "atmosphere", "worldbuilding"],
            "A setting earns its pages when it acts on the characters: weather that strands them, a town that "
            "remembers, a workplace with rules that cost something to break. Choose details the viewpoint "
            "character would notice, filtered through their mood and expertise, rather than an inventory. Fix "
            "the facts of the place (distances, timetables, who owns what) early, because readers notice when "
            "a journey takes a day in chapter three and an hour in chapter twenty.",
        ),
        (
            "Theme as a question",
            ["theme", "themes", "meaning", "thematic questions", "question"],
            "Theme works best as a question the story keeps testing rather than a message it delivers: can "
            "loyalty survive the truth, is justice the same as revenge. Let different characters embody "
            "different answers, and let the plot put pressure on each. The ending may answer the question, "
            "refuse to, or answer it at a cost, but it should be the story's events that answer it and not a "
            "character's speech.",
        ),
        (
            "Voice",
            ["voice", "style", "tone", "narrator", "narrative"],
            "Voice is the sum of choices about diction, rhythm, what is noticed and what is left unsaid. Decide "
            "early whose voice carries the narration (the character's, an implied author's, a storyteller's) "
            "and keep its vocabulary consistent with its knowledge and age. Read pages aloud: a voice that "
            "holds survives being heard. Strong voice is a promise in its own right, so keep it steady through "
            "the quiet chapters as well as the dramatic ones.",
        ),
        (
            "Endings that resolve and resonate",
            ["ending", "endings", "climax", "resolution", "payoff", "ending horizon"],
            "An ending resolves the central conflict through the protagonist's action, answers the book's main "
            "question, and leaves an image or choice that resonates after the page. Decide what is settled "
            "and what is deliberately left open, and make the open parts read as chosen rather than forgotten. "
            "Work backwards: every element the climax uses should have appeared earlier, and every major "
            "thread should be closed, transformed or consciously handed to a sequel.",
        ),
        (
            "Secrets and who knows what",
            ["secrets", "knowledge", "dramatic irony", "reveal", "information"],
            "Keep a ledger of who knows each secret and from which chapter: the protagonist, the antagonist, "
            "the reader. When the reader knows more than a character, you get suspense and dramatic irony; "
            "when a character knows more than the reader, you get mystery, which must be paid off. Decide for "
            "each secret where it is first hinted, where it is revealed and what changes because it is known. "
            "A secret nobody acts on is only withheld information.",
        ),
        (
            "Series continuity",
            ["series", "continuity", "canon", "series bible", "constraints"],
            "A series makes two promises: each book satisfies on its own, and the whole grows. Keep a series "
            "record of established facts (names, ages, injuries, who knows which secret, what each book "
            "revealed) and check every new book against it before drafting. Give each volume its own central "
            "conflict and ending, while one longer question advances. When you must change an established "
            "fact, do it on the page and make the change part of the story.",
        ),
        (
            "Constraints as creative rules",
            ["constraints", "rules", "limits", "trust", "conventions"],
            "State the book's constraints plainly: what it must never do (cheat the reader, kill the dog, "
            "break the magic's cost), what is already fixed by the series or the premise, and what the genre "
            "obliges. Constraints protect the reader's trust and also generate ideas, because a problem with "
            "limits has shapes a problem without them lacks. Review them before each major decision, and "
            "change one only deliberately, writing down why.",
        ),
        (
            "Openings that make a promise",
            ["opening", "hook", "first chapter", "promise", "reader promise"],
            "The first pages teach the reader how to read the book: its voice, its genre, its kind of question. "
            "Open on a character doing something under some pressure, in a situation that already implies the "
            "central conflict. Withhold backstory until the reader wants it. By the end of the first chapter, "
            "the reader should know whose story it is, what they want right now, and what sort of ending to "
            "hope for or fear.",
        ),
        (
            "Subplots that serve the spine",
            ["subplot", "structure", "secondary characters", "main thrust", "theme"],
            "A subplot earns its place when it mirrors, contrasts or complicates the main thrust: a secondary "
            "romance that tests the protagonist's fear of commitment, a rival's case that shows another answer "
            "to the theme. Give each subplot its own small arc and let it cross the main line at moments of "
            "decision. Subplots that never touch the spine are separate stories and belong in another book.",
        ),
    ],
)

MYSTERY = _shelf(
    "NovelGraph Craft Library: Mystery",
    "mystery",
    [
        (
            "The mystery premise: a question worth solving",
            ["premise", "promise", "reader promise", "question", "crime"],
            "A mystery's premise is a question the reader cannot stop asking: who did this, how, and why. The "
            "crime should be specific and strange enough to need a solution, and it should threaten something "
            "the detective cares about. The promise made on the first pages is that the answer exists, is "
            "reachable from the evidence, and will make sense of everything shown. Open on the crime or close "
            "to it, and let the stakes of the investigation rise as it goes.",
        ),
        (
            "The detective's reason to care",
            ["protagonist", "detective", "character", "agency", "want", "need"],
            "Professional or amateur, the detective needs a reason to investigate that is stronger than "
            "curiosity: a friend accused, a failure to atone for, a job at risk. Their method defines them, so "
            "show it working and failing. Make the solution depend on a choice or insight only this detective "
            "could reach, and let the case press on the wound their private story is about. A detective who "
            "is unchanged by the case is a device, not a protagonist.",
        ),
        (
            "Planting clues in plain sight",
            ["clues", "fair play", "evidence", "misdirection", "scene"],
            "Plant each decisive clue in a scene where the reader's attention is elsewhere: mention it in a "
            "list, during an argument, or as part of a detail that seems to matter for another reason. Show "
            "it clearly enough that a rereader finds it at once. Keep a clue table: the clue, the chapter of "
            "its first appearance, how it is camouflaged, and what it proves. The fairest clues are ones the "
            "reader saw, understood literally and interpreted wrongly.",
        ),
        (
            "Red herrings that play fair",
            ["red herring", "suspects", "fair play", "misdirection", "trust"],
            "A red herring is a true fact that points to a false conclusion, never a lie told by the narrator. "
            "Give each false trail its own explanation, revealed before or during the solution, so that the "
            "reader's trust grows rather than breaks. Make suspects plausible through motive, means and "
            "opportunity, and retire them one by one at a rhythm that keeps the middle moving. A herring "
            "that is never explained reads as a loose end.",
        ),
        (
            "The conventions of the fair-play contract",
            ["genre", "conventions", "contract", "fair play", "expectations", "constraints", "trust"],
            "Mystery readers expect a crime early, a limited set of suspects, a culprit met before the solution, "
            "and every decisive clue shown before the reveal. They do not forgive a culprit introduced in the "
            "last chapter, an unknown poison, a secret twin, or a detective who hides what they found. Treat "
            "these as constraints for the whole book, including sequels: list what the reader must have seen "
            "before the solution, and check the list against the draft.",
        ),
        (
            "Suspects and the closed circle",
            ["suspects", "culprit", "conflict", "stakes", "central conflict"],
            "The central conflict of a mystery is between the detective and a culprit who is hiding in plain "
            "sight. A closed circle of suspects (a house, a ship, a village, a firm) keeps the field small "
            "enough to be fair and the pressure high enough to matter. Give every suspect a secret, so that "
            "each one has reasons to lie that are unrelated to the crime, and raise the stakes with a second "
            "crime, a wrong arrest or a threat to the detective.",
        ),
        (
            "The solution scene",
            ["ending", "reveal", "solution", "payoff", "denouement"],
            "The solution must explain every decisive clue, every red herring and the culprit's behaviour in "
            "earlier scenes. Reveal it through action as much as explanation: a trap, a confrontation, a test "
            "that proves the answer. Let the reader experience recognition (of course) rather than bafflement "
            "(who?). After the reveal, a short denouement shows the cost of the truth for the people who had "
            "to hear it.",
        ),
        (
            "What a mystery is about",
            ["theme", "themes", "meaning", "justice", "truth"],
            "Beneath the puzzle a mystery asks what justice is, what the truth costs, and who is harmed by "
            "knowing it. Let the motive carry the theme: a crime of love, of fear or of greed says something "
            "about the world the detective restores, or fails to. The detective's private wound and the "
            "culprit's reasons should answer the same question in different ways.",
        ),
        (
            "Structuring the investigation",
            ["structure", "pacing", "narrative form", "point of view", "investigation", "knowledge"],
            "Shape the investigation in phases: the crime and the first theory, the widening circle of "
            "suspects, a midpoint discovery that overturns the first theory, a darkest moment when the "
            "detective is wrong or in danger, and the solution. Keep the viewpoint close to the detective so "
            "the reader sees what they see, but hold back their conclusions rather than their observations. "
            "Pace the chapters by interviews and discoveries, each one changing who looks guilty.",
        ),
    ],
)

ROMANCE = _shelf(
    "NovelGraph Craft Library: Romance",
    "romance",
    [
        (
            "The romance promise",
            ["premise", "promise", "reader promise", "happy ending", "relationship"],
            "A romance promises that the central relationship is the story and that it ends in a committed, "
            "emotionally satisfying union (happily ever after, or happy for now). The premise names two people "
            "and the reason they cannot simply be together. Signal the promise on the first pages through the "
            "meet and the tone, so the reader knows what to hope for, and deliver it in a way they could not "
            "have predicted.",
        ),
        (
            "Two protagonists, two arcs",
            ["protagonist", "character", "agency", "want", "need", "point of view"],
            "Most romances have two protagonists, each with a want, a wound and a need that the other person "
            "exposes. Give both of them agency: each makes choices that move the relationship forward or back. "
            "Dual point of view lets the reader see both hearts, while a single viewpoint creates mystery about "
            "the beloved; choose knowingly. Each lover should become someone who can love the other by the end.",
        ),
        (
            "What keeps them apart",
            ["conflict", "central conflict", "obstacle", "stakes", "internal conflict"],
            "The central conflict of a romance is the force that keeps two right people apart. External "
            "obstacles (rivalry, distance, family, duty) give the plot its events; internal ones (fear, "
            "shame, a belief about love) give it depth, and the best romances make the external obstacle "
            "press on the internal one. Stakes are emotional first: what each stands to lose by risking love, "
            "and by not risking it.",
        ),
        (
            "The conventions readers expect in romance",
            ["genre", "conventions", "contract", "expectations", "constraints", "trust", "tropes"],
            "Readers of romance expect the meet, rising attraction, a deepening bond, a crisis that seems to "
            "end it, a grand gesture or choice, and the ending that commits. Tropes (enemies to lovers, fake "
            "relationship, second chance) are promises about which pleasures the book will deliver; honour the "
            "trope's core even when you turn it. Never betray the ending: a romance that ends apart breaks the "
            "contract, whatever else it achieves.",
        ),
        (
            "The dark moment and the ending",
            ["ending", "payoff", "climax", "dark moment", "grand gesture", "reveal"],
            "Late in the book, the relationship should seem lost because of the very flaw or fear each lover has "
            "not yet faced. The resolution comes when one or both act against that fear: the confession, the "
            "choice of the other over safety, the reveal of what they hid. Pay off the small promises of the "
            "middle (a joke, a place, an object) in the final scenes, and give the reader time to enjoy the "
            "union before the book closes.",
        ),
        (
            "What a love story is about",
            ["theme", "themes", "meaning", "vulnerability", "intimacy"],
            "Romance explores what it takes to be known and chosen. Its themes are trust, vulnerability, "
            "self-worth and the difference between being needed and being loved. Let the lovers disagree "
            "about the theme at first, through their beliefs about love, and let the relationship change "
            "their answer. The meaning is in the change, not in the wedding.",
        ),
        (
            "Pacing the relationship",
            ["pacing", "structure", "scene", "narrative form", "tension", "beats"],
            "Pace a romance by the relationship's beats: each scene between the lovers should change the "
            "distance between them, closer or further. Alternate progress with retreat, and let physical and "
            "emotional intimacy advance at different speeds so there is always something still at stake. In a "
            "romance with another plot (a case, a war, a business), the two lines should reach their crises "
            "together.",
        ),
    ],
)

FANTASY = _shelf(
    "NovelGraph Craft Library: Fantasy",
    "fantasy",
    [
        (
            "The fantasy premise and its wonder",
            ["premise", "promise", "reader promise", "wonder", "main thrust"],
            "A fantasy premise pairs a human problem with an element the real world lacks: a magic, a "
            "creature, a history, a place. The promise is wonder with consequences, a world the reader wants "
            "to stay in and a struggle that the world's strangeness makes harder. Introduce the strange "
            "element through the protagonist's problem, not an atlas, and let the first chapters show one "
            "marvel and one cost.",
        ),
        (
            "Worldbuilding that earns its place",
            ["worldbuilding", "setting", "world", "history", "culture", "constraints"],
            "Build more of the world than you show, and show only what the story needs at the moment the "
            "character needs it. Cultures, economies and histories should put pressure on the plot: who may "
            "marry whom, who owns the roads, what the old war still decides. Keep a world record of "
            "established facts (names, distances, calendars, laws) and treat it as canon; inconsistency "
            "breaks immersion faster than any other flaw.",
        ),
        (
            "Magic with rules and costs",
            ["magic", "magic system", "rules", "constraints", "trust", "conventions", "stakes"],
            "Magic that can solve any problem removes the stakes. Decide what it can and cannot do, what it "
            "costs and who can use it, and show those limits before the climax depends on them. The more a "
            "resolution relies on magic, the better the reader must understand its rules; mysterious magic "
            "can create problems but should rarely solve them. A cost paid at the climax should have been "
            "named much earlier.",
        ),
        (
            "The fantasy protagonist",
            ["protagonist", "character", "agency", "choice", "chosen one"],
            "Whether farmhand or queen, the fantasy protagonist must drive the plot by choice rather than be "
            "carried by prophecy. If destiny is in play, make the character choose it, resist it or redefine "
            "it. Ground them in a personal want inside the epic struggle (a sister to save, a name to clear), "
            "so that the reader can care at human scale while the world is at stake.",
        ),
        (
            "Conflict at two scales",
            ["conflict", "central conflict", "stakes", "war", "antagonist"],
            "Fantasy often sets a personal conflict inside a larger one: a quarrel inside a war, a duty "
            "against a love. Keep the two linked, so that the protagonist's private choices change the "
            "public struggle and the public struggle forces the private choices. Give the antagonist a "
            "coherent claim on the world, and make stakes concrete: which village burns, which name is "
            "forgotten.",
        ),
        (
            "The fantasy contract",
            ["genre", "conventions", "contract", "expectations", "subgenre"],
            "Fantasy readers expect an immersive world, consistent internal logic, and a struggle whose "
            "outcome matters to that world. Subgenres narrow the contract: epic fantasy promises scope and "
            "many lives, urban fantasy a hidden world inside ours, cosy fantasy low stakes and warmth, grimdark "
            "moral cost. Name the subgenre to yourself, and deliver its central pleasure in every act.",
        ),
        (
            "Ending a fantasy",
            ["ending", "payoff", "climax", "reveal", "series"],
            "The climax should turn on the rules the reader has come to know: the magic's cost paid, the old law "
            "invoked, the prophecy read correctly at last. Reveal hidden history only if it has been seeded. "
            "In a series, close this volume's central conflict and let the larger one advance; the reader "
            "should finish satisfied and curious, not stranded.",
        ),
        (
            "Fantasy's questions",
            ["theme", "themes", "meaning", "power", "myth"],
            "Fantasy is a laboratory for questions about power, belonging and the price of change: what one "
            "owes to the world as it is, and what one may break to remake it. Let the invented world sharpen "
            "the question rather than decorate it, and let the magic's cost carry the theme.",
        ),
        (
            "Form and pacing in long fantasy",
            ["structure", "pacing", "narrative form", "point of view", "scene"],
            "Long fantasies often use several viewpoints; give each its own arc and question, and rotate them "
            "so that every chapter ends where the reader wants to continue. Keep travel and exposition brief, "
            "and pace the book by decisions rather than distances. A map, a glossary or an epigraph can help, "
            "but the story should be clear without them.",
        ),
    ],
)

THRILLER = _shelf(
    "NovelGraph Craft Library: Thriller",
    "thriller",
    [
        (
            "The thriller premise: danger with a clock",
            ["premise", "promise", "reader promise", "danger", "clock"],
            "A thriller promises danger that rises until the last pages. Its premise names a threat, a "
            "protagonist who must stop it, and a deadline: the bomb, the trial, the election, the child "
            "missing for forty-eight hours. Start with the threat in motion, and make the reader sense the "
            "clock from the first chapter.",
        ),
        (
            "The protagonist under pressure",
            ["protagonist", "character", "agency", "choice", "competence"],
            "A thriller protagonist is defined by what they do under pressure. Give them a competence that "
            "helps and a flaw or bond that the antagonist can exploit, and keep them acting, not waiting to be "
            "rescued. Each choice should close options, so that by the climax they must risk what they value "
            "most. Ordinary heroes in extraordinary danger work as well as experts, if their decisions are "
            "believable.",
        ),
        (
            "Antagonist and escalation",
            ["conflict", "central conflict", "antagonist", "stakes", "escalation"],
            "The thriller's central conflict is a contest with an antagonist who is smart, prepared and often "
            "a step ahead. Escalate through the antagonist's plan: each move by the hero should provoke a "
            "stronger countermove. Stakes rise from personal to public or from public to personal, and the "
            "final confrontation should be one the protagonist cannot delegate.",
        ),
        (
            "Thriller conventions",
            ["genre", "conventions", "contract", "expectations", "constraints", "trust", "plausibility"],
            "Readers expect a credible threat, rising danger, a protagonist in peril, reversals, and a "
            "confrontation with the villain. Plausibility is part of the contract: research the procedures, "
            "weapons and technologies, and admit the research before relying on it. A coincidence may "
            "endanger the hero; it must never rescue them.",
        ),
        (
            "Reversals and the ending",
            ["ending", "reveal", "reversal", "payoff", "climax"],
            "Reversals keep a thriller alive: an ally turns out to be compromised, the plan was a decoy, the "
            "target was never the target. Each reversal must be prepared by facts already on the page, so that "
            "it deepens understanding rather than cancels it. The ending pays off the clock and the threat, and "
            "shows what the victory cost.",
        ),
        (
            "Pacing a thriller",
            ["pacing", "structure", "scene", "narrative form", "cliffhanger", "point of view"],
            "Short chapters, scene breaks on unanswered questions and cross-cutting between hero and "
            "antagonist drive a thriller's pace. Vary it: after a set piece, give a short breath in which the "
            "character reckons with the cost, then tighten again. Viewpoint chapters from the antagonist can "
            "create dramatic irony, as long as they do not explain away the suspense.",
        ),
        (
            "What a thriller is about",
            ["theme", "themes", "meaning", "power", "paranoia"],
            "Under the chase, thrillers ask about trust, power and what ordinary people will do to protect what "
            "they love. Let the antagonist's plan express a belief about the world that the protagonist must "
            "refute through action; the theme is proved in the climax, not argued in dialogue.",
        ),
    ],
)

LITERARY = _shelf(
    "NovelGraph Craft Library: Literary fiction",
    "literary",
    [
        (
            "The literary premise: a situation that asks",
            ["premise", "promise", "reader promise", "main thrust", "situation"],
            "Literary fiction often begins with a situation rather than a plot: a marriage after a death, a "
            "return home, a secret kept for decades. Its promise is insight, an experience of consciousness "
            "and a change, however quiet. Find the question the situation asks and let it be the main thrust, "
            "so the book has a direction even when its events are small.",
        ),
        (
            "Interior character",
            ["protagonist", "character", "interiority", "agency", "choice"],
            "In literary fiction the protagonist's inner life is the field of action. Show thought, memory "
            "and perception in the texture of the prose, and let small choices carry great weight: a call not "
            "made, a letter burned. Passivity is still a risk; a character who only observes needs a moment "
            "when observing is no longer possible.",
        ),
        (
            "Quiet conflict, real stakes",
            ["conflict", "central conflict", "stakes", "internal conflict", "relationship"],
            "Conflict in literary fiction may be internal or between people who love each other, but it must "
            "still be felt. Make the stakes concrete at the human scale: a friendship, a self-image, a way of "
            "life. Tension comes from what characters will not say; give the reader enough to sense the "
            "pressure under the surface.",
        ),
        (
            "The literary contract",
            ["genre", "conventions", "contract", "expectations", "trust", "constraints"],
            "Readers of literary fiction expect precise, distinctive language, complex characters, and "
            "meaning that rewards attention. They tolerate ambiguity but not vagueness: an open ending must "
            "still be a shaped one. Trust the reader to infer, and earn that trust with exactness of detail.",
        ),
        (
            "Endings that open outward",
            ["ending", "payoff", "epiphany", "resonance", "reveal"],
            "Literary endings often resolve in perception rather than action: a recognition, an image, a "
            "choice glimpsed. The ending should transform how the reader understands what came before. Seed "
            "the final image early, and let the last scene answer the book's question obliquely but "
            "unmistakably.",
        ),
        (
            "Theme through image and pattern",
            ["theme", "themes", "meaning", "motif", "image"],
            "In literary fiction theme lives in pattern: repeated images, echoing scenes, motifs that change "
            "meaning as the character changes. Choose two or three motifs that embody the book's question, "
            "vary them, and let the last appearance carry the weight of all the others.",
        ),
        (
            "Form as meaning",
            ["narrative form", "structure", "point of view", "voice", "time", "pacing"],
            "Form is a choice with meaning: fragmented chronology for a shattered memory, second person for "
            "estrangement, alternating timelines for inheritance. Choose a structure that enacts the theme, "
            "and make its logic legible within the first chapters. Pacing follows attention; slow down for "
            "what matters and summarise what does not.",
        ),
    ],
)

SCIENCE_FICTION = _shelf(
    "NovelGraph Craft Library: Science fiction",
    "science-fiction",
    [
        (
            "The speculative premise",
            ["premise", "promise", "reader promise", "what if", "novum"],
            "Science fiction begins with a change to the world we know (a technology, a discovery, a social "
            "order) and follows its consequences for people. State the change as a what-if and then ask who "
            "gains, who loses and what becomes possible. The promise is a world that is logically coherent and "
            "a story in which the change matters to the protagonist's fate.",
        ),
        (
            "Extrapolation and consistency",
            ["worldbuilding", "setting", "technology", "rules", "constraints", "trust"],
            "Extrapolate from the central change with discipline: if faster-than-light travel exists, what "
            "happens to war, trade and distance between families? Decide the rules of your science and keep "
            "them; readers forgive invention but not inconsistency. Introduce concepts through use and "
            "consequence rather than lectures, and record each established rule so later books keep it.",
        ),
        (
            "A protagonist inside the change",
            ["protagonist", "character", "agency", "choice"],
            "Put the protagonist where the speculative change hurts or tempts them most: the engineer who built "
            "it, the worker it replaced, the child born into it. Their choices should test the change's "
            "meaning. Ideas carry a science fiction novel only as far as a character's stake in them.",
        ),
        (
            "Conflict from the new world",
            ["conflict", "central conflict", "stakes", "antagonist", "society"],
            "Let the central conflict grow from the speculative element: resources it makes scarce, powers it "
            "creates, people it excludes. Stakes may be civilisational, but anchor them in someone the reader "
            "knows. The antagonist is often a system; give it human faces with reasons.",
        ),
        (
            "Science fiction conventions",
            ["genre", "conventions", "contract", "expectations", "subgenre"],
            "Readers expect ideas taken seriously, worlds built with care, and the sense of wonder that comes "
            "from seeing something new. Subgenres set their own expectations: hard science fiction rigorous "
            "plausibility, space opera scale and adventure, dystopia a warning, cyberpunk a street-level view "
            "of power. Know which one you are writing and what its readers hope for.",
        ),
        (
            "Endings that follow the idea through",
            ["ending", "payoff", "reveal", "resolution"],
            "A science fiction ending should follow the central idea to a consequence the reader did not "
            "foresee but recognises as inevitable. A reveal about the nature of the world must be supported "
            "by details planted earlier. Resolve the protagonist's fate and let the world's fate remain "
            "larger than any one person.",
        ),
        (
            "What the future says about now",
            ["theme", "themes", "meaning", "society", "humanity"],
            "Science fiction's themes are questions about the present carried into other worlds: what makes "
            "a person, what we owe the future, how power uses tools. Let the speculative element embody the "
            "question and let characters take different sides of it.",
        ),
        (
            "Exposition and pacing in science fiction",
            ["pacing", "structure", "narrative form", "exposition", "scene", "point of view"],
            "Information is the heavy load of science fiction. Deliver it in scenes where someone needs it, "
            "in conflict, in small pieces; trust the reader to infer from context. A close viewpoint who takes "
            "their world for granted teaches it most naturally. Keep the plot moving while the world unfolds.",
        ),
    ],
)

HORROR = _shelf(
    "NovelGraph Craft Library: Horror",
    "horror",
    [
        (
            "The horror premise: what is wrong",
            ["premise", "promise", "reader promise", "dread", "fear"],
            "A horror premise names what is wrong (a presence, a contagion, a house, a person) and what the "
            "protagonist cannot escape. Its promise is fear that deepens, and a reckoning with it. Begin with "
            "normal life and one wrong detail, so the reader learns to dread the ordinary.",
        ),
        (
            "Characters worth fearing for",
            ["protagonist", "character", "agency", "choice", "vulnerability"],
            "Horror depends on the reader caring about who is in danger. Give the protagonist a life worth "
            "keeping and a vulnerability the horror targets: grief, guilt, a child, a secret. Make their "
            "choices understandable, even when the reader would choose otherwise, and let them fight back.",
        ),
        (
            "The threat and its escalation",
            ["conflict", "central conflict", "stakes", "threat", "escalation", "monster"],
            "The central conflict of horror is survival against a threat that grows stronger or closer. "
            "Escalate by revealing more of its nature and less of its limits, by isolating the characters and "
            "by taking away what protected them. The threat should embody the protagonist's fear, so the "
            "external struggle is also an internal one.",
        ),
        (
            "Horror's contract with the reader",
            ["genre", "conventions", "contract", "expectations", "trust", "constraints"],
            "Horror readers expect dread, shocks that are prepared, and consequences: people can be hurt, and "
            "the threat follows rules even when they are not explained. Decide the rules of your horror and "
            "keep them, so fear has a logic; break the reader's sense of safety, never their trust in the "
            "book.",
        ),
        (
            "Dread, suspense and shock",
            ["pacing", "structure", "scene", "suspense", "narrative form", "atmosphere"],
            "Dread is anticipation of something terrible; suspense is waiting for it; shock is its arrival. "
            "Build dread with atmosphere and wrong details, hold suspense by delaying the reveal, and spend "
            "shocks sparingly. Alternate tension with release, because fear needs contrast to stay sharp. A "
            "close, limited point of view keeps the reader as blind as the character.",
        ),
        (
            "Endings in horror",
            ["ending", "payoff", "reveal", "survival", "cost"],
            "A horror ending reveals the threat's nature or source, and settles who survives and at what cost. "
            "Victory may be partial, or the horror may persist, but the ending must resolve the story the book "
            "told. Pay off the rules set earlier; a last-page sting works only if the book has prepared it.",
        ),
        (
            "What the fear means",
            ["theme", "themes", "meaning", "fear", "guilt"],
            "Good horror is about something beneath its monster: grief, guilt, the body, the family, the past "
            "that will not stay buried. Let the threat stand for the fear the protagonist will not face, and "
            "let facing it be the story's meaning.",
        ),
    ],
)

YOUNG_ADULT = _shelf(
    "NovelGraph Craft Library: Young adult",
    "young-adult",
    [
        (
            "The young adult premise",
            ["premise", "promise", "reader promise", "coming of age", "identity"],
            "A young adult premise puts a teenage protagonist at a threshold: a first loss, a first love, a "
            "first injustice, a world that demands they choose who to be. The promise is immediacy and "
            "transformation: the reader lives the story at the age it happens. Put the threshold in the first "
            "chapters, in the protagonist's own terms.",
        ),
        (
            "A teenage protagonist with agency",
            ["protagonist", "character", "agency", "choice", "voice"],
            "The protagonist must solve their own problem; adults may help or hinder but must not rescue. "
            "Give them a strong, specific voice, with concerns that belong to their age taken seriously. "
            "Their choices can be impulsive and wrong, as long as they are theirs and cost something.",
        ),
        (
            "Conflict that matters at seventeen",
            ["conflict", "central conflict", "stakes", "identity", "family"],
            "Stakes in young adult fiction are often identity and belonging as much as survival: who I am, "
            "where I fit, whom I can trust. External conflicts (a competition, a rebellion, a mystery) "
            "should force those internal questions. Do not lower the stakes because the characters are "
            "young; to a teenager the end of a friendship is the end of a world.",
        ),
        (
            "Young adult conventions",
            ["genre", "conventions", "contract", "expectations", "trust", "constraints", "audience"],
            "Readers expect a teenage viewpoint, emotional intensity, a fast pace and an ending with hope, "
            "even when it is hard-won. Young adult is an age category, so it carries another genre's "
            "contract too: a young adult fantasy must keep fantasy's promises. Handle difficult subjects "
            "honestly and without exploitation; readers trust books that tell the truth.",
        ),
        (
            "Ending with growth",
            ["ending", "payoff", "growth", "reveal", "hope"],
            "A young adult ending shows the protagonist changed by their choices, standing at a new "
            "threshold. Resolve the central problem through their action, reveal what they understand now "
            "that they could not at the start, and leave room for the life ahead.",
        ),
        (
            "Voice and pace in young adult fiction",
            ["pacing", "structure", "narrative form", "voice", "point of view", "scene"],
            "First person or close third in the present or recent past is common because it gives immediacy. "
            "Keep the voice authentic rather than imitated: specificity of emotion matters more than slang, "
            "which dates quickly. Pace the book with short scenes and frequent turns, and let the emotional "
            "beats land before moving on.",
        ),
        (
            "Themes of becoming",
            ["theme", "themes", "meaning", "identity", "belonging"],
            "Young adult fiction asks who we become when childhood certainties break: identity, autonomy, "
            "first love, justice, belonging. Let the protagonist's answer be personal and provisional, won "
            "through experience rather than handed over by an adult's lesson.",
        ),
    ],
)

HISTORICAL = _shelf(
    "NovelGraph Craft Library: Historical fiction",
    "historical",
    [
        (
            "The historical premise",
            ["premise", "promise", "reader promise", "period", "main thrust"],
            "A historical premise sets a personal story inside a real period or event, so that history "
            "shapes the character's problem and the character's choices illuminate the history. The promise is "
            "immersion in another time and a story only that time could produce. Choose the moment when "
            "historical pressure is greatest on your protagonist.",
        ),
        (
            "Research without the lecture",
            ["research", "setting", "accuracy", "anachronism", "constraints", "trust"],
            "Research deeply, then use only what the story needs, filtered through what a person of the time "
            "would notice. Anachronisms of attitude break trust as surely as anachronisms of objects. Record "
            "your sources and your deliberate departures from the record, and tell the reader about the "
            "departures in a note; admitted research keeps the book's facts honest.",
        ),
        (
            "People of their time",
            ["protagonist", "character", "agency", "choice", "values"],
            "A historical protagonist should think within their era's assumptions, even when they push against "
            "them. Give them agency within the limits their time imposed, and let those limits be real "
            "obstacles. Real historical figures can appear, but fictional protagonists usually need room that "
            "the record cannot contradict.",
        ),
        (
            "History as conflict and stakes",
            ["conflict", "central conflict", "stakes", "history", "society"],
            "Let the central conflict arise where personal desire meets historical force: a war, a law, a "
            "plague, a revolution. The reader may know how history turns out, so locate the suspense in what "
            "happens to the characters. Stakes are sharpened by the period's dangers and by what it forbade.",
        ),
        (
            "The historical contract",
            ["genre", "conventions", "contract", "expectations", "accuracy"],
            "Readers expect a vivid and credible past, faithful to the record where the record is known, and "
            "a story that gives them an emotional way into it. Historical fiction often carries a second "
            "genre's contract (mystery, romance, adventure); keep both.",
        ),
        (
            "Endings against the record",
            ["ending", "payoff", "reveal", "history", "resolution"],
            "When the historical outcome is known, the ending's power comes from the characters' fates within "
            "it: who survives, who chooses what, what is remembered. Reveal the personal truth at the moment "
            "history closes its door, and let the note after the ending separate record from invention.",
        ),
        (
            "Why this past now",
            ["theme", "themes", "meaning", "memory", "history"],
            "Historical fiction asks what the past means to the present: what we inherited, what we forgot, "
            "who was left out of the record. Let the period's conflicts carry a question still alive today, "
            "without forcing modern opinions into period mouths.",
        ),
        (
            "Structure and voice in period fiction",
            ["structure", "pacing", "narrative form", "voice", "point of view", "timeline"],
            "Dual timelines, a framing narrator, letters or documents can bridge past and present; choose the "
            "form that serves the question. Suggest period voice through rhythm and vocabulary rather than "
            "heavy archaism, and pace research-rich chapters by the characters' decisions.",
        ),
    ],
)

SHELVES: list[dict] = [
    FOUNDATIONS,
    MYSTERY,
    ROMANCE,
    FANTASY,
    THRILLER,
    LITERARY,
    SCIENCE_FICTION,
    HORROR,
    YOUNG_ADULT,
    HISTORICAL,
]
# The genre slugs the shelves cover.
SHELF_GENRES: list[str] = [s["applicability"][0] for s in SHELVES if s["applicability"] != ["general"]]
