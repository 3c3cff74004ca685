"""Who may do what to a book: capabilities, roles, and the one access value (seed 000, invariant 2).

The edge (an API route, a page, an admin action, a command) resolves its caller once
into a :class:`BookAccess`: the principal, the book, the role the principal plays on
that book and the capabilities that role holds. Services and selectors take that value
and never look the book up again; reference resolution uses its capabilities to
withhold what the role may not read. A refused capability is a 403 naming it; a book
the caller may not touch is a 404, so its existence is not revealed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import F, Q, QuerySet

from novelgraph.core.auth import Principal, principal_for_user
from novelgraph.core.errors import Forbidden, NotFound

# The capability table is the kernel's (novelgraph.core.roles); it is named here too, beside BookAccess.
from novelgraph.core.roles import CAPABILITIES, AgentRole, Cap, PersonRole, capabilities_of  # noqa: F401
from novelgraph.core.rows import RowModel, per_vendor

from .access_rows import load_book
from .models import Book, Series


def refusal(role: str | None, cap: Cap, why: str = "") -> Forbidden:
    """The 403 for a missing capability: it names the role and the capability."""
    return Forbidden(f"{role or 'caller'} lacks {cap.value}" + (f": {why}" if why else ""), code="missing_capability")


@dataclass(frozen=True)
class BookAccess:
    """What one principal may do to one book, resolved once at the edge and passed down."""

    principal: Principal
    book: Book
    role: str  # author, editor, sol, terra or luna
    caps: frozenset[Cap]

    @property
    def user(self):
        return self.principal.user

    @property
    def is_agent(self) -> bool:
        return self.principal.is_agent

    @property
    def is_author(self) -> bool:
        """The book's author acting as herself (never an agent key of hers)."""
        return self.role == PersonRole.AUTHOR

    def holds(self, *caps: Cap) -> bool:
        """True when the role holds at least one of ``caps``."""
        return any(cap in self.caps for cap in caps)

    def require(self, *caps: Cap, why: str = "") -> None:
        """Refuse with 403 unless the role holds at least one of ``caps``."""
        if not self.holds(*caps):
            raise refusal(self.role, caps[0], why)

    def require_author(self) -> None:
        """Only the book's author, as a person, decides; an agent key, an editor or staff never does."""
        if not self.is_author:
            raise refusal(self.role, Cap.DECIDE, "only the author decides")


def role_on(principal: Principal, book: Book, *, is_editor: bool | None = None) -> str | None:
    """The role ``principal`` plays on ``book``, or None when it may not touch it.

    A key limited to some books touches only those, whatever its role. An agent key acts
    for its owner's books; a person is the author of her books and an editor of the books
    she edits. Staff have no role on a book by being staff.
    """
    if not principal.key_allows(book.pk):
        return None
    if principal.is_agent:
        return principal.key_role if book.owner_id == principal.user.pk else None
    if book.owner_id == principal.user.pk:
        return PersonRole.AUTHOR
    if is_editor is None:
        is_editor = book.editors.filter(pk=principal.user.pk).exists()
    return PersonRole.EDITOR if is_editor else None


def book_access(principal: Principal, book: Book | Any, *caps: Cap, missing: str = "book") -> BookAccess:
    """Resolve what ``principal`` may do to ``book`` (a Book, or its id), once.

    A book the principal may not touch is a 404 (``"<missing> not found"``, so an object
    reached through its book is reported as itself); with ``caps``, a role holding none
    of them is a 403 naming the first.
    """
    if isinstance(book, Book):
        role = role_on(principal, book)
    else:
        book, edits = load_book(principal, book)
        role = role_on(principal, book, is_editor=edits)
    if role is None:
        raise NotFound(f"{missing} not found")
    access = BookAccess(principal=principal, book=book, role=role, caps=capabilities_of(role))
    if caps:
        access.require(*caps)
    return access


@dataclass(frozen=True)
class SeriesAccess:
    """What one principal may do to one series, resolved once at the edge: the role it plays on the series and,
    for each of the series' books it may touch, its :class:`BookAccess` (in planned order). Series access is
    book access: the owner is the series' author (an agent key of hers plays its role), an editor of one of its
    books is its editor for those books only, and a key limited to some books reaches the series through them."""

    principal: Principal
    series: Series
    role: str
    caps: frozenset[Cap]
    books: tuple[BookAccess, ...]
    others: int  # the series' books the principal may not touch (counted, never named)

    @property
    def user(self):
        return self.principal.user

    @property
    def is_author(self) -> bool:
        return self.role == PersonRole.AUTHOR

    def require(self, *caps: Cap, why: str = "") -> None:
        if not any(cap in self.caps for cap in caps):
            raise refusal(self.role, caps[0], why)

    def require_author(self) -> None:
        """Only the series' owner, as a person, hands it out; an agent key, an editor or staff never does."""
        if not self.is_author:
            raise refusal(self.role, Cap.DECIDE, "only the author decides")


def series_books(series: Series) -> list[Book]:
    """The series' books in planned order (a book without one after those with one, then by title)."""
    return list(
        Book.objects.filter(series=series)
        .select_related("series", "owner")
        .order_by(F("planned_order").asc(nulls_last=True), "title", "id")
    )


