"""Agent runs: queue one, and run it once.

A run writes only through the services the API calls, as a principal of its role scoped to its
book (``context.agent_access``), with payloads built from the same input schemas; every
capability check, validation and log rule applies unchanged. A run that fails, or whose plan does
not validate, writes nothing (its writes share one transaction) and is recorded as failed with the
reason, in its own transaction. Its cost counts against the loop's cost budget either way.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_tasks import TaskContext, task
from django_tasks_db.models import DBTaskResult
from pydantic import ValidationError as PydanticValidationError

from discovery.access import BookAccess, Cap
from discovery.loop.models import LensRerun, LoopMeta, RerunStatus, TraceEdge, TraceNode
from discovery.loop.schemas import QuestionResolveIn
from discovery.loop.services import (
    artifact_write,
    cost_charge,
    gate_request,
    lens_review_record,
    question_resolve,
    rerun_done,
    round_advance,
    trace_edge_add,
    trace_node_add,
)
from discovery.loop.services.base import refuse_when_paused
from discovery.models import Book, Handoff, ScratchpadEntry, Turn
from discovery.schemas import FindingsIn, HandoffIn, HandoffResultIn
from discovery.selectors import current_session, latest_revision
from discovery.services import (
    charter_propose,
    claim_propose,
    claim_request_approval,
    claim_target,
    dossier_store,
    handoff_create,
    handoff_return,
    observation_extract,
    question_close,
    question_set,
    scratchpad_append,
    thrust_propose,
)
from discovery.services.manuscript import chapter_get, findings_record
from library.schemas import ResearchFromUrlIn
from library.services import research_propose_from_url
from novelgraph.core.db import lock_row, retried
from novelgraph.core.errors import Conflict, DomainError, Invalid, NotFound
from novelgraph.core.schemas import field_of, first_text_fault
from novelgraph.core.signals import book_event

from .context import agent_access, looked_up, role_access, run_context
from .models import TASK_ROLE, AgentRun, AgentRunOutput, AgentTask, OutputType, Provider, RunStatus
from .providers import ProviderError, model_of, options_for, provider_for, provider_of, reported_tokens
from .providers.offline import plan_for
from .schemas import (
    PLANS,
    AgentRunIn,
    BriefPlan,
    CharterPlan,
    ContinuityPlan,
    ContradictionsPlan,
    ExtractPlan,
    GuidancePlan,
    ResearchCollectIn,
    ResearchUrlPlan,
    ReviewPlan,
    SolPlan,
    ThrustsPlan,
)
from .workers import queued_stuck, run_lost, task_stuck, tasks_of

logger = logging.getLogger(__name__)

Outputs = list[tuple[str, Any]]


# --- Queue a run ---------------------------------------------------------------------------


def _open_handoff(access: BookAccess, handoff_id: Any, role: str, task: str) -> Handoff:
    handoff = Handoff.objects.filter(pk=handoff_id, book=access.book).first()
    if handoff is None:
        raise NotFound("handoff not found", field="handoff_id")
    if handoff.to_role != role:
        raise Invalid(
            f"handoff_id: this handoff is for {handoff.to_role}; the {task} task is {role}'s", field="handoff_id"
        )
    if handoff.status != Handoff.Status.OPEN:
        raise Conflict("this handoff was already returned", code="already_returned", field="handoff_id")
    return handoff


def agent_run_start(
    *, access: BookAccess, payload: AgentRunIn, parent: AgentRun | None = None, task_input: dict | None = None
) -> AgentRun:
    """Queue one role's task for the book and its background task, in one transaction.

    Needs discovery:write (the author, or Sol handing work on). The book needs a discovery session
    (409) and a loop that is not paused at a bound (409: bounds pause runaway work until the author's
    verdict). Guidance is work handed to Luna: given a topic, the caller hands it to her first
    (``handoff_create``); a named handoff must be open and addressed to the task's role.
    """
    access.require(Cap.DISCOVERY_WRITE)
    role = TASK_ROLE[payload.task]
    # Each role has its own model (a strong hosted one for Sol, a small local one for Luna...): ``options_for``.
    provider = provider_of(role, asked=payload.provider, handed_by=parent.provider if parent else None)
    model = model_of(provider, role)
    if payload.topic and payload.task != AgentTask.GUIDANCE:
        raise Invalid("topic: only the guidance task takes a topic", field="topic")
    # A deadlock that still happens is tried again here, in the request (not inside a run's transaction,
    # where the run's own retry takes the whole transaction again).
    if payload.task == AgentTask.CONTINUITY and not task_input:
        raise Invalid("task: queue the continuity check from its chapter (.../chapters/{number}/check)", field="task")
    if payload.task == AgentTask.RESEARCH_URL and not task_input:
        raise Invalid("task: ask Luna to collect a page through .../research/collect, with its url", field="task")
    return retried(lambda: _queue(access, payload, parent, role=role, provider=provider, model=model, given=task_input))


def _queue(
    access: BookAccess, payload: AgentRunIn, parent: AgentRun | None, *, role, provider, model, given=None
) -> AgentRun:
    book = access.book
    with transaction.atomic():
        lock_row(Book, book.pk)  # one lock order (novelgraph.core.db.lock_row): the book first
        agent_runs_reap(book=book)
        if current_session(book) is None:
            raise Conflict("this book has no discovery session yet; start discovery first", code="no_session")
        meta = LoopMeta.objects.filter(book=book).first()
        if meta is not None:
            refuse_when_paused(meta)
        task_input: dict = {}
        if payload.handoff_id is not None:
            handoff = _open_handoff(access, payload.handoff_id, role, payload.task)
            task_input["handoff_id"] = str(handoff.pk)
        elif payload.task == AgentTask.GUIDANCE:
            if not payload.topic:
                raise Invalid("topic: say what Luna should look for in the library", field="topic")
            statements = [{"text": book.premise[:5_000], "status": "fact"}] if book.premise else []
            handoff = handoff_create(
                access=access,
                payload=HandoffIn(
                    to_role="luna",
                    decision=f"Look in the library for guidance on {payload.topic}",
                    statements=statements,
                    allowed_sources=[{"type": "other", "id": "any:chunk"}],
                ),
            )
            task_input = {"handoff_id": str(handoff.pk), "topic": payload.topic}
        task_input.update(given or {})
        as_of_chapter = payload.as_of_chapter or (parent.input.get("as_of_chapter") if parent else None)
        if as_of_chapter is not None:
            task_input["as_of_chapter"] = as_of_chapter  # work handed on stays as of the same chapter
        run = AgentRun.objects.create(
            book=book,
            role=role,
            task=payload.task,
            input=task_input,
            provider=provider,
            model=model,
            requested_by=access.user,
            requested_by_role=access.role,
            parent=parent,
        )
        result = run_agent.enqueue(str(run.pk))
        run.task_result_id = str(result.id)
        run.save(update_fields=["task_result_id", "updated_at"])
    return run


# --- Runs whose worker stopped ----------------------------------------------------------------


def _reap_running(run_id: Any, why: str) -> bool:
    """A ``running`` run whose worker stopped: failed, nothing written (its writes are one transaction),
    charged for the work it did: the fixed cost of a run, whatever happened, plus the tokens a model spent
    (on the run as soon as its reply came)."""
    with transaction.atomic():
        book_id = AgentRun.objects.filter(pk=run_id).values_list("book_id", flat=True).first()
        lock_row(Book, book_id)  # one lock order (novelgraph.core.db.lock_row): the book first
        run = AgentRun.objects.select_for_update(of=("self",)).select_related("book").filter(pk=run_id).first()
        if run is None or run.status != RunStatus.RUNNING:
            return False
        cost = _cost(run, run.tokens)
        charged = f"Charged {cost:g} for the work done before it stopped."
        AgentRun.objects.filter(pk=run.pk).update(
            status=RunStatus.FAILED,
            reason=f"the worker stopped during the run ({why}); nothing was written",
            notes=["Nothing was written.", charged],
            finished_at=timezone.now(),
            cost=cost,
            updated_at=timezone.now(),
        )
        cost_charge(book=run.book, amount=cost)
    return True


def _reap_queued(run_id: Any, now) -> bool:
    """A ``queued`` run that no worker will take: queued again with a new task when its task was lost
    before the run was claimed (nothing of it ran); failed when its task ended without running it."""
    with transaction.atomic():
        run = AgentRun.objects.select_for_update(of=("self",)).filter(pk=run_id).first()
        if run is None or run.status != RunStatus.QUEUED:
            return False
        task = DBTaskResult.objects.filter(pk=run.task_result_id).first() if run.task_result_id else None
        if not queued_stuck(task, now):
            return False
        if task is not None and task.status in ("SUCCESSFUL", "FAILED"):
            AgentRun.objects.filter(pk=run.pk).update(
                status=RunStatus.FAILED,
                reason=f"its background task ended ({task.status.lower()}) without running it; nothing was written",
                notes=["Nothing was written."],
                finished_at=timezone.now(),
                updated_at=timezone.now(),
            )
            return True
        if task is not None:
            task.delete()  # RUNNING for a worker that stopped: no worker would ever take it
        result = run_agent.enqueue(str(run.pk))
        AgentRun.objects.filter(pk=run.pk).update(task_result_id=str(result.id), updated_at=timezone.now())
    return True


def agent_runs_reap(*, book=None, now=None) -> int:
    """Settle every run that can no longer move, so that none stays ``queued`` or ``running`` for ever:

    - a ``running`` run whose worker's process is gone, or still running after its provider's time
      (``workers.stale_after``): failed, charged for the work it did (``_reap_running``);
    - a ``queued`` run whose task a stopped worker had claimed (django-tasks marks the task RUNNING
      before the run is claimed, and no worker takes a RUNNING row): queued again (``_reap_queued``);
    - task rows left RUNNING by workers that stopped: pruned.

    Called before a new run is queued for the book, and by ``manage.py agent_runs_reap`` for all books
    (``make run`` and ``make worker`` run it on start, when the previous worker is gone). Returns how many
    runs it settled or queued again."""
    now = now or timezone.now()
    running = AgentRun.objects.filter(status=RunStatus.RUNNING)
    queued = AgentRun.objects.filter(status=RunStatus.QUEUED)
    if book is not None:
        running, queued = running.filter(book=book), queued.filter(book=book)
    reaped = 0
    for run in running.only("pk", "role", "worker", "provider", "started_at"):
        why = run_lost(run, now)
        if why is not None:
            reaped += _reap_running(run.pk, why)
    queued = list(queued.only("pk", "task_result_id"))
    tasks = tasks_of(queued)
    for run in queued:
        if queued_stuck(tasks.get(run.task_result_id), now):
            reaped += _reap_queued(run.pk, now)
    if book is None:
        _prune_stopped_tasks(now)
    return reaped


def _prune_stopped_tasks(now) -> int:
    """Delete the task rows left RUNNING by workers that stopped (a run of theirs was settled above, or
    finished before its worker stopped)."""
    active = AgentRun.objects.filter(status__in=(RunStatus.QUEUED, RunStatus.RUNNING)).values_list(
        "task_result_id", flat=True
    )
    held = set(active)
    stopped = [
        task.pk
        for task in DBTaskResult.objects.filter(status="RUNNING").only("pk", "status", "worker_ids", "started_at")
        if str(task.pk) not in held and task_stuck(task, now)
    ]
    return DBTaskResult.objects.filter(pk__in=stopped, status="RUNNING").delete()[0] if stopped else 0


# --- Run it -----------------------------------------------------------------------------------


def validated_plan(task: str, data: Any):
    """The provider's answer as the task's plan schema, or a 422 naming the first bad field (text that is
    not valid Unicode included, as for any input: ``text_fault``)."""
    found = first_text_fault(data)
    if found:
        raise Invalid(f"the reply does not validate: {found[0]}: {found[1]}", field=found[0])
    try:
        return PLANS[task].model_validate(data)
    except PydanticValidationError as exc:
        first = exc.errors()[0]
        field = field_of(first.get("loc", ()))
        raise Invalid(f"the reply does not validate: {field}: {first.get('msg', 'invalid')}", field=field) from None


def continuity_with_rules(plan: ContinuityPlan, context: dict) -> ContinuityPlan:
    """A model's continuity check with the offline rules beside it: the model reads by meaning
    (``contradicts-canon``), the rules still find their kinds on the same context. A finding both filed
    (the same key) is the rules' one."""
    rules = validated_plan(AgentTask.CONTINUITY, plan_for(AgentTask.CONTINUITY, context))
    keys = {finding.key for finding in rules.findings}
    plan.findings = [*rules.findings, *(finding for finding in plan.findings if finding.key not in keys)]
    plan.notes = [*rules.notes, *plan.notes]
    return plan


