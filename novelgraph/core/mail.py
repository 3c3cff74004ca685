"""E-mail, one way for the whole product: a message is three templates under ``templates/email/``.

``mail_send(to=[...], template="decision_waiting", context={...})`` renders
``email/decision_waiting_subject.txt`` (one line), ``email/decision_waiting.txt`` (the text part, extending
``email/base.txt``) and, when it exists, ``email/decision_waiting.html`` (extending ``email/base.html``), and
sends them through Django's e-mail framework: the backend and its server come from the environment
(settings.EMAIL_*; the console backend in development). Every message carries ``site_url`` (where links point:
the ``NOVELGRAPH_SITE_URL`` setting) in its context.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template import TemplateDoesNotExist
from django.template.loader import render_to_string


def site_url() -> str:
    """Where the links in an e-mail point, without a trailing slash."""
    return settings.NOVELGRAPH_SITE_URL.rstrip("/")


def mail_render(*, template: str, context: dict) -> tuple[str, str, str | None]:
    """The message's subject, text and HTML (None when the template has no HTML part)."""
    context = {"site_url": site_url(), **context}
    subject = " ".join(render_to_string(f"email/{template}_subject.txt", context).split())
    text = render_to_string(f"email/{template}.txt", context)
    try:
        html = render_to_string(f"email/{template}.html", context)
    except TemplateDoesNotExist:
        html = None
    return subject, text, html


def mail_send(*, to: Iterable[str], template: str, context: dict) -> int:
    """Send one message to the addresses in ``to`` (blank ones skipped); returns how many were sent (0 or 1)."""
    recipients = [address for address in to if address]
    if not recipients:
        return 0
    subject, text, html = mail_render(template=template, context=context)
    message = EmailMultiAlternatives(subject=subject, body=text, to=recipients)
    if html is not None:
        message.attach_alternative(html, "text/html")
    return message.send()
