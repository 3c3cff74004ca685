"""Every write of the discovery loop (seed 002, LOOP.md). Keyword-only, atomic, one rule per docstring.

The lint and saturation reads are re-exported from ``discovery.loop.selectors`` for the callers that check them
before a write."""

from ..selectors import saturation_check, trace_lint
from . import base
from .artifacts import artifact_write, lens_review_record, rerun_done
from .base import loop_ensure
from .bounds import cost_charge, cost_spend, round_advance
from .cascade import cascade_apply, cascade_preview, cascade_stale, cascade_stale_artifacts
from .gates import gate_request
from .plan import (
    candidate_add,
    candidate_select,
    plan_node_add,
    plan_node_update,
    validation_item_add,
    validation_item_status,
)
from .questions import question_raise, question_resolve, question_route, question_surface
from .trace import trace_edge_add, trace_edge_withdraw, trace_node_add, trace_node_withdraw, trace_settings

__all__ = [
    "artifact_write",
    "base",
    "candidate_add",
    "candidate_select",
    "cascade_apply",
    "cascade_preview",
    "cascade_stale",
    "cascade_stale_artifacts",
    "cost_charge",
    "cost_spend",
    "gate_request",
    "lens_review_record",
    "loop_ensure",
    "plan_node_add",
    "plan_node_update",
    "question_raise",
    "question_resolve",
    "question_route",
    "question_surface",
    "rerun_done",
    "round_advance",
    "saturation_check",
    "trace_edge_add",
    "trace_edge_withdraw",
    "trace_lint",
    "trace_node_add",
    "trace_node_withdraw",
    "trace_settings",
    "validation_item_add",
    "validation_item_status",
]