def _claim(run_id: Any, worker: str = "") -> AgentRun | None:
    """queued -> running under the run's row lock, naming the worker that holds it: a run that is not
    queued is not run again."""
    with transaction.atomic():
        run = (
            AgentRun.objects.select_for_update(of=("self",))
            .select_related("book__owner", "book__series")
            .filter(pk=run_id)
            .first()
        )
        if run is None or run.status != RunStatus.QUEUED:
            return None
        run.status = RunStatus.RUNNING
        run.started_at = timezone.now()
        run.worker = worker[:64]
        run.save(update_fields=["status", "started_at", "worker", "updated_at"])
    return run


def _cost(run: AgentRun, tokens: int) -> float:
    """What a run costs against the loop's budget, at its role's rates (``options_for``)."""
    options = options_for(run.role)
    return round(options["RUN_COST"] + tokens / 1000 * options["COST_PER_1K_TOKENS"], 4)


def _settle(
    run: AgentRun, *, status: str, began: float, tokens: int, notes: list[str], reason: str = "", worked: bool = True
) -> bool:
    """Record how the run ended and charge its cost (call inside a transaction): the fixed cost of a run,
    whatever happened, plus its tokens. A run that never started work (the loop was paused) costs nothing.
    False when the run is no longer ``running``: the reap settled it first, so it is neither recorded nor
    charged twice."""
    try:
        tokens = reported_tokens(tokens)
    except ProviderError:
        # The providers refuse such a report; should one slip through, it is not recorded (the columns
        # would refuse it, and the failure path with them) and only the fixed cost is charged.
        tokens = 0
    cost = _cost(run, tokens) if worked else 0.0
    settled = AgentRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING).update(
        status=status,
        reason=reason[:5_000],
        notes=[n[:1_000] for n in notes][:20],
        finished_at=timezone.now(),
        duration_ms=int((time.monotonic() - began) * 1000),
        tokens=tokens,
        cost=cost,
        updated_at=timezone.now(),
    )
    if not settled:
        return False  # the reap settled it first (its worker was taken for lost), and charged it
    cost_charge(book=run.book, amount=cost)
    payload = {"run_id": str(run.pk), "role": run.role, "task": run.task, "status": status}
    book = run.book
    transaction.on_commit(lambda: book_event.send(sender=AgentRun, book=book, kind="run-finished", payload=payload))
    return True


