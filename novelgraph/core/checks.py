"""Startup checks of the kernel's own settings: CSRF protection is on, and in production the decision log's
seal key is configured rather than the local one."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Tags, Warning, register
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.module_loading import import_string


@register(Tags.security, deploy=True)
def csrf_middleware_check(app_configs=None, **kwargs) -> list[Warning]:
    """Stands in for Django's security.W003, silenced in settings: that check looks for CsrfViewMiddleware by
    its dotted name, and ours is a subclass that bearer-key API requests skip (novelgraph.core.browser_only).
    CSRF protection is still required: Django's middleware or a subclass of it."""
    if any(issubclass(import_string(path), CsrfViewMiddleware) for path in settings.MIDDLEWARE):
        return []
    return [
        Warning(
            "No CSRF protection: neither CsrfViewMiddleware nor a subclass of it is in MIDDLEWARE.",
            hint="Keep novelgraph.core.browser_only.BrowserCsrfViewMiddleware (or Django's own) in MIDDLEWARE.",
            id="novelgraph.W003",
        )
    ]


@register(Tags.security, deploy=True)
def seal_key_check(app_configs=None, **kwargs) -> list[Warning]:
    """In production (DEBUG off) the decision log's seal key is configured, not the local one.

    Without NOVELGRAPH_SEAL_KEY the seal key is the random one generated in var/seal.key, beside the
    database: whoever copies the var directory gets the key with the log, and the seals prove nothing."""
    if settings.DEBUG or getattr(settings, "DECISION_LOG_SEAL_KEY_CONFIGURED", False):
        return []
    return [
        Warning(
            "No seal key is configured: the decision log is sealed with the local key in var/seal.key, "
            "kept beside the database.",
            hint=(
                "Set NOVELGRAPH_SEAL_KEY to a long random secret kept outside the server's data directory "
                "(and move the current key to NOVELGRAPH_SEAL_OLD_KEYS so existing entries keep verifying). "
                "See SECURITY.md."
            ),
            id="novelgraph.W004",
        )
    ]
