"""The agents' share of a whole discovery (issue 26): a new book taken to hand-off with the offline provider, the
agents' runs timed against the dossier builds they need (the floor).

Each round is one whole discovery of a new book, driven as the author's browser drives it (the pages' forms,
posted with Django's test client: the book, the start, three answers in plain sentences, "confirm all" per turn,
and her approvals of G0, G1.5, the charter, the canon Sol proposed, G2 and G3), with Sol acting on his own after
each of her acts. Each run the agents queue is executed here, in order, and timed (its dossier, its look-ups, the
rules, its writes through the services, its cost). The floor is what every one of those runs must pay and
nothing else: building and storing its role's dossier on the same book at the same moment, timed beside the run
(before it, or after it, in turn). The ratio is the agents' total over the floors' total, per discovery.

    python -m bench.bench_discovery --rounds 5
"""

from __future__ import annotations

from bench import common

SIZES = {
    "small": {"rounds": 5},
    "medium": {"rounds": 7},
    "large": {"rounds": 9},
}

PREMISE = "A lighthouse keeper finds a drowned man's letter that names her as the next to die."
# Her answers, by the charter field Sol asks about (the offline provider's questions, by field).
ANSWERS = {
    "What experience should remain with the reader": "Unease about whom to trust, and the relief of a truth that "
    "was there all along. The protagonist is Mara Quell, who keeps the lighthouse at Saltmarsh.",
    "In one sentence, what is this book about": "A keeper must prove a drowning was murder before the town "
    "buries the truth with the man.",
    "Who carries this story": "Mara Quell, who wants to be believed more than she wants to be safe.",
    "What stands in the protagonist's way": "The harbour master wants the drowning closed as an accident, and "
    "he has the whole town on his side.",
    "What should the reader be promised": "A fair puzzle with every clue on the page.",
    "How should the book end": "The truth comes out and costs Mara the light she keeps.",
    "Which genre promises": "A fair-play mystery: the culprit is on the page early.",
    "Which question about people": "Whether loyalty to a place excuses lying for it.",
    "Whose eyes do we see through": "Mara's, close third person, past tense.",
    "What must this book never do": "Never cheat the reader with a clue kept off the page.",
}