def _fail(run: AgentRun, reason: str, *, began: float, tokens: int, worked: bool) -> None:
    """Record the run as failed. The failure path must not fail on the data that failed the run: if
    recording the failure with its tokens fails, it is recorded again with none (the fixed cost only)."""
    try:
        retried(lambda: _record_failure(run, reason, began=began, tokens=tokens, worked=worked))
    except Exception:
        logger.exception("agent run %s: recording its failure failed; recording it without its usage", run.pk)
        retried(lambda: _record_failure(run, f"{reason} (usage not recorded)", began=began, tokens=0, worked=worked))


def _record_failure(run: AgentRun, reason: str, *, began: float, tokens: int, worked: bool) -> None:
    with transaction.atomic():
        lock_row(Book, run.book_id)  # one lock order (novelgraph.core.db.lock_row): the book first
        _settle(
            run,
            status=RunStatus.FAILED,
            began=began,
            tokens=tokens,
            notes=["Nothing was written."],
            reason=reason,
            worked=worked,
        )


# Test-only: the kill tests (tests/test_agents_kills.py) set this variable on a subprocess worker to make it
# end at once (os._exit: no cleanup, no rollback handler, as SIGKILL would) at one named point of a run's
# life. Unset, it does nothing; nothing outside the tests sets it.
KILL_AT = "NOVELGRAPH_TEST_KILL_AT"
KILL_POINTS = ("task-claimed", "run-claimed", "dossier-stored", "output-written", "run-settled")


