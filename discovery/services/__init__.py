"""Every write and rule of discovery (seed 000), with the reads a dossier is assembled from. Routes, pages, admin
and commands call these."""

from .books import (
    book_agents_act_set,
    book_create,
    book_edit,
    book_edit_allowed,
    book_editor_add,
    book_editor_remove,
    book_premise_impact,
    series_create,
)
from .charters import charter_propose, charter_resolve
from .claims import (
    claim_decide,
    claim_for_book,
    claim_propose,
    claim_request_approval,
    claim_retract,
    claim_state,
    claim_story_set,
    claim_supersede,
    claim_target,
)
from .dossiers import (
    author_constraints,
    book_observations,
    canon_claims,
    dossier_content,
    dossier_create,
    dossier_readable,
    dossier_store,
    dossiers_for,
)
from .handoffs import handoff_create, handoff_return
from .knowledge import ensure_knowledge_bases
from .observations import (
    observation_detail,
    observation_extract,
    observation_history,
    observation_resolve,
    observations_confirm_turn,
    turn_add_stating,
)
from .scratchpad import scratchpad_append
from .sessions import discovery_start, question_close, question_set, thrust_propose, turn_add

__all__ = [
    "author_constraints",
    "book_agents_act_set",
    "book_create",
    "book_edit",
    "book_edit_allowed",
    "book_editor_add",
    "book_editor_remove",
    "book_observations",
    "book_premise_impact",
    "canon_claims",
    "charter_propose",
    "charter_resolve",
    "claim_decide",
    "claim_for_book",
    "claim_propose",
    "claim_request_approval",
    "claim_retract",
    "claim_state",
    "claim_story_set",
    "claim_supersede",
    "claim_target",
    "discovery_start",
    "dossier_content",
    "dossier_create",
    "dossier_readable",
    "dossier_store",
    "dossiers_for",
    "ensure_knowledge_bases",
    "handoff_create",
    "handoff_return",
    "observation_detail",
    "observation_extract",
    "observation_history",
    "observation_resolve",
    "observations_confirm_turn",
    "question_close",
    "question_set",
    "scratchpad_append",
    "series_create",
    "thrust_propose",
    "turn_add",
    "turn_add_stating",
]
