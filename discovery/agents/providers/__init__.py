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
    "provider_for",
    "reported_tokens",
]


def config() -> dict:
    return settings.NOVELGRAPH_AGENTS


def default_provider() -> str:
    return config().get("PROVIDER") or Provider.OFFLINE


def model_of(provider: str) -> str:
    """The model a new run of ``provider`` uses, or a 422 when that provider is not configured."""
    if provider == Provider.OFFLINE:
        return OFFLINE_MODEL
    if provider == Provider.OPENAI_COMPATIBLE:
        if not config().get("BASE_URL") or not config().get("MODEL"):
            raise Invalid(
                "provider: openai-compatible needs NOVELGRAPH_AGENT_BASE_URL and NOVELGRAPH_AGENT_MODEL",
                field="provider",
            )
        return config()["MODEL"]
    raise Invalid(f"provider: unknown provider {provider!r}", field="provider")


def provider_for(provider: str, model: str):
    if provider == Provider.OPENAI_COMPATIBLE:
        return OpenAICompatibleProvider(model=model, options=config())
    return OfflineProvider()