def kill_point(name: str) -> None:
    if os.environ.get(KILL_AT) == name:
        os._exit(137)


def agent_run_execute(*, run_id: Any, worker: str = "") -> AgentRun | None:
    """Run a queued run once: take a fresh dossier for its role, look up what its task needs, ask its
    provider for a plan, validate it, and write it through the services in one transaction.

    What it has spent is on the run as it goes (the dossier, then the model's tokens), so that the reap
    charges a run whose worker stopped for the work done."""
    run = _claim(run_id, worker)
    if run is None:
        return AgentRun.objects.filter(pk=run_id).first()
    kill_point("run-claimed")
    began, tokens, worked = time.monotonic(), 0, False
    try:
        access = agent_access(run)
        meta = LoopMeta.objects.filter(book=run.book).first()
        if meta is not None:
            refuse_when_paused(meta)
        worked = True
        dossier = retried(
            lambda: dossier_store(
                book=run.book,
                agent_role=run.role,
                requested_by=run.requested_by,
                as_of_chapter=run.input.get("as_of_chapter"),
            )
        )
        extras = looked_up(access, run)
        AgentRun.objects.filter(pk=run.pk).update(dossier=dossier, looked_up=extras)
        run.looked_up = extras
        kill_point("dossier-stored")
        context = run_context(access, run, dossier.content, extras)
        reply = provider_for(run.provider, run.model, run.role).plan(run.task, context, role=run.role)
        tokens = reply.tokens
        if tokens:
            AgentRun.objects.filter(pk=run.pk).update(tokens=tokens)
        plan = validated_plan(run.task, reply.data)
        if run.task == AgentTask.CONTINUITY and run.provider != Provider.OFFLINE:
            plan = continuity_with_rules(plan, context)

        def write() -> None:
            with transaction.atomic():
                lock_row(Book, run.book_id)  # one lock order (novelgraph.core.db.lock_row): the book first
                outputs, notes = APPLY[run.task](access, run, plan)
                AgentRunOutput.objects.bulk_create(
                    AgentRunOutput(run=run, type=kind, object_id=str(object_id), position=i)
                    for i, (kind, object_id) in enumerate(outputs)
                )
                kill_point("output-written")
                done = [*reply.notes, *plan.notes, *notes]
                if not _settle(run, status=RunStatus.DONE, began=began, tokens=tokens, notes=done):
                    raise Conflict("the reap settled this run first; nothing was written", code="reaped")
                _hand_back(run)

        retried(write)
        kill_point("run-settled")
    except ProviderError as exc:
        _fail(run, f"{run.provider} provider: {exc}", began=began, tokens=exc.tokens or tokens, worked=worked)
    except DomainError as exc:
        where = f" ({exc.field})" if exc.field else ""
        _fail(run, f"refused{where}: {exc.message}", began=began, tokens=tokens, worked=worked)
    except Exception as exc:
        logger.exception("agent run %s failed", run.pk)
        reason = f"internal error ({exc.__class__.__name__}); nothing was written"
        _fail(run, reason, began=began, tokens=tokens, worked=worked)
    return AgentRun.objects.get(pk=run.pk)


