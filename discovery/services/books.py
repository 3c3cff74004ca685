"""Series and books: a person creates them and becomes their author."""

from __future__ import annotations

import logging
import uuid

from django.contrib.auth import get_user_model
from django.db import transaction
from django.urls import reverse
from django.utils.text import slugify

from novelgraph.core.auth import Principal
from novelgraph.core.db import lock_row
from novelgraph.core.errors import Conflict, Forbidden, Invalid, NotFound
from novelgraph.core.mail import mail_send, site_url

from ..access import BookAccess
from ..models import Book, Series
from ..schemas import BookEditIn, BookIn, EditorIn, SeriesIn
from ..signals import person_acted, premise_changed, premise_impact

logger = logging.getLogger(__name__)


def _person_only(principal: Principal, what: str) -> None:
    """Series and books are created by their author, as herself: never by an agent key, and never
    by a key limited to other books."""
    if principal.is_agent:
        raise Forbidden(
            f"{principal.key_role} cannot create {what}: series and books are created by their author, "
            "with a browser session or a personal key",
            code="missing_capability",
        )
    if principal.key_book_ids:
        raise Forbidden(f"this key is limited to some books; it cannot create {what}", code="key_scope")


def series_create(*, principal: Principal, payload: SeriesIn) -> Series:
    """A person creates a series, which she owns."""
    _person_only(principal, "series")
    return Series.objects.create(owner=principal.user, **payload.dict())


def _unique_slug(title: str) -> str:
    base = slugify(title)[:200] or "book"
    return f"{base}-{uuid.uuid4().hex[:8]}"


def book_create(*, principal: Principal, payload: BookIn) -> Book:
    """A person creates a book and becomes its author; the series, if named, must be hers (404 otherwise)."""
    _person_only(principal, "books")
    data = payload.dict()
    series = None
    if data.pop("series_id") is not None:
        series = Series.objects.filter(pk=payload.series_id, owner=principal.user).first()
        if series is None:
            raise NotFound("series not found", field="series_id")
    with transaction.atomic():
        return Book.objects.create(owner=principal.user, series=series, slug=_unique_slug(payload.title), **data)


# --- Editors ---------------------------------------------------------------------


def _author_only(access: BookAccess, what: str) -> None:
    """Only the book's author, as a person, chooses who edits it (an agent key, an editor or staff never does)."""
    if not access.is_author or access.is_agent:
        raise Forbidden(f"{access.role} cannot {what}: only the book's author chooses its editors", code="author_only")


def book_editor_add(*, access: BookAccess, payload: EditorIn):
    """The author invites a person, by username, to edit her book; returns that person.

    An editor reads everything and writes turns; she never decides. Unknown or inactive
    usernames and the author herself are a 422 naming ``username``; an editor already
    on the book is a 409 and nothing changes. Once the invitation is stored, the editor is told by
    e-mail (what book, who invited her, a link to it), when her account has an address.
    """
    _author_only(access, "add an editor")
    User = get_user_model()
    person = User.objects.filter(username=payload.username, is_active=True).first()
    if person is None:
        raise Invalid(f"no active account is named {payload.username!r}", field="username")
    if person.pk == access.book.owner_id:
        raise Invalid("you are this book's author; an author is not also its editor", field="username")
    with transaction.atomic():
        lock_row(Book, access.book.pk)
        if access.book.editors.filter(pk=person.pk).exists():
            raise Conflict(f"{person.get_username()} already edits this book", code="already_editor")
        access.book.editors.add(person)
        book, inviter = access.book, access.user
        transaction.on_commit(lambda: editor_invitation_send(book=book, editor=person, inviter=inviter))
    return person


def editor_invitation_send(*, book: Book, editor, inviter) -> int:
    """Tell ``editor`` by e-mail that ``inviter`` asked her to edit ``book``, with a link to the book
    (nothing is sent to an account without an address); returns how many messages were sent.

    The invitation stands whatever happens to the message: a mail server that is down is logged, not
    raised, so the author's page does not fail after the editor was added."""
    try:
        return mail_send(
            to=[editor.email],
            template="editor_invited",
            context={
                "book": book,
                "editor": editor,
                "inviter": inviter.get_full_name() or inviter.get_username(),
                "book_url": site_url() + reverse("discovery:book", args=[book.pk]),
            },
        )
    except OSError:
        logger.exception("the invitation e-mail to %s about book %s was not sent", editor.get_username(), book.pk)
        return 0


def book_editor_remove(*, access: BookAccess, user_id) -> None:
    """The author removes an editor from her book (404 when that person does not edit it)."""
    _author_only(access, "remove an editor")
    with transaction.atomic():
        lock_row(Book, access.book.pk)
        person = access.book.editors.filter(pk=user_id).first() if str(user_id).isdigit() else None
        if person is None:
            raise NotFound("editor not found", field="user_id")
        access.book.editors.remove(person)


def book_agents_act_set(*, access: BookAccess, on: bool) -> Book:
    """The author turns the agents acting on their own on or off for her book (on by default): with it on,
    Sol takes the next step after each of her turns, confirmations and verdicts; the buttons stay either way."""
    access.require_author()
    Book.objects.filter(pk=access.book.pk).update(agents_act=on)
    access.book.agents_act = on
    return access.book


def book_premise_impact(book: Book) -> dict:
    """What a new premise would change, from every app that keeps something of it (the loop: ``reopens``, the
    gate it goes back from, the parts the premise feeds). Reads only."""
    impact: dict = {"reopens": False}
    for _receiver, answer in premise_impact.send(sender=Book, book=book):
        impact.update(answer or {})
    return impact


def book_edit_allowed(access: BookAccess) -> None:
    """Only the book's author, as a person, changes her book (never an agent key, an editor or staff)."""
    if not access.is_author or access.is_agent:
        raise Forbidden(f"{access.role} cannot edit this book: only its author changes her book", code="author_only")


def book_edit(*, access: BookAccess, payload: BookEditIn) -> Book:
    """The author changes her book's title, premise or genre (a person's act: never an agent key, an editor or
    staff). A new premise after G0 passed reopens G0; she sees the impact first: without ``reopen`` that is a
    409 ``reopens_g0`` carrying it. A book whose premise was empty gets one, and its G0 can proceed."""
    book_edit_allowed(access)
    with transaction.atomic():
        lock_row(Book, access.book.pk)
        book = access.book
        book.refresh_from_db(fields=["title", "premise", "genre_pack"])
        changes = {
            name: value
            for name in ("title", "premise", "genre_pack")
            if (value := getattr(payload, name)) is not None and value != getattr(book, name)
        }
        if not changes:
            return book
        previous = book.premise
        if "premise" in changes:
            impact = book_premise_impact(book)
            if impact.get("handed_off"):
                raise Conflict(
                    "handed off to drafting: reopen the discovery first to change this book's premise",
                    code="handed_off",
                    field="premise",
                )
            if impact.get("reopens") and not payload.reopen:
                raise Conflict(
                    f"a new premise reopens G0 (the loop is at {impact.get('gate')}): look at the impact, "
                    "then confirm with reopen=true",
                    code="reopens_g0",
                    field="premise",
                    impact=impact,
                )
        for name, value in changes.items():
            setattr(book, name, value)
        book.save(update_fields=[*changes, "updated_at"])
        if "premise" in changes:
            premise_changed.send(sender=Book, book=book, previous=previous, user=access.user)
            person_acted.send(sender=Book, book=book, user=access.user, act="premise")
    return book