class Discovery:
    """One new book taken to hand-off; each act posted as her browser posts it, then the agents' queue worked off
    with every run timed beside its floor."""

    def __init__(self, user, index: int):
        from django.test import Client

        self.client = Client()
        self.client.force_login(user)
        self.user = user
        self.index = index
        self.runs_ns = 0
        self.floors_ns = 0
        self.runs = 0
        self.acts = 0
        self.by_task: dict[str, list[int]] = {}  # task -> [runs, run ns, floor ns]

    def post(self, path: str, data: dict | None = None) -> None:
        response = self.client.post(path, data or {})
        assert response.status_code in (200, 302), (path, response.status_code, response.content[:500])
        self.acts += 1
        self.work_off()

    def work_off(self) -> None:
        from discovery.agents.models import AgentRun, RunStatus
        from discovery.agents.services import agent_run_execute
        from discovery.services import dossier_store

        while True:
            run = AgentRun.objects.filter(book__owner=self.user, status=RunStatus.QUEUED).order_by("created_at").first()
            if run is None:
                return

            def floor(run=run) -> int:
                start = common.now_ns()
                dossier_store(book=run.book, agent_role=run.role, as_of_chapter=run.input.get("as_of_chapter"))
                return common.now_ns() - start

            floor_first = (self.runs + self.index) % 2 == 0  # A, B, then B, A: neither side always goes first
            floor_ns = floor() if floor_first else 0
            start = common.now_ns()
            done = agent_run_execute(run_id=run.pk, worker="bench")
            run_ns = common.now_ns() - start
            floor_ns = floor_ns or floor()
            assert done.status == "done", (done.task, done.reason)
            self.runs_ns += run_ns
            self.floors_ns += floor_ns
            self.runs += 1
            counts = self.by_task.setdefault(run.task, [0, 0, 0])
            counts[0], counts[1], counts[2] = counts[0] + 1, counts[1] + run_ns, counts[2] + floor_ns

    def decide(self, approval, rationale: str, **choice) -> None:
        self.post(f"/review/{approval.pk}/", {"verdict": "approve", "rationale": rationale, **choice})
        approval.refresh_from_db()
        assert approval.status == "decided", approval.status

    def to_hand_off(self) -> None:
        from approvals.models import Approval
        from discovery.loop.models import LoopMeta, OptionCard
        from discovery.models import Book, DiscoverySession, Turn

        def pending(book, kind, gate=None):
            found = Approval.objects.filter(book=book, status="pending", kind=kind)
            return (found.filter(gate=gate) if gate else found).order_by("created_at").first()

        self.post(
            "/books/new/", {"title": f"The Lighthouse Keeper {self.index}", "premise": PREMISE, "genre_pack": "mystery"}
        )
        book = Book.objects.get(owner=self.user, title=f"The Lighthouse Keeper {self.index}")
        LoopMeta.objects.filter(book=book).update(cost_budget=1e6)
        self.post(f"/books/{book.pk}/discovery/start/")
        LoopMeta.objects.filter(book=book).update(cost_budget=1e6)
        session = DiscoverySession.objects.get(book=book)
        for _ in range(3):
            session.refresh_from_db()
            answer = next(text for q, text in ANSWERS.items() if session.current_question.startswith(q))
            self.post(f"/books/{book.pk}/turns/", {"content": answer})
        for turn in Turn.objects.filter(session=session, role="author").order_by("ordinal"):
            self.post(f"/books/{book.pk}/turns/{turn.pk}/confirm/")
        self.decide(pending(book, "gate", "G0"), "This is why the book exists.")
        g15 = pending(book, "gate", "G1.5")
        thrust = OptionCard.objects.get(approval_id=g15.pk).payload["thrust"]["id"]
        self.decide(g15, "The core keeps the keeper at the centre.", thrust_id=thrust)
        self.decide(pending(book, "story-charter"), "Mara carries it.")
        for ask in list(Approval.objects.filter(book=book, status="pending", kind="canon-promotion")):
            self.decide(ask, "She is mine.")
        self.decide(pending(book, "gate", "G2"), "The charter governs the book.")
        self.decide(pending(book, "gate", "G3") or pending(book, "consent", "G3"), "Ready to draft.")
        assert LoopMeta.objects.get(book=book).status == "handed-off"


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("The agents' share of a whole discovery (offline)", args)
    vendor = common.setup_django("discovery")
    report = common.Report("discovery", args.size)

    from django.conf import settings
    from django.contrib.auth import get_user_model

    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "PROVIDER": "offline", "ACT_ON_THEIR_OWN": True}
    user = get_user_model().objects.create_user("bench-author", password="bench-author-password")

    warm = Discovery(user, 0)  # warm-up, untimed: the first discovery pays the imports and the caches
    warm.to_hand_off()
    per_round, runs_ms, floors_ms = [], [], []
    by_task: dict[str, list[int]] = {}
    for index in range(1, args.rounds + 1):
        discovery = Discovery(user, index)
        discovery.to_hand_off()
        per_round.append(discovery.runs_ns / discovery.floors_ns)
        runs_ms.append(discovery.runs_ns / 1e6)
        floors_ms.append(discovery.floors_ns / 1e6)
        for task, (n, run_ns, floor_ns) in discovery.by_task.items():
            total = by_task.setdefault(task, [0, 0, 0])
            total[0], total[1], total[2] = total[0] + n, total[1] + run_ns, total[2] + floor_ns
        print(
            f"  discovery {index}: {discovery.runs} runs in {discovery.runs_ns / 1e6:.0f} ms, their dossier builds "
            f"{discovery.floors_ns / 1e6:.0f} ms ({per_round[-1]:.2f}x); {discovery.acts} author acts"
        )

    common.print_title(f"A whole discovery on {vendor}: the agents' runs against their dossier builds")
    report.ratio("agents' runs of a whole discovery / their dossier builds (offline)", per_round)
    print("  by task (all rounds): runs, ms per run, its dossier build's ms, ratio")
    for task, (n, run_ns, floor_ns) in sorted(by_task.items(), key=lambda item: -item[1][1]):
        print(f"    {task:<15} {n:>4} {run_ns / n / 1e6:>8.1f} {floor_ns / n / 1e6:>8.1f} {run_ns / floor_ns:>6.2f}x")
        report.figures[f"task {task}"] = {
            "runs": n,
            "median_ms": run_ns / n / 1e6,
            "floor_ms": floor_ns / n / 1e6,
            "ratio": run_ns / floor_ns,
        }
    report.figures["vendor"] = vendor
    report.figures["runs per discovery"] = warm.runs
    report.figures["author acts per discovery"] = warm.acts
    report.figures["agents' runs, ms per discovery"] = common.spread(runs_ms)
    report.figures["dossier builds, ms per discovery"] = common.spread(floors_ms)
    runs_median, floors_median = common.spread(runs_ms)["median"], common.spread(floors_ms)["median"]
    report.note(
        f"{warm.runs} runs per discovery to hand-off, {warm.acts} author acts; the agents' runs took "
        f"{runs_median:.0f} ms against {floors_median:.0f} ms of dossier builds"
    )
    report.save()
    return report


if __name__ == "__main__":
    main()