# --- What each task writes ------------------------------------------------------------------


def _run_handoff(run: AgentRun) -> Handoff | None:
    return Handoff.objects.filter(pk=run.handoff_id).first() if run.handoff_id else None


def _answer_handoff(access: BookAccess, run: AgentRun, result: HandoffResultIn | None) -> Outputs:
    """A run that answers a handoff returns its result (each item becomes an entry linked to it)."""
    handoff = _run_handoff(run)
    if handoff is None:
        return []
    if result is None:
        raise Invalid("result: a run that answers a handoff returns its result", field="result")
    handoff_return(access=access, handoff=handoff, payload=result)
    entries = ScratchpadEntry.objects.filter(handoff=handoff).order_by("sequence").values_list("pk", flat=True)
    return [(OutputType.ENTRY, pk) for pk in entries]


def _session(access: BookAccess):
    session = current_session(access.book)
    if session is None:
        raise Conflict("this book has no discovery session yet; start discovery first", code="no_session")
    return session


def apply_sol(access: BookAccess, run: AgentRun, plan: SolPlan) -> tuple[Outputs, list[str]]:
    outputs: Outputs = []
    notes: list[str] = []
    if plan.question is not None:
        asked = question_set(access=access, session=_session(access), payload=plan.question)
        outputs.append((OutputType.QUESTION, asked.pk))
    elif plan.done_asking and question_close(access=access, session=_session(access)):
        notes.append("Closed the current question: Sol has nothing more to ask for now.")
    for item in plan.handoffs:
        handoff = handoff_create(access=access, payload=item.handoff)
        child = agent_run_start(
            access=access,
            payload=AgentRunIn(task=item.task, handoff_id=handoff.pk),
            parent=run,
        )
        outputs += [(OutputType.HANDOFF, handoff.pk), (OutputType.RUN, child.pk)]
    for claim in plan.claims:
        _, base = claim_target(access.principal, claim.scope, claim.scope_id)
        outputs.append((OutputType.CLAIM, claim_propose(access=access, base=base, payload=claim).pk))
    for ask in plan.approval_requests:
        approval = claim_request_approval(access=access, claim_id=ask.claim_id, note=ask.note)
        outputs.append((OutputType.APPROVAL, approval.pk))
    if plan.advance_round:
        meta = round_advance(access=access)
        outputs.append((OutputType.ROUND, f"{access.book.pk}:{meta.round}"))
    if plan.gate is not None:
        gate = plan.gate.gate
        result = gate_request(access=access, gate=gate, payload=plan.gate)
        outputs.append((OutputType.CARD, result["card"].pk))
        if result.get("approval_id"):
            outputs.append((OutputType.APPROVAL, result["approval_id"]))
        notes.append(f"{gate}: {result['outcome']}.")
        if result["outcome"] == "passed" and acts_on_its_own(access.book):
            # A gate that passed on its own (G1 without a risk trigger): Sol goes on to the next one.
            child = agent_run_start(access=access, payload=AgentRunIn(task=AgentTask.NEXT_QUESTION), parent=run)
            outputs.append((OutputType.RUN, child.pk))
    return outputs, notes


