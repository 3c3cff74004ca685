"""Notifications (issue 29): a person hears by e-mail, per book, when something waits for her decision or was
decided: at once, in a daily digest, or never. Each person also has a private Atom feed of what waits and what
was decided, behind a token address she can revoke.

The rules, in one place:
- Without a choice of her own, the author of a book hears in the daily digest, an editor never.
- A decision that waits is told only to the people who may decide on the book (its author); a decision that was
  made, to the book's other people (whoever made it knows).
- Every ``book_event`` of those kinds is kept once as a ``BookNotice`` (the same event twice is one notice).
- At once: one background task per recipient sends the mail; a ``NotificationMail`` row, unique per person and
  notice, makes it once-only, however often the event or the task comes.
- The digest of a day (``notifications_digest``) is sent once a day has ended, one mail per person who chose the
  digest and has notices that day, once-only per person and day.
- The feed token is shown once; only its SHA-256 is stored; a revoked or unknown token answers 404.

Mail goes through Django's e-mail framework (``novelgraph.core.mail``); the background work is django-tasks
(``python manage.py db_worker`` runs it).
"""

from __future__ import annotations

import logging
import secrets
from collections import defaultdict
from datetime import date, datetime, time, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone
from django_tasks import task

from approvals.models import Approval
from novelgraph.core.auth import Principal, principal_for_user
from novelgraph.core.errors import Conflict, Forbidden, Invalid, NotFound
from novelgraph.core.mail import mail_send, site_url
from novelgraph.core.models import hash_api_key
from novelgraph.core.roles import Cap, PersonRole, capabilities_of

from .access import BookAccess, books_visible_to
from .models import (
    Book,
    BookNotice,
    FeedToken,
    NoticeKind,
    NotificationMail,
    NotificationMode,
    NotificationPreference,
)

logger = logging.getLogger(__name__)

DEFAULT_MODE: dict[str, str] = {PersonRole.AUTHOR: NotificationMode.DIGEST, PersonRole.EDITOR: NotificationMode.NEVER}
FEED_DECIDED_DAYS = 30  # how far back the feed lists what was decided
FEED_LIMIT = 100  # entries of each kind in the feed


# --- Preferences ----------------------------------------------------------------------------------------------


def _person_only(principal: Principal) -> None:
    if principal.is_agent:
        raise Forbidden(
            f"{principal.key_role} cannot choose notifications: they are a person's own, set with a browser session "
            "or a personal key",
            code="missing_capability",
        )


def mode_of(*, person, book: Book, role: str) -> tuple[str, bool]:
    """The mode ``person`` hears about ``book`` in, and whether she chose it (else her role's default)."""
    chosen = NotificationPreference.objects.filter(person=person, book=book).values_list("mode", flat=True).first()
    if chosen:
        return chosen, True
    return DEFAULT_MODE.get(role, NotificationMode.NEVER), False


def notification_get(access: BookAccess) -> dict:
    """The caller's own mode on the book (people only)."""
    _person_only(access.principal)
    mode, chosen = mode_of(person=access.user, book=access.book, role=access.role)
    return {"book_id": access.book.pk, "mode": mode, "chosen": chosen, "default": DEFAULT_MODE[access.role]}


def notification_set(*, access: BookAccess, mode: str) -> dict:
    """The caller chooses how she hears about the book: ``at-once``, ``digest`` or ``never`` (a 422 on ``mode``
    otherwise). People only: an agent key has no inbox."""
    _person_only(access.principal)
    if mode not in NotificationMode.values:
        raise Invalid(f"mode: choose one of {', '.join(NotificationMode.values)}", field="mode")
    with transaction.atomic():
        NotificationPreference.objects.update_or_create(person=access.user, book=access.book, defaults={"mode": mode})
    return notification_get(access)


def notification_modes(principal: Principal) -> list[dict]:
    """Every book the person may touch, with her role on it and her mode (chosen or default), by title."""
    _person_only(principal)
    books = list(books_visible_to(principal).order_by("title", "id"))
    chosen = dict(
        NotificationPreference.objects.filter(person=principal.user, book__in=books).values_list("book_id", "mode")
    )
    rows = []
    for book in books:
        role = PersonRole.AUTHOR if book.owner_id == principal.user.pk else PersonRole.EDITOR
        default = DEFAULT_MODE[role]
        rows.append(
            {"book": book, "role": role, "mode": chosen.get(book.pk, default), "chosen": book.pk in chosen,
             "default": default}
        )  # fmt: skip
    return rows


# --- Who hears of a notice ----------------------------------------------------------------------------------


def _people_of(book: Book) -> list[tuple[Any, str]]:
    """The book's people with their role: its author, then its editors."""
    people = [(book.owner, PersonRole.AUTHOR)]
    people += [(editor, PersonRole.EDITOR) for editor in book.editors.exclude(pk=book.owner_id).order_by("pk")]
    return people


