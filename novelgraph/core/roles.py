"""Who can act in NovelGraph: the agent roles and the people's roles, each defined once.

Agents (Sol, Terra, Luna) act through keys that carry their role; people act as
themselves, and their role is relative to a book (its author, or one of its editors).
Every model field, schema and capability table that names a role takes its values
from these two enumerations.
"""

from __future__ import annotations

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
