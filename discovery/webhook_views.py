"""The book's webhook page: the author registers the URL its events are posted to and reads the delivery log."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from novelgraph.core.errors import DomainError
from novelgraph.core.schemas import parse_form

from .access import Cap, page_access
from .schemas import WebhookIn
from .selectors import webhook_deliveries, webhook_of
from .webhooks import webhook_remove, webhook_set

KIND_WORDS = {
    "decision-waiting": "A decision waits",
    "decision-made": "A decision was made",
    "run-finished": "An agent run finished",
    "continuity-finding": "A continuity finding",
}


@login_required
def webhook(request: HttpRequest, book_id: uuid.UUID) -> HttpResponse:
    """GET: the form and the log; POST: register (or remove, ``remove=1``) the URL. Only the author."""
    access = page_access(request, book_id, Cap.BOOK_READ)
    access.require_author()
    error, typed, status = None, "", 200
    if request.method == "POST":
        typed = request.POST.get("url", "")
        try:
            if request.POST.get("remove") == "1":
                webhook_remove(access=access)
            else:
                webhook_set(access=access, url=parse_form(WebhookIn, {"url": typed}).url)
            return redirect(reverse("discovery:webhook", args=[access.book.pk]))
        except DomainError as exc:
            error, status = exc.message, exc.status
    endpoint = webhook_of(access.book)
    deliveries = [{"row": row, "what": KIND_WORDS.get(row.kind, row.kind)} for row in webhook_deliveries(endpoint)]
    return render(
        request,
        "discovery/webhook.html",
        {
            "book": access.book,
            "role": access.role,
            "endpoint": endpoint,
            "deliveries": deliveries,
            "error": error,
            "typed": typed or (endpoint.url if endpoint else ""),
        },
        status=status,
    )
