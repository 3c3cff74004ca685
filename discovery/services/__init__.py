"""Every write and rule of discovery (seed 000). Routes, pages, admin and commands call these."""

from .books import book_create, series_create
from .charters import charter_for, charter_propose, charter_resolve
from .claims import claim_decide, claim_for_book, claim_propose, claim_request_approval
from .common import session_for
from .dossiers import dossier_content, dossier_create, dossier_for, dossier_store, dossiers_for
from .handoffs import handoff_create, handoff_for, handoff_return
from .sessions import (
    discovery_start,
    ensure_knowledge_bases,
    scratchpad_append,
    thrust_propose,
    turn_create,
)

__all__ = [
    "book_create",
    "charter_for",
    "charter_propose",
    "charter_resolve",
    "claim_decide",
    "claim_for_book",
    "claim_propose",
    "claim_request_approval",
    "discovery_start",
    "dossier_content",
    "dossier_create",
    "dossier_for",
    "dossier_store",
    "dossiers_for",
    "ensure_knowledge_bases",
    "handoff_create",
    "handoff_for",
    "handoff_return",
    "scratchpad_append",
    "series_create",
    "session_for",
    "thrust_propose",
    "turn_create",
]