def apply_guidance(access: BookAccess, run: AgentRun, plan: GuidancePlan) -> tuple[Outputs, list[str]]:
    handoff = _run_handoff(run)
    if handoff is None:
        raise Invalid("handoff_id: guidance answers a handoff to Luna", field="handoff_id")
    outputs: Outputs = [
        (OutputType.ENTRY, scratchpad_append(access=access, session=handoff.session, payload=entry).pk)
        for entry in plan.observations
    ]
    return outputs + _answer_handoff(access, run, plan.result), []


def apply_contradictions(access: BookAccess, run: AgentRun, plan: ContradictionsPlan) -> tuple[Outputs, list[str]]:
    session = _session(access)
    outputs: Outputs = [
        (OutputType.ENTRY, scratchpad_append(access=access, session=session, payload=entry).pk)
        for entry in plan.contradictions
    ]
    return outputs + _answer_handoff(access, run, plan.result), []


def _reruns_done(access: BookAccess, run: AgentRun, lens: str, *, brief: bool | None = None) -> list[str]:
    """The re-runs of ``lens`` queued before this run (by a verdict or a cascade) are done by it: reported done
    through the loop's service, as the role the roster names for the lens. ``brief``: only those that name the
    decision brief (True) or only those that do not (False)."""
    done = []
    queued = LensRerun.objects.filter(
        book=access.book, lens=lens, status=RerunStatus.QUEUED, created_at__lte=run.created_at
    ).order_by("created_at", "id")
    for rerun in queued:
        if brief is not None and ("decision-brief" in (rerun.artifacts or [])) != brief:
            continue
        rerun_done(access=access, rerun_id=rerun.pk)
        done.append(f"Did the queued re-run of the {lens} lens.")
    return done


def apply_thrusts(access: BookAccess, run: AgentRun, plan: ThrustsPlan) -> tuple[Outputs, list[str]]:
    session = _session(access)
    outputs: Outputs = [
        (OutputType.THRUST, thrust_propose(access=access, session=session, payload=thrust).pk)
        for thrust in plan.thrusts
    ]
    # New candidates are the divergence lens's re-run (explore alternatives, a constraint at G1.5, a cascade).
    notes = _reruns_done(access, run, "explore-options", brief=False) if plan.thrusts else []
    return outputs + _answer_handoff(access, run, plan.result), notes


def apply_charter(access: BookAccess, run: AgentRun, plan: CharterPlan) -> tuple[Outputs, list[str]]:
    charter = charter_propose(access=access, payload=plan.charter)
    outputs: Outputs = [(OutputType.CHARTER, charter.pk), (OutputType.APPROVAL, charter.approval_id)]
    return outputs + _answer_handoff(access, run, plan.result), [f"Proposed Story Charter v{charter.version}."]


def _handed_turns(run: AgentRun) -> set[str] | None:
    handoff = _run_handoff(run)
    if handoff is None:
        return None
    return {str(ref.get("id")) for ref in handoff.allowed_sources or [] if ref.get("type") == "turn"}


def apply_extract(access: BookAccess, run: AgentRun, plan: ExtractPlan) -> tuple[Outputs, list[str]]:
    """Luna's observations, each citing a person's turn of this book (one the handoff named, when it names any)."""
    allowed = _handed_turns(run)
    outputs: Outputs = []
    for i, item in enumerate(plan.observations):
        turn = Turn.objects.select_related("session").filter(pk=item.turn_id, session__book=access.book).first()
        if turn is None or (allowed and str(turn.pk) not in allowed):
            raise Invalid("not a turn this run was handed", field=f"observations[{i}].turn_id")
        observation = observation_extract(access=access, turn=turn, payload=item)
        outputs.append((OutputType.OBSERVATION, observation.pk))
    return outputs + _answer_handoff(access, run, plan.result), []


REVIEW_LENS = {AgentTask.CANON_REVIEW: "canon-integrity", AgentTask.TRUST_REVIEW: "reader-trust"}


