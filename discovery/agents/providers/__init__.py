"""Providers answer a task's plan from its context: ``offline`` (built-in rules, the default) or
``openai-compatible`` (any chat-completions server). Both return JSON that the runner validates
against the task's plan schema before anything is written."""

from __future__ import annotations

from django.conf import settings

from novelgraph.core.errors import Invalid

from ..models import Provider
from .base import ProviderError, Reply, reported_tokens
from .offline import OFFLINE_MODEL, OfflineProvider
from .openai_compatible import OpenAICompatibleProvider

__all__ = [
    "OFFLINE_MODEL",
    "ProviderError",
    "Reply",
    "default_provider",
    "model_of",
    "options_for",
    "provider_for",
    "provider_of",
    "reported_tokens",
]


def config() -> dict:
    return settings.NOVELGRAPH_AGENTS


def options_for(role: str | None) -> dict:
    """The settings a run of ``role`` uses: the role's own (``NOVELGRAPH_AGENT_<ROLE>_<SETTING>``, e.g.
    ``NOVELGRAPH_AGENT_LUNA_MODEL``), each falling back to the global one (``NOVELGRAPH_AGENT_<SETTING>``)."""
    options = config()
    own = (options.get("ROLES") or {}).get(role or "") or {}
    return {**options, **{key: value for key, value in own.items() if value not in (None, "")}}


def default_provider(role: str | None = None) -> str:
    return options_for(role).get("PROVIDER") or Provider.OFFLINE


def provider_of(role: str, *, asked: str | None = None, handed_by: str | None = None) -> str:
    """The provider of a new run of ``role``: the one asked for; else the role's own setting; else that of the run
    that handed the work on (a run asked to use the rules hands on to the rules); else the global default."""
    if asked:
        return asked
    own = ((config().get("ROLES") or {}).get(role) or {}).get("PROVIDER")
    return own or handed_by or default_provider()


def model_of(provider: str, role: str | None = None) -> str:
    """The model a new run of ``provider`` for ``role`` uses, or a 422 when that provider is not configured."""
    if provider == Provider.OFFLINE:
        return OFFLINE_MODEL
    if provider == Provider.OPENAI_COMPATIBLE:
        options = options_for(role)
        if not options.get("BASE_URL") or not options.get("MODEL"):
            whose = f" (or NOVELGRAPH_AGENT_{role.upper()}_BASE_URL and _MODEL)" if role else ""
            raise Invalid(
                "provider: openai-compatible needs NOVELGRAPH_AGENT_BASE_URL and NOVELGRAPH_AGENT_MODEL" + whose,
                field="provider",
            )
        return options["MODEL"]
    raise Invalid(f"provider: unknown provider {provider!r}", field="provider")


def provider_for(provider: str, model: str, role: str | None = None):
    if provider == Provider.OPENAI_COMPATIBLE:
        return OpenAICompatibleProvider(model=model, options=options_for(role))
    return OfflineProvider()
