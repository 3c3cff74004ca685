"""Webhooks: a book's events (``novelgraph.core.signals.book_event``) posted as JSON to the URL its author registered.

Each post carries ``X-NovelGraph-Timestamp`` (Unix seconds) and ``X-NovelGraph-Signature: sha256=<hex>``, the
HMAC-SHA256 with the endpoint's secret over ``<timestamp>.`` followed by the raw body; a receiver recomputes it and
refuses a timestamp older than a few minutes (replay). ``X-NovelGraph-Event`` names the kind and
``X-NovelGraph-Delivery`` the event (the same on every retry, so a receiver can drop duplicates).

Kinds: ``decision-waiting`` and ``decision-made`` (an approval; its id, kind, summary, status and verdict),
``run-finished`` (an agent run; its id, role, task and status) and ``continuity-finding``: one event per continuity
check that files at least one new finding (never one per finding, and none for a check that finds nothing new),
with the chapter's number and title, the revision checked, ``count`` and the first 100 findings (id, kind, message,
quote and span).

Delivery is background work (django-tasks, the database backend ``db_worker`` runs): a failed attempt (no answer,
or a status outside 2xx) is tried again after ``NOVELGRAPH_WEBHOOK_BACKOFF`` seconds, doubled each time, up to
``MAX_ATTEMPTS``. Every attempt is a ``WebhookDelivery`` row: the delivery log.

The URL passes the same address guards as research from a URL (``novelgraph.core.fetch``), when it is registered
and at every attempt (it connects to the address it checked, never follows a redirect).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_tasks import task

from discovery.access import BookAccess
from discovery.models import WebhookDelivery, WebhookEndpoint
from novelgraph.core import fetch
from novelgraph.core.errors import DomainError, Invalid
from novelgraph.core.signals import BOOK_EVENT_KINDS

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
TIMEOUT = 5.0
SIGNATURE_HEADER = "X-NovelGraph-Signature"
TIMESTAMP_HEADER = "X-NovelGraph-Timestamp"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=`` and the hex HMAC-SHA256 over ``<timestamp>.<body>``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify(secret: str, timestamp: str, body: bytes, signature: str, *, tolerance: int = 300, now=None) -> bool:
    """What a receiver does: the signature matches and the timestamp is recent (``tolerance`` seconds)."""
    now = time.time() if now is None else now
    if not timestamp.isdigit() or abs(now - int(timestamp)) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


def webhook_set(*, access: BookAccess, url: str) -> WebhookEndpoint:
    """Register (or replace) the book's webhook URL. Only the author; the URL must pass the address guards (a 422
    on ``url`` saying why). A new URL gets a new secret."""
    access.require_author()
    if not url.strip():
        raise Invalid("Give the address events should be posted to.", field="url")
    fetch.check_url(url, field="url")
    url = url.strip()
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.filter(book=access.book).first()
        if endpoint is None:
            return WebhookEndpoint.objects.create(book=access.book, url=url, secret=secrets.token_hex(32))
        if endpoint.url != url:
            endpoint.secret = secrets.token_hex(32)
        endpoint.url, endpoint.active = url, True
        endpoint.save()
    return endpoint


def webhook_remove(*, access: BookAccess) -> None:
    access.require_author()
    WebhookEndpoint.objects.filter(book=access.book).delete()


def on_book_event(*, book, kind: str, payload: dict, **_signal) -> None:
    """The receiver of ``book_event`` (sent after commit): queue one delivery for the book's webhook."""
    if kind not in BOOK_EVENT_KINDS:
        return
    try:
        endpoint = WebhookEndpoint.objects.filter(book_id=book.pk, active=True).first()
        if endpoint is not None:
            deliver_webhook.enqueue(str(endpoint.pk), str(uuid.uuid4()), kind, payload, 1)
    except Exception:  # the change it reports has committed: a webhook never fails it
        logger.exception("book %s: the %s webhook delivery could not be queued", book.pk, kind)


def _backoff(attempt: int) -> timedelta:
    return timedelta(seconds=float(getattr(settings, "NOVELGRAPH_WEBHOOK_BACKOFF", 30)) * 2 ** (attempt - 1))


def deliver(endpoint_id: str, event_id: str, kind: str, payload: dict, attempt: int) -> WebhookDelivery | None:
    """One attempt, logged; a failure queues the next attempt (with backoff) until ``MAX_ATTEMPTS``."""
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id, active=True).first()
    if endpoint is None:
        return None
    body = json.dumps(
        {"id": event_id, "kind": kind, "book_id": str(endpoint.book_id), "payload": payload},
        sort_keys=True,
        separators=(",", ":"),
    ).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: sign(endpoint.secret, timestamp, body),
        "X-NovelGraph-Event": kind,
        "X-NovelGraph-Delivery": event_id,
        "Content-Length": str(len(body)),
    }
    status, error = None, ""
    try:
        answer = fetch.request(
            endpoint.url,
            method="POST",
            body=body,
            headers=headers,
            timeout=TIMEOUT,
            max_bytes=64 * 1024,
            follow_redirects=False,
        )
        status = answer.status
        if not 200 <= status < 300:
            error = f"the receiver answered {status}"
    except DomainError as exc:
        error = exc.message[:300]
    delivered = not error
    retry_at = None
    if not delivered and attempt < MAX_ATTEMPTS:
        retry_at = timezone.now() + _backoff(attempt)
    row = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event_id=event_id,
        kind=kind,
        attempt=attempt,
        status_code=status,
        error=error,
        delivered=delivered,
        retry_at=retry_at,
    )
    if retry_at is not None:
        deliver_webhook.using(run_after=retry_at).enqueue(endpoint_id, event_id, kind, payload, attempt + 1)
    return row


@task()
def deliver_webhook(endpoint_id: str, event_id: str, kind: str, payload: dict, attempt: int) -> str:
    """The background task of one attempt (django-tasks; ``python manage.py db_worker`` runs it)."""
    row = deliver(endpoint_id, event_id, kind, payload, attempt)
    return "gone" if row is None else ("delivered" if row.delivered else "failed")
