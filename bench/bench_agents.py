"""Agent runs: one offline run of each role, against the dossier build alone as the floor.

A run takes a fresh dossier for its role, looks up what its task needs (the library for Luna),
applies the offline rules and writes through the services in one transaction. The floor is the
part every run must pay and nothing else: storing the role's dossier snapshot. Each run's median
is reported as a ratio of its role's floor, measured interleaved in the same process.

    python -m bench.bench_agents --claims 1000 --scratchpad 400 --observations 100
"""

from __future__ import annotations

from bench import common

SIZES = {
    "small": {"claims": 250, "scratchpad": 200, "observations": 50, "repeat": 7},
    "medium": {"claims": 1_000, "scratchpad": 800, "observations": 200, "repeat": 7},
    "large": {"claims": 5_000, "scratchpad": 2_000, "observations": 500, "repeat": 7},
}
# (label, task, input): one offline run of each role, and the other tasks besides.
RUNS = (
    ("sol: next question (+ handoffs, gate)", "next-question", {}),
    ("luna: guidance from the library", "guidance", {"topic": "planting fair clues before the reveal"}),
    ("luna: contradictions with canon", "contradictions", {}),
    ("terra: thrust candidates", "thrusts", {}),
    ("terra: a charter draft", "charter", {}),
)


def main(argv=None) -> common.Report:
    args = common.parse_args(__doc__.splitlines()[0], SIZES, argv)
    common.header("Agent runs (offline)", args)
    vendor = common.setup_django("agents")
    report = common.Report("agents", args.size)

    from bench.data import build_book
    from discovery.access import book_access
    from discovery.agents.models import TASK_ROLE
    from discovery.agents.schemas import AgentRunIn
    from discovery.agents.services import agent_run_execute, agent_run_start
    from discovery.loop.models import LoopMeta
    from discovery.loop.services import loop_ensure
    from discovery.services import dossier_store
    from novelgraph.core.auth import Principal

    start = common.now_ns()
    bench = build_book(
        "agents",
        claims=args.claims,
        scratchpad=args.scratchpad,
        observations=args.observations,
        text=common.ZipfText(common.SEED),
    )
    loop_ensure(book=bench.book)
    # Runs cost against the loop's budget; the bench measures runs, not the bound that would pause them.
    LoopMeta.objects.filter(book=bench.book).update(cost_budget=1e9)
    print(f"  built the book in {(common.now_ns() - start) / 1e9:.1f}s")
    access = book_access(Principal(user=bench.author), bench.book)

    # Queued beforehand, so the timing is the run alone (dossier, look-ups, rules, writes, cost).
    queued = {
        task: [agent_run_start(access=access, payload=AgentRunIn(task=task, **fields)) for _ in range(args.repeat + 1)]
        for _, task, fields in RUNS
    }

    def run_once(task: str) -> None:
        done = agent_run_execute(run_id=queued[task].pop().pk)
        assert done.status == "done", (task, done.reason)

    floors = {role: common.Samples(f"floor: {role}'s dossier build") for role in ("sol", "terra", "luna")}
    runs = {label: common.Samples(label) for label, _, _ in RUNS}
    pairs = [(floors[role], lambda _, role=role: dossier_store(book=bench.book, agent_role=role)) for role in floors]
    pairs += [(runs[label], lambda _, task=task: run_once(task)) for label, task, _ in RUNS]
    for _samples, call in pairs:  # warm-up, untimed
        call(None)
    common.interleaved(pairs, [None], rounds=args.repeat)

    for role, floor in floors.items():
        common.print_title(f"{role}'s runs on {vendor}, median of {args.repeat} (floor: the dossier build alone)")
        rows = [runs[label] for label, task, _ in RUNS if TASK_ROLE[task] == role]
        common.print_timings([floor, *rows], floor)
        for row in rows:
            ratio = row.median_ms / floor.median_ms
            report.figures[row.label] = {"median_ms": row.median_ms, "floor_ms": floor.median_ms, "ratio": ratio}
        report.figures[floor.label] = {"median_ms": floor.median_ms}
    report.figures["vendor"] = vendor
    report.figures["n"] = {"claims": args.claims, "scratchpad": args.scratchpad, "observations": args.observations}
    worst = max((v["ratio"], k) for k, v in report.figures.items() if isinstance(v, dict) and "ratio" in v)
    report.note(f"the slowest run relative to its dossier floor: {worst[1]} at {worst[0]:.2f}x")
    report.save()
    return report


if __name__ == "__main__":
    main()