def series_access(principal: Principal, series: Series | Any, *caps: Cap) -> SeriesAccess:
    """Resolve what ``principal`` may do to ``series`` (a Series, or its id), once: 404 when it may touch
    neither the series nor any of its books; with ``caps``, a role holding none of them is a 403 naming the
    first. Each book's role is :func:`role_on`'s, so the series follows the book rules."""
    if not isinstance(series, Series):
        try:
            series = Series.objects.select_related("owner").get(pk=series)
        except (Series.DoesNotExist, ValueError, TypeError, ValidationError):
            raise NotFound("series not found") from None
    books = series_books(series)
    edited: set = set()
    if not principal.is_agent:
        edited = set(
            Book.editors.through.objects.filter(user_id=principal.user.pk, book__in=books).values_list(
                "book_id", flat=True
            )
        )
    accesses = []
    for book in books:
        role = role_on(principal, book, is_editor=book.pk in edited)
        if role is not None:
            accesses.append(BookAccess(principal=principal, book=book, role=role, caps=capabilities_of(role)))
    role = None
    if series.owner_id == principal.user.pk and (accesses or not principal.key_book_ids):
        role = principal.key_role if principal.is_agent else PersonRole.AUTHOR
    elif accesses:
        role = accesses[0].role
    if role is None:
        raise NotFound("series not found")
    access = SeriesAccess(
        principal=principal,
        series=series,
        role=role,
        caps=capabilities_of(role),
        books=tuple(accesses),
        others=len(books) - len(accesses),
    )
    if caps:
        access.require(*caps)
    return access


def page_series_access(request, series: Series | Any, *caps: Cap) -> SeriesAccess:
    """The signed-in person's access to a series, for a page."""
    return series_access(principal_for_user(request.user), series, *caps)


def books_visible_to(principal: Principal) -> QuerySet[Book]:
    """Every book the principal may touch: an agent key its owner's books, a person the books
    she writes or edits; a key limited to some books only those."""
    books = Book.objects.all()
    if principal.is_agent:
        books = books.filter(owner=principal.user)
    else:
        books = books.filter(Q(owner=principal.user) | Q(editors=principal.user)).distinct()
    if principal.key_book_ids:
        books = books.filter(pk__in=principal.key_book_ids)
    return books


_SENTINEL_USER = -7_340_219  # no user has it: marks where the principal's id goes in a compiled statement
VISIBLE_PAGE = settings.NINJA_PAGINATION_PER_PAGE  # a page of GET /books (selectors.VIEW_PAGE)


@per_vendor
def _first_books_statements(connection) -> dict[bool, tuple[str, list, RowModel]]:
    """``books_visible_to``'s own queryset for a person and for an agent key, in (title, id) order, sliced to a
    page and one more, compiled once per vendor: its SQL, where the principal's id goes, and how to read an id."""
    statements = {}
    for agent in (False, True):
        stand_in = Principal(
            user=get_user_model()(pk=_SENTINEL_USER), key_role=AgentRole.SOL if agent else PersonRole.AUTHOR
        )
        rows = books_visible_to(stand_in).order_by("title", "id").values_list("pk", flat=True)
        sql, params = rows[: VISIBLE_PAGE + 1].query.get_compiler(connection=connection).as_sql()
        slots = [i for i, value in enumerate(params) if value == _SENTINEL_USER]
        assert slots and len(slots) == sum(1 for value in params if value == _SENTINEL_USER)
        statements[agent] = (sql, list(params), RowModel(Book, connection, [Book._meta.pk]))
    return statements


def first_visible_book_ids(principal: Principal) -> tuple[list[uuid.UUID], bool]:
    """The first ``VISIBLE_PAGE`` ids of ``books_visible_to(principal)`` in the order of ``GET /books`` (title,
    id), and whether more follow. The rule stays ``books_visible_to``: its queryset is compiled once per vendor
    and run with the principal's id, since compiling it cost several times running it (``/me``). A
    key limited to some books runs the queryset itself."""
    from django.db import connection

    if principal.key_book_ids:
        rows = books_visible_to(principal).order_by("title", "id").values_list("pk", flat=True)
        rows = list(rows[: VISIBLE_PAGE + 1])
        return rows[:VISIBLE_PAGE], len(rows) > VISIBLE_PAGE
    sql, params, pk = _first_books_statements(connection)[principal.is_agent]
    user_id = principal.user.pk
    with connection.cursor() as cursor:
        cursor.execute(sql, [user_id if value == _SENTINEL_USER else value for value in params])
        rows = [pk.convert(0, row[0], connection) for row in cursor.fetchall()]
    return rows[:VISIBLE_PAGE], len(rows) > VISIBLE_PAGE


def principal_capabilities(principal: Principal) -> frozenset[Cap]:
    """What the principal's role may do in general (``/me``): an agent's role, or an author's."""
    return capabilities_of(principal.key_role)


def page_access(request, book: Book | Any, *caps: Cap, missing: str = "book") -> BookAccess:
    """The signed-in person's access to a book, for a page (refusals become the error page with
    their status through ``novelgraph.core.pages``)."""
    return book_access(principal_for_user(request.user), book, *caps, missing=missing)