def notice_recipients(notice: BookNotice) -> list[tuple[Any, str]]:
    """Who hears of ``notice``, each with her mode: a decision that waits, the people who may decide; a decision
    made, the book's other people (not whoever made it)."""
    book = notice.book
    people = _people_of(book)
    if notice.kind == NoticeKind.DECISION_WAITING:
        people = [(p, role) for p, role in people if Cap.DECIDE in capabilities_of(role)]
    else:
        decided_by = Approval.objects.filter(pk=notice.approval_id).values_list("decided_by_id", flat=True).first()
        people = [(p, role) for p, role in people if p.pk != decided_by]
    chosen = dict(
        NotificationPreference.objects.filter(book=book, person__in=[p for p, _ in people]).values_list(
            "person_id", "mode"
        )
    )
    return [(p, chosen.get(p.pk, DEFAULT_MODE[role])) for p, role in people]


# --- Notices and the mail at once ---------------------------------------------------------------------------


def notice_record(*, book: Book, kind: str, payload: dict) -> tuple[BookNotice, bool]:
    """Keep one notice of an approval's event; the same event again returns the notice already kept."""
    approval_id = payload["approval_id"]
    found = BookNotice.objects.filter(approval_id=approval_id, kind=kind).first()
    if found is not None:
        return found, False
    try:
        with transaction.atomic():
            return (
                BookNotice.objects.create(
                    book_id=book.pk,
                    kind=kind,
                    approval_id=approval_id,
                    summary=str(payload.get("summary", ""))[:500],
                    verdict=str(payload.get("verdict") or "")[:30],
                ),
                True,
            )
    except IntegrityError:  # the same event, kept at the same moment by another process
        return BookNotice.objects.get(approval_id=approval_id, kind=kind), False


def on_book_event(*, book, kind: str, payload: dict, **_signal) -> None:
    """The receiver of ``book_event`` (sent after commit): keep the notice, and queue a mail for each recipient
    who chose to hear at once."""
    if kind not in NoticeKind.values:
        return
    try:
        notice, new = notice_record(book=book, kind=kind, payload=payload)
        if not new:
            return
        for person, mode in notice_recipients(notice):
            if mode == NotificationMode.AT_ONCE and person.email:
                send_notice_mail.enqueue(str(notice.pk), person.pk)
    except Exception:  # the change it reports has committed: a notification never fails it
        logger.exception("book %s: the %s notification could not be queued", book.pk, kind)


def _approval_url(approval_id) -> str:
    return site_url() + reverse("approvals:decision", args=[approval_id])


def notice_mail_send(*, notice_id: Any, person_id: Any) -> bool:
    """Mail ``notice`` to the person, once: True when this call sent it. Nothing is sent when the mail was sent
    before, when she no longer hears at once about the book, or when she may no longer read it."""
    notice = BookNotice.objects.select_related("book").filter(pk=notice_id).first()
    person = get_user_model().objects.filter(pk=person_id, is_active=True).first()
    if notice is None or person is None or not person.email:
        return False
    if dict((p.pk, mode) for p, mode in notice_recipients(notice)).get(person.pk) != NotificationMode.AT_ONCE:
        return False
    context = {
        "notice": notice,
        "book": notice.book,
        "waiting": notice.kind == NoticeKind.DECISION_WAITING,
        "approval_url": _approval_url(notice.approval_id),
    }
    return _mail_once(person, "notification_notice", context, notice=notice)


def _mail_once(person, template: str, context: dict, **record) -> bool:
    """Send ``template`` to the person once per ``record`` (a notice, or a digest day): the NotificationMail
    row's unique constraint decides; False when it was sent before. The mail is sent inside the transaction,
    so a mail server that refuses rolls the record back and the task fails (and is tried again)."""
    with transaction.atomic():
        try:
            with transaction.atomic():
                NotificationMail.objects.create(person=person, **record)
        except IntegrityError:
            return False
        context = {"person": person, "settings_url": site_url() + reverse("notifications"), **context}
        mail_send(to=[person.email], template=template, context=context)
    return True


@task()
def send_notice_mail(notice_id: str, person_id: int) -> str:
    """Background task: one at-once mail (``notice_mail_send``)."""
    return "sent" if notice_mail_send(notice_id=notice_id, person_id=person_id) else "not sent"


# --- The daily digest ---------------------------------------------------------------------------------------


def _day_bounds(day: date) -> tuple[datetime, datetime]:
    start = timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())
    return start, start + timedelta(days=1)


def digest_day_check(day: date, *, now: datetime | None = None) -> tuple[datetime, datetime]:
    """The start and end of ``day``, refused (422 on ``day``) while it has not ended: a digest is a whole day."""
    start, end = _day_bounds(day)
    if end > (now or timezone.now()):
        raise Invalid(f"day: {day.isoformat()} has not ended yet; a digest collects a whole day", field="day")
    return start, end


def digest_day_default(now: datetime | None = None) -> date:
    """Yesterday, in the site's time zone: the last day that has ended."""
    return timezone.localdate(now or timezone.now()) - timedelta(days=1)