def apply_review(access: BookAccess, run: AgentRun, plan: ReviewPlan) -> tuple[Outputs, list[str]]:
    """The lens review, recorded through the loop's review service (the roster decides who may file it)."""
    if plan.review.lens != REVIEW_LENS[run.task]:
        raise Invalid(f"the {run.task} task files the {REVIEW_LENS[run.task]} review", field="review.lens")
    review = lens_review_record(access=access, payload=plan.review)
    outputs: Outputs = [(OutputType.REVIEW, review.pk)]
    notes = [f"Filed the {plan.review.lens} review.", *_reruns_done(access, run, plan.review.lens)]
    for item in plan.questions:
        payload = QuestionResolveIn(resolution=item.resolution, cites=item.cites)
        resolved = question_resolve(access=access, question_id=item.question_id, payload=payload)
        notes.append(f"Resolved the open question '{resolved.question[:120]}'.")
    return outputs + _answer_handoff(access, run, plan.result), notes


def apply_brief(access: BookAccess, run: AgentRun, plan: BriefPlan) -> tuple[Outputs, list[str]]:
    """The brief as a proposed slot, then the traceability that links it (nodes and edges already there are
    kept as they are)."""
    artifact = artifact_write(access=access, payload=plan.brief)
    outputs: Outputs = [(OutputType.ARTIFACT, artifact.pk)]
    book = access.book
    for node in plan.nodes:
        if not TraceNode.objects.filter(book=book, node_id=node.node_id).exists():
            outputs.append((OutputType.TRACE, trace_node_add(access=access, payload=node).pk))
    for edge in plan.edges:
        if not TraceEdge.objects.filter(book=book, from_id=edge.from_id, to_id=edge.to_id, active=True).exists():
            trace_edge_add(access=access, payload=edge)
    notes = [
        f"Proposed the decision brief v{artifact.version}.",
        *_reruns_done(access, run, "explore-options", brief=True),
    ]
    return outputs + _answer_handoff(access, run, plan.result), notes


def apply_continuity(access: BookAccess, run: AgentRun, plan: ContinuityPlan) -> tuple[Outputs, list[str]]:
    """The check's findings on the revision it was queued for; each quote must be that revision's text at its
    offsets (a model's misquote is refused, and nothing is written)."""
    payload = FindingsIn(revision=run.input["revision"], findings=plan.findings)
    made = findings_record(access=access, number=run.input["chapter"], payload=payload)
    return [(OutputType.FINDING, f.pk) for f in made], []


def continuity_check_queue(*, access: BookAccess, number: int) -> AgentRun:
    """Queue Luna's continuity check of the chapter's latest revision (the author, or Sol handing it on)."""
    access.require(Cap.DISCOVERY_WRITE)
    chapter = chapter_get(access, number)
    revision = latest_revision(access.book, chapter.number)
    if revision is None:
        raise Conflict("this chapter has no text yet; store its text first", code="no_text")
    return agent_run_start(
        access=access,
        payload=AgentRunIn(task=AgentTask.CONTINUITY),
        task_input={"chapter": chapter.number, "revision": revision.number},
    )


def apply_research_url(access: BookAccess, run: AgentRun, plan: ResearchUrlPlan) -> tuple[Outputs, list[str]]:
    """The page the run collected (its look-up, as the server fetched it), proposed as research by Luna with the
    author's claim, or the plan's when she gave none: pending, for the author to admit with a rationale."""
    page = run.looked_up["page"]
    asked = run.looked_up["research_request"]
    claim = asked["claim"] or plan.claim
    if not claim:
        raise Invalid("claim: say what the page supports; Luna found no sentence to propose", field="claim")
    payload = ResearchFromUrlIn(url=asked["url"], claim=claim, citation=asked["citation"] or plan.citation)
    item = research_propose_from_url(access=access, payload=payload, collected=page)
    outputs: Outputs = [(OutputType.RESEARCH, item.pk), (OutputType.APPROVAL, item.approval_id)]
    return outputs, [f"Proposed “{item.title}” as research; it waits for the author's admission."]


def research_collect_queue(*, access: BookAccess, payload: ResearchCollectIn) -> AgentRun:
    """Ask Luna to collect a web page as research (the author, or Sol handing it on): her run fetches it through
    the research guards (``library.services.research_page_collect``) and proposes it. A page the guards refuse
    (a private address, a wrong scheme, credentials in the URL...) ends the run failed with the reason, and
    nothing is proposed; the address is checked there, once, not here."""
    access.require(Cap.DISCOVERY_WRITE)
    return agent_run_start(
        access=access,
        payload=AgentRunIn(task=AgentTask.RESEARCH_URL, provider=payload.provider),
        task_input={"url": payload.url, "claim": payload.claim, "citation": payload.citation},
    )


