"""Who can act in NovelGraph: the agent roles and the people's roles, each defined once.

Agents (Sol, Terra, Luna) act through keys that carry their role; people act as
themselves, and their role is relative to a book (its author, or one of its editors).
Every model field, schema and capability table that names a role takes its values
from these two enumerations, and what each role may do is the one capability table below
(``CAPABILITIES``): the API, the pages, the MCP server and the built-in agents all read it.
"""

from __future__ import annotations

from enum import StrEnum

from django.db import models


class AgentRole(models.TextChoices):
    SOL = "sol", "Sol (coordinator)"
    TERRA = "terra", "Terra (specialist)"
    LUNA = "luna", "Luna (bounded worker)"


class PersonRole(models.TextChoices):
    AUTHOR = "author", "Author"
    EDITOR = "editor", "Editor"


# A personal key acts as the person who owns it: its role is written "author" on the key
# (the person's role on each book is still worked out per book: author or editor).
PERSONAL_KEY_ROLE = PersonRole.AUTHOR.value
KEY_ROLES: list[tuple[str, str]] = [(PERSONAL_KEY_ROLE, "Personal key"), *AgentRole.choices]
ANY_ROLE: list[tuple[str, str]] = [*PersonRole.choices, *AgentRole.choices]


def choices_of(*values: str) -> list[tuple[str, str]]:
    """The (value, label) pairs of these role values, in the order given."""
    labels = dict(ANY_ROLE)
    return [(value, labels[value]) for value in values]


class Cap(StrEnum):
    DISCOVERY_READ = "discovery:read"
    DISCOVERY_WRITE = "discovery:write"
    SCRATCHPAD_READ = "scratchpad:read"
    SCRATCHPAD_WRITE = "scratchpad:write"
    LITERARY_READ = "literary:read"
    LITERARY_WRITE = "literary:write"
    SERIES_READ = "series:read"
    BOOK_READ = "book:read"
    CHARTER_PROPOSE = "charter:propose"
    CANON_PROPOSE = "canon:propose"
    APPROVAL_REQUEST = "approval:request"
    TURN_WRITE = "turn:write"
    LOOP_WRITE = "loop:write"
    DECIDE = "decision:make"


_READ = frozenset({Cap.DISCOVERY_READ, Cap.SCRATCHPAD_READ, Cap.LITERARY_READ, Cap.SERIES_READ, Cap.BOOK_READ})

CAPABILITIES: dict[str, frozenset[Cap]] = {
    # Seed 000: Sol reads everything, writes discovery records, proposes charters and canon
    # changes, requests approval; it is never the approver.
    AgentRole.SOL: _READ | {Cap.DISCOVERY_WRITE, Cap.CHARTER_PROPOSE, Cap.CANON_PROPOSE, Cap.APPROVAL_REQUEST},
    # Terra reads the same, writes the scratchpad and proposes charters; no promotion, no approval request.
    AgentRole.TERRA: _READ | {Cap.SCRATCHPAD_WRITE, Cap.CHARTER_PROPOSE},
    # Luna: no series reading, no charter proposals; she writes the scratchpad only.
    AgentRole.LUNA: (_READ - {Cap.SERIES_READ}) | {Cap.SCRATCHPAD_WRITE},
    # People, relative to one book: the author reads everything and is the only one who decides;
    # an editor reads and writes turns, never decides.
    PersonRole.AUTHOR: _READ
    | {
        Cap.DISCOVERY_WRITE,
        Cap.TURN_WRITE,
        Cap.CHARTER_PROPOSE,
        Cap.CANON_PROPOSE,
        Cap.LITERARY_WRITE,
        Cap.LOOP_WRITE,
        Cap.DECIDE,
    },
    PersonRole.EDITOR: _READ | {Cap.TURN_WRITE},
}


def capabilities_of(role: str | None) -> frozenset[Cap]:
    return CAPABILITIES.get(role or "", frozenset())