def notifications_digest(*, day: date, now: datetime | None = None) -> int:
    """Send the digest of ``day``: to each person who hears about a book in the digest, one mail listing that
    day's notices on all such books. A day that has not ended is refused (422 on ``day``); a person gets a day's
    digest once, however often this runs. Returns how many mails were sent."""
    start, end = digest_day_check(day, now=now)
    notices = list(
        BookNotice.objects.select_related("book")
        .filter(created_at__gte=start, created_at__lt=end)
        .order_by("created_at", "id")
    )
    per_person: dict[Any, list[BookNotice]] = defaultdict(list)
    people: dict[Any, Any] = {}
    for notice in notices:
        for person, mode in notice_recipients(notice):
            if mode == NotificationMode.DIGEST and person.email and person.is_active:
                per_person[person.pk].append(notice)
                people[person.pk] = person
    sent = 0
    for person_id, collected in per_person.items():
        if _digest_send(person=people[person_id], day=day, notices=collected):
            sent += 1
    return sent


def _digest_send(*, person, day: date, notices: list[BookNotice]) -> bool:
    books: dict[Any, dict] = {}
    for notice in notices:
        entry = books.setdefault(notice.book_id, {"book": notice.book, "waiting": [], "decided": []})
        item = {"notice": notice, "url": _approval_url(notice.approval_id)}
        entry["waiting" if notice.kind == NoticeKind.DECISION_WAITING else "decided"].append(item)
    context = {
        "day": day,
        "books": sorted(books.values(), key=lambda b: (b["book"].title, str(b["book"].pk))),
        "count": len(notices),
    }
    return _mail_once(person, "notification_digest", context, digest_day=day)


@task()
def send_digest(day: str) -> int:
    """Background task: the digest of ``day`` (ISO date)."""
    return notifications_digest(day=date.fromisoformat(day))


# --- The feed -----------------------------------------------------------------------------------------------


def feed_token_create(*, principal: Principal) -> tuple[FeedToken, str]:
    """Make the person's feed address, replacing (revoking) the one she had; returns the token, shown once and
    never stored (only its hash)."""
    _person_only(principal)
    token = f"nf_{secrets.token_urlsafe(32)}"
    try:
        with transaction.atomic():
            FeedToken.objects.filter(person=principal.user, revoked_at__isnull=True).update(revoked_at=timezone.now())
            made = FeedToken.objects.create(person=principal.user, prefix=token[:10], token_hash=hash_api_key(token))
    except IntegrityError:
        raise Conflict("another feed address was made at the same moment; reload the page") from None
    return made, token


def feed_token_live(principal: Principal) -> FeedToken | None:
    return FeedToken.objects.filter(person=principal.user, revoked_at__isnull=True).first()


def feed_token_revoke(*, principal: Principal) -> bool:
    """Revoke the person's feed address: from then on it answers 404. True when there was one."""
    _person_only(principal)
    with transaction.atomic():
        return bool(
            FeedToken.objects.filter(person=principal.user, revoked_at__isnull=True).update(revoked_at=timezone.now())
        )


def feed_open(token: str) -> Principal:
    """The person a feed token belongs to, or 404 (an unknown token, a revoked one and an inactive account
    answer alike)."""
    found = (
        FeedToken.objects.select_related("person")
        .filter(token_hash=hash_api_key(token or ""), revoked_at__isnull=True, person__is_active=True)
        .first()
    )
    if found is None:
        raise NotFound("not found")
    return principal_for_user(found.person)


def feed_path(token: str) -> str:
    return reverse("notification-feed", args=[token])


def feed_entries(principal: Principal, *, now: datetime | None = None) -> list[dict]:
    """The person's feed: what waits (pending approvals on her books, newest first), then what was decided on her
    books in the last ``FEED_DECIDED_DAYS`` days. Each entry links to the decision's page."""
    books = books_visible_to(principal)
    waiting = (
        Approval.objects.filter(book__in=books, status=Approval.Status.PENDING)
        .select_related("book")
        .order_by("-created_at", "-id")[:FEED_LIMIT]
    )
    since = (now or timezone.now()) - timedelta(days=FEED_DECIDED_DAYS)
    decided = (
        BookNotice.objects.filter(book__in=books, kind=NoticeKind.DECISION_MADE, created_at__gte=since)
        .select_related("book")
        .order_by("-created_at", "-id")[:FEED_LIMIT]
    )
    entries = [
        {
            "id": f"urn:novelgraph:approval:{a.pk}:waiting",
            "title": f"Waits for a decision: {a.summary}",
            "book": a.book,
            "description": f"In “{a.book.title}”: {a.summary}",
            "link": _approval_url(a.pk),
            "when": a.created_at,
            "waiting": True,
        }
        for a in waiting
    ]
    entries += [
        {
            "id": f"urn:novelgraph:notice:{n.pk}",
            "title": f"Decided ({n.verdict or 'decided'}): {n.summary}",
            "book": n.book,
            "description": f"In “{n.book.title}”: {n.summary} ({n.verdict or 'decided'})",
            "link": _approval_url(n.approval_id),
            "when": n.created_at,
            "waiting": False,
        }
        for n in decided
    ]
    return entries