APPLY = {
    AgentTask.CONTINUITY: apply_continuity,
    AgentTask.RESEARCH_URL: apply_research_url,
    AgentTask.NEXT_QUESTION: apply_sol,
    AgentTask.GUIDANCE: apply_guidance,
    AgentTask.CONTRADICTIONS: apply_contradictions,
    AgentTask.THRUSTS: apply_thrusts,
    AgentTask.CHARTER: apply_charter,
    AgentTask.EXTRACT: apply_extract,
    AgentTask.CANON_REVIEW: apply_review,
    AgentTask.TRUST_REVIEW: apply_review,
    AgentTask.BRIEF: apply_brief,
}


# --- The agents act on their own ----------------------------------------------------------------


def acts_on_its_own(book: Book) -> bool:
    """Whether Sol takes the next step without a button: the book's setting (on by default), and the server's."""
    return bool(settings.NOVELGRAPH_AGENTS.get("ACT_ON_THEIR_OWN", True)) and bool(book.agents_act)


MAX_CHAIN = 30
CALLS_SOL_BACK = {AgentTask.THRUSTS, AgentTask.BRIEF, AgentTask.CANON_REVIEW, AgentTask.TRUST_REVIEW}


def _sol_step(book: Book, *, parent: AgentRun | None = None) -> AgentRun | None:
    """Queue Sol's next step (in a savepoint): nothing when one is already queued, or when the loop refuses work
    (paused at a bound, handed off, no session): the bound still pauses the agents."""
    if AgentRun.objects.filter(book=book, task=AgentTask.NEXT_QUESTION, status=RunStatus.QUEUED).exists():
        return None
    try:
        with transaction.atomic():
            return agent_run_start(
                access=role_access(book, "sol"),
                payload=AgentRunIn(task=AgentTask.NEXT_QUESTION),
                parent=parent,
            )
    except DomainError as exc:
        logger.info("Sol's next step on %s was not queued: %s", book.pk, exc.message)
        return None


def _hand_back(run: AgentRun) -> None:
    """Work Sol handed on is done: when the last of its siblings finishes, Sol takes the next step."""
    parent = run.parent
    if parent is None or parent.role != "sol" or run.role == "sol" or not acts_on_its_own(run.book):
        return
    siblings = AgentRun.objects.filter(parent=parent).exclude(pk=run.pk)
    if siblings.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).exists():
        return
    # Only work Sol acts on next calls him back (thrusts for G1.5; the brief and the reviews for G2); what waits
    # for the author (extracted observations, guidance, a charter draft) waits for her act instead.
    done = {run.task, *siblings.filter(status=RunStatus.DONE).values_list("task", flat=True)}
    if not done & CALLS_SOL_BACK:
        return
    depth, ancestor = 0, parent
    while ancestor is not None and depth <= MAX_CHAIN:
        depth, ancestor = depth + 1, ancestor.parent
    if depth > MAX_CHAIN:
        return
    _sol_step(run.book, parent=run)


def agents_take_the_next_step(*, book: Book, **_signal) -> AgentRun | None:
    """After the author's turn, confirmation or verdict (a signal): Sol takes the next step, if the book lets her."""
    if not settings.NOVELGRAPH_AGENTS.get("ACT_ON_THEIR_OWN", True):
        return None  # the server's switch: no query at all
    book = Book.objects.filter(pk=book.pk).first()  # her setting as it stands now, not as the signal's copy says
    if book is None or not acts_on_its_own(book):
        return None
    return _sol_step(book)


# --- Background work ---------------------------------------------------------------------------


@task(takes_context=True)
def run_agent(context: TaskContext, run_id: str) -> str:
    """The background task of a queued run (django-tasks; ``python manage.py db_worker`` runs it).

    The database backend stores it in the transaction that records the run; each worker claims a
    task with ``SELECT ... FOR UPDATE SKIP LOCKED`` and ``agent_run_execute`` moves the run from
    queued to running under its row lock, so however many workers share the database, a run runs once.
    """
    kill_point("task-claimed")
    worker = context.task_result.worker_ids[-1] if context.task_result.worker_ids else ""
    run = agent_run_execute(run_id=run_id, worker=worker)
    return run.status if run is not None else "missing"
