"""``{% agents_panel %}``: the agents' buttons and runs on a book's page (the page's ``book`` and ``role``);
``{% chapter_check %}``: the continuity check's button and status on a chapter's page (its ``chapter`` too)."""

from __future__ import annotations

from django import template

from discovery.access import BookAccess, capabilities_of
from discovery.loop.models import LoopStatus
from discovery.loop.selectors import loop_meta
from novelgraph.core.auth import principal_for_user

from ..views import agents_panel as panel_context
from ..views import chapter_check_panel

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


@register.inclusion_tag("agents/_chapter_check.html", takes_context=True)
def chapter_check(context) -> dict:
    request, role = context["request"], context["role"]
    access = BookAccess(
        principal=principal_for_user(request.user), book=context["book"], role=role, caps=capabilities_of(role)
    )
    check = chapter_check_panel(access, context["chapter"].number)
    return {"check": check, "csrf_token": context.get("csrf_token"), "request": request}
