"""``{% agents_panel %}``: the agents' buttons and runs on a book's page (the page's ``book`` and ``role``)."""

from __future__ import annotations

from django import template

from discovery.access import BookAccess, capabilities_of
from discovery.loop.models import LoopStatus
from discovery.loop.selectors import loop_meta
from novelgraph.core.auth import principal_for_user

from ..views import agents_panel as panel_context

register = template.Library()


@register.inclusion_tag("agents/_panel.html", takes_context=True)
def agents_panel(context) -> dict:
    request = context["request"]
    role = context["role"]
    # The page resolved the visitor's access to the book already; the panel reuses it, reading nothing again.
    access = BookAccess(
        principal=principal_for_user(request.user), book=context["book"], role=role, caps=capabilities_of(role)
    )
    agents = panel_context(request, access)
    # After hand-off the discovery's buttons step aside (the book page knows already; other pages ask the loop).
    if "handed_off" in context:
        agents["handed_off"] = bool(context["handed_off"])
    else:
        meta = loop_meta(context["book"])
        agents["handed_off"] = meta is not None and meta.status == LoopStatus.HANDED_OFF
    return {"agents": agents, "csrf_token": context.get("csrf_token"), "request": request}
