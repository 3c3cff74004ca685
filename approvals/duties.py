"""The approvals' and the decision log's reads for agents through MCP: each the tool of its GET route.

Registered from ``ApprovalsConfig.ready()`` into the kernel's registry (``novelgraph.core.duties``), which
the MCP server reads. Each calls what its route calls (``approvals/reads.py``, ``approvals/selectors.py``)
with the key's principal, and answers through the route's output schema with the same hiding rule: the
subjects the caller's role may not read (a series claim, for Luna) are passed to the schema as its
``withheld`` context, where the route carries them on its request. No tool here decides: verdicts are the
author's (``POST /approvals/{approval_id}/verdict`` is a person's route).

The log's JSON Lines export stays a file download of its route (``READS_WITHOUT_TOOL``): the same entries are
read here, paged, and the chain is checked by ``decision_log_verify``.
"""

from __future__ import annotations

import uuid
from typing import Any

from discovery.access import Cap
from novelgraph.core.auth import Principal
from novelgraph.core.duties import Answer, path_parameter, read_tool, register_tools

from .models import DecisionList
from .reads import approval_detail_read, approvals_read, log_access
from .schemas import ApprovalDetailOut, ApprovalFilter, ApprovalOut, LogEntryOut, VerificationOut
from .selectors import approval_get, decision_list, decision_log_for, decision_log_verify, superseded_versions

_READ = (Cap.BOOK_READ,)  # as the routes read: any role on its book


def approvals_list(principal: Principal, _args, filters: ApprovalFilter) -> Answer:
    approvals, withheld = approvals_read(principal, filters.book_id, filters.status)
    return Answer(approvals, {"withheld": withheld})


def approval_read(principal: Principal, args, _payload) -> Answer:
    out, withheld = approval_detail_read(principal, args.approval_id)
    return Answer(out, {"withheld": withheld})


def decision_log_read(principal: Principal, args, _payload) -> Answer:
    access, withheld = log_access(principal, args.book_id)
    return Answer(decision_log_for(access.book), {"withheld": withheld})


def decision_log_check(principal: Principal, args, _payload) -> dict:
    access, _withheld = log_access(principal, args.book_id)
    return decision_log_verify(access.book).as_dict()


READS = (
    read_tool(
        "approvals_list",
        "GET /approvals",
        "The approvals of the books your key may read (or of `book_id`; `status` pending, decided or "
        "superseded), newest first, paged. One about what your role may not read shows the withheld line.",
        approvals_list,
        ApprovalOut,
        needs=_READ,
        payload=ApprovalFilter,
        many=True,
    ),
    read_tool(
        "approval_read",
        "GET /approvals/{approval_id}",
        "One approval: the proposal, who requested it, its source refs resolved, the impact preview, whether it "
        "is still current and, once decided, its decision-log entry. A subject your role may not read is withheld.",
        approval_read,
        ApprovalDetailOut,
        ("approval_id",),
        _READ,
    ),
    read_tool(
        "approval_list_items",
        "GET /approvals/{approval_id}/lists/{name}",
        "Every item of a list the approval's verdict recorded (`contradictions`, `subtree_stale`, `set_aside`), "
        "in its log entry's order, paged: the rest of the entry's capped list.",
        lambda p, a, _q: decision_list(*approval_get(p, a.approval_id), a.name),
        dict[str, Any] | str,
        ("approval_id", "name"),
        _READ,
        many=True,
    ),
    read_tool(
        "approval_superseded_versions",
        "GET /approvals/{approval_id}/superseded-versions",
        "Every charter version a charter approval superseded, oldest first, paged.",
        lambda p, a, _q: superseded_versions(*approval_get(p, a.approval_id)),
        int,
        ("approval_id",),
        _READ,
        many=True,
    ),
    read_tool(
        "decision_log_read",
        "GET /books/{book_id}/decision-log",
        "The book's decision log in sequence order, paged (an entry about what your role may not read is "
        "withheld: no rationale or detail, `withheld` true).",
        decision_log_read,
        LogEntryOut,
        ("book_id",),
        _READ,
        many=True,
    ),
    read_tool(
        "decision_log_verify",
        "GET /books/{book_id}/decision-log/verify",
        "Recompute the book's decision-log chain and seals (and its anchor and canon record); names the first "
        "entry that fails.",
        decision_log_check,
        VerificationOut,
        ("book_id",),
        _READ,
    ),
)


def register() -> None:
    path_parameter("approval_id", uuid.UUID, "The approval's id (see the approvals_list tool).")
    path_parameter("name", DecisionList, "The list the verdict recorded: contradictions, subtree_stale or set_aside.")
    register_tools(*READS)
