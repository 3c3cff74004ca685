"""Notifications (issue 29): per book, a person hears by e-mail at once, in a daily digest, or never; an Atom feed
of what waits and what was decided behind a private token a person can revoke. The mail is Django's locmem
outbox (the test settings); the background work runs through the database worker's own code
(``work_off_queue``)."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit
from xml.etree import ElementTree

import pytest
from django.core import mail
from django.core.management import CommandError, call_command
from django.utils import timezone

from approvals.models import Approval
from discovery.models import BookNotice, FeedToken, NotificationMail, NotificationPreference
from discovery.notifications import notifications_digest, send_notice_mail
from novelgraph.core.errors import Invalid
from novelgraph.core.signals import book_event

from .agents_support import work_off_queue
from .factories import BookFactory

ATOM = "{http://www.w3.org/2005/Atom}"


def research(title: str) -> dict:
    return {
        "url": f"https://tides.example.org/{title.lower().replace(' ', '-')}",
        "title": title,
        "claim": "High tide was at 06:12.",
        "citation": "Coastal Almanac",
    }


def a_decision_waits(api, book, capture, title: str = "Tide tables") -> Approval:
    """A research proposal opens an approval: ``decision-waiting`` is sent once it commits."""
    with capture(execute=True):
        made = api.post(f"/books/{book.pk}/research", research(title))
    assert made.status_code == 201, made.content
    return Approval.objects.get(book=book, summary=f"Admit research: {title}")


def choose(api, book, mode: str):
    return api.put(f"/books/{book.pk}/notifications", {"mode": mode})


def mails_to(address: str) -> list:
    return [m for m in mail.outbox if address in m.to]


# --- At once, or never -----------------------------------------------------------------------------------


def test_a_decision_that_waits_mails_an_author_who_chose_at_once_exactly_once(
    author, book, author_api, django_capture_on_commit_callbacks
):
    assert choose(author_api, book, "at-once").json()["mode"] == "at-once"
    approval = a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    assert mail.outbox == []  # background work: nothing is sent in the request
    assert work_off_queue() == 1

    [message] = mail.outbox
    assert message.to == [author.email]
    assert message.subject == "A decision waits in “The Tide Clock”: Admit research: Tide tables"
    assert f"/review/{approval.pk}/" in message.body
    assert f"/review/{approval.pk}/" in message.alternatives[0][0]  # the HTML part links the same page
    assert NotificationMail.objects.filter(person=author, notice__approval_id=approval.pk).count() == 1


def test_an_author_who_chose_never_gets_no_mail_and_the_notice_is_still_kept(
    book, author_api, django_capture_on_commit_callbacks
):
    assert choose(author_api, book, "never").status_code == 200
    approval = a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    assert work_off_queue() == 0
    assert mail.outbox == [] and not NotificationMail.objects.exists()
    assert BookNotice.objects.filter(approval_id=approval.pk, kind="decision-waiting").count() == 1


def test_an_editor_never_hears_of_a_decision_waiting_even_at_once_since_she_does_not_decide(
    editor, book, author_api, editor_api, django_capture_on_commit_callbacks
):
    assert choose(editor_api, book, "at-once").status_code == 200
    assert choose(author_api, book, "never").status_code == 200
    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    work_off_queue()
    assert mails_to(editor.email) == []


def test_a_decision_made_mails_an_editor_at_once_and_not_the_author_who_made_it(
    author, editor, book, author_api, editor_api, django_capture_on_commit_callbacks
):
    assert choose(editor_api, book, "at-once").status_code == 200
    assert choose(author_api, book, "at-once").status_code == 200
    approval = a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        decided = author_api.post(
            f"/approvals/{approval.pk}/verdict", {"verdict": "approve", "rationale": "A primary source."}
        )
    assert decided.status_code == 200, decided.content
    work_off_queue()
    assert [m.subject for m in mails_to(author.email)] == [
        "A decision waits in “The Tide Clock”: Admit research: Tide tables"
    ]
    [told] = mails_to(editor.email)
    assert told.subject == "Decided in “The Tide Clock”: Admit research: Tide tables" and "(approve)" in told.body


def test_the_same_event_twice_and_its_task_twice_send_one_mail(
    author, book, author_api, django_capture_on_commit_callbacks
):
    assert choose(author_api, book, "at-once").status_code == 200
    approval = a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    payload = {"approval_id": str(approval.pk), "kind": approval.kind, "summary": approval.summary}
    book_event.send(sender=Approval, book=book, kind="decision-waiting", payload=payload)  # the same event again
    assert BookNotice.objects.filter(approval_id=approval.pk).count() == 1
    assert work_off_queue() == 1
    # The task itself, run a second time (a worker retrying it), sends nothing more.
    notice = BookNotice.objects.get(approval_id=approval.pk)
    send_notice_mail.enqueue(str(notice.pk), author.pk)
    assert work_off_queue() == 1
    assert len(mail.outbox) == 1
    assert NotificationMail.objects.count() == 1


def test_a_mode_changed_to_never_before_the_worker_runs_sends_nothing(
    book, author_api, django_capture_on_commit_callbacks
):
    assert choose(author_api, book, "at-once").status_code == 200
    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    assert choose(author_api, book, "never").status_code == 200
    assert work_off_queue() == 1
    assert mail.outbox == []


def test_an_editor_removed_before_the_worker_runs_is_not_told(
    editor, book, author_api, editor_api, django_capture_on_commit_callbacks
):
    assert choose(editor_api, book, "at-once").status_code == 200
    assert choose(author_api, book, "never").status_code == 200
    approval = a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        author_api.post(f"/approvals/{approval.pk}/verdict", {"verdict": "approve", "rationale": "A primary source."})
    assert author_api.delete(f"/books/{book.pk}/editors/{editor.pk}").status_code == 204
    assert work_off_queue() == 1
    assert mails_to(editor.email) == [] and not NotificationMail.objects.exists()


def test_a_person_without_an_address_is_queued_nothing(author, book, author_api, django_capture_on_commit_callbacks):
    author.email = ""
    author.save(update_fields=["email"])
    assert choose(author_api, book, "at-once").status_code == 200
    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    assert work_off_queue() == 0 and mail.outbox == []


# --- The daily digest ----------------------------------------------------------------------------------------


def test_the_digest_collects_a_day_into_one_mail_per_person(
    author, outsider, book, other_book, author_api, outsider_api, django_capture_on_commit_callbacks
):
    # The author's default is the digest; a second book of hers chose it too; the outsider's book is hers.
    second = BookFactory(owner=author, title="The Salt Road")
    assert choose(author_api, second, "digest").status_code == 200
    first = a_decision_waits(author_api, book, django_capture_on_commit_callbacks, "Tide tables")
    a_decision_waits(author_api, second, django_capture_on_commit_callbacks, "Salt ledgers")
    a_decision_waits(outsider_api, other_book, django_capture_on_commit_callbacks, "Harbour charts")
    earlier = a_decision_waits(author_api, book, django_capture_on_commit_callbacks, "Old maps")
    BookNotice.objects.filter(approval_id=earlier.pk).update(created_at=timezone.now() - timedelta(days=3))
    assert work_off_queue() == 0 and mail.outbox == []  # nobody chose at once

    today = timezone.localdate()
    with pytest.raises(Invalid) as refused:
        notifications_digest(day=today)
    assert refused.value.field == "day" and "has not ended" in refused.value.message
    assert mail.outbox == [] and not NotificationMail.objects.exists()

    tomorrow = timezone.now() + timedelta(days=1)
    assert notifications_digest(day=today, now=tomorrow) == 2
    [hers] = mails_to(author.email)
    assert hers.subject.endswith(": 2 things on your books")
    assert "“The Salt Road”" in hers.body and "“The Tide Clock”" in hers.body
    assert "Salt ledgers" in hers.body and "Tide tables" in hers.body and f"/review/{first.pk}/" in hers.body
    assert "Old maps" not in hers.body and "Harbour charts" not in hers.body  # another day; another's book
    [theirs] = mails_to(outsider.email)
    assert "Harbour charts" in theirs.body and "Tide tables" not in theirs.body

    # Once per person and day, however often it runs.
    assert notifications_digest(day=today, now=tomorrow) == 0
    assert len(mail.outbox) == 2


def test_the_digest_leaves_out_who_chose_at_once_or_never(author, book, author_api, django_capture_on_commit_callbacks):
    assert choose(author_api, book, "never").status_code == 200
    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    assert notifications_digest(day=timezone.localdate(), now=timezone.now() + timedelta(days=1)) == 0
    assert mail.outbox == []


def test_the_command_queues_yesterdays_digest_and_refuses_today(
    author, book, author_api, django_capture_on_commit_callbacks
):
    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    BookNotice.objects.update(created_at=timezone.now() - timedelta(days=1))
    with pytest.raises(CommandError, match="has not ended"):
        call_command("notifications_digest", "--day", timezone.localdate().isoformat())
    with pytest.raises(CommandError, match="is not a date"):
        call_command("notifications_digest", "--day", "yesterday")
    call_command("notifications_digest")
    assert mail.outbox == []
    assert work_off_queue() == 1
    [digest] = mail.outbox
    assert digest.to == [author.email] and "Tide tables" in digest.body


# --- The API: the caller's own mode ---------------------------------------------------------------------------


def test_the_mode_defaults_by_role_and_the_api_saves_each_persons_own(book, author, editor, author_api, editor_api):
    assert author_api.get(f"/books/{book.pk}/notifications").json() == {
        "book_id": str(book.pk),
        "mode": "digest",
        "chosen": False,
        "default": "digest",
    }
    assert editor_api.get(f"/books/{book.pk}/notifications").json()["mode"] == "never"
    assert choose(editor_api, book, "at-once").json() == {
        "book_id": str(book.pk),
        "mode": "at-once",
        "chosen": True,
        "default": "never",
    }
    assert author_api.get(f"/books/{book.pk}/notifications").json()["mode"] == "digest"  # hers is unchanged
    assert NotificationPreference.objects.get(person=editor, book=book).mode == "at-once"


def test_a_bad_mode_is_a_422_naming_the_field_and_saves_nothing(book, author_api):
    for body in ({"mode": "hourly"}, {"mode": ""}, {}):
        refused = author_api.put(f"/books/{book.pk}/notifications", body)
        assert refused.status_code == 422, body
        assert refused.json()["field"] == "mode"
    assert not NotificationPreference.objects.exists()


def test_an_agent_key_cannot_read_or_choose_notifications(book, sol_api, luna_api, outsider_api):
    for api in (sol_api, luna_api):
        assert api.get(f"/books/{book.pk}/notifications").status_code == 403
        refused = choose(api, book, "at-once")
        assert refused.status_code == 403 and refused.json()["code"] == "missing_capability"
    assert choose(outsider_api, book, "at-once").status_code == 404
    assert not NotificationPreference.objects.exists()


# --- The feed --------------------------------------------------------------------------------------------------


def make_feed(client) -> str:
    made = client.post("/notifications/", {"action": "feed-make"})
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    page = made.content.decode()
    start = page.index('id="feed-url" type="text" readonly value="') + len('id="feed-url" type="text" readonly value="')
    url = page[start : page.index('"', start)]
    return urlsplit(url).path


def test_the_feed_lists_what_waits_and_what_was_decided(
    client, author, book, author_api, django_capture_on_commit_callbacks
):
    waiting = a_decision_waits(author_api, book, django_capture_on_commit_callbacks, "Tide tables")
    decided = a_decision_waits(author_api, book, django_capture_on_commit_callbacks, "Salt ledgers")
    with django_capture_on_commit_callbacks(execute=True):
        assert (
            author_api.post(
                f"/approvals/{decided.pk}/verdict", {"verdict": "approve", "rationale": "A primary source."}
            ).status_code
            == 200
        )
    client.force_login(author)
    path = make_feed(client)
    assert path.startswith("/feeds/nf_") and path.endswith("/atom.xml")
    token = path.split("/")[2]
    assert not FeedToken.objects.filter(token_hash=token).exists()  # only its hash is stored

    client.logout()  # a feed reader has no session
    feed = client.get(path)
    assert feed.status_code == 200 and feed["Content-Type"].startswith("application/atom+xml")
    root = ElementTree.fromstring(feed.content)
    entries = {e.find(f"{ATOM}title").text: e.find(f"{ATOM}link").get("href") for e in root.iter(f"{ATOM}entry")}
    assert entries["Waits for a decision: Admit research: Tide tables"].endswith(f"/review/{waiting.pk}/")
    assert entries["Decided (approve): Admit research: Salt ledgers"].endswith(f"/review/{decided.pk}/")
    assert "Waits for a decision: Admit research: Salt ledgers" not in entries  # decided: no longer waits
    assert len(entries) == 2


def test_the_feed_shows_only_the_persons_own_books(
    client, outsider, book, author_api, django_capture_on_commit_callbacks
):
    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    client.force_login(outsider)
    feed = client.get(make_feed(client))
    assert feed.status_code == 200 and b"Tide tables" not in feed.content and str(book.pk).encode() not in feed.content


def test_a_revoked_or_replaced_token_gets_404(client, author, book):
    client.force_login(author)
    first = make_feed(client)
    second = make_feed(client)  # a new address replaces the old one
    assert client.get(first).status_code == 404
    assert client.get(second).status_code == 200
    revoked = client.post("/notifications/", {"action": "feed-revoke"})
    assert revoked.status_code == 302
    assert client.get(second).status_code == 404
    assert client.get("/feeds/nf_never-made/atom.xml").status_code == 404
    assert not FeedToken.objects.filter(person=author, revoked_at__isnull=True).exists()


# --- The page -----------------------------------------------------------------------------------------------------


def test_the_page_lists_each_book_with_its_mode_and_the_defaults(client, editor, book):
    client.force_login(editor)
    page = client.get("/notifications/").content.decode()
    assert "“The Tide Clock”" in page and "you are its editor; the editor's default applies" in page
    assert 'value="never" selected' in page
    assert "the author of a book gets the daily digest and an editor gets nothing" in page
    assert 'href="/notifications/"' in client.get("/").content.decode()  # in the menu


def test_the_page_saves_a_mode_through_htmx_with_an_inline_confirmation(client, author, book):
    client.force_login(author)
    saved = client.post(f"/notifications/books/{book.pk}/", {"mode": "at-once"}, HTTP_HX_REQUEST="true")
    assert saved.status_code == 200
    row = saved.content.decode()
    assert row.lstrip().startswith(f'<li id="notify-{book.pk}"') and "Saved: at once." in row
    assert 'value="at-once" selected' in row
    assert NotificationPreference.objects.get(person=author, book=book).mode == "at-once"


def test_a_bad_mode_on_the_page_is_an_inline_error_and_saves_nothing(client, author, book):
    client.force_login(author)
    refused = client.post(f"/notifications/books/{book.pk}/", {"mode": "hourly"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 422
    assert 'role="alert"' in refused.content.decode() and "mode:" in refused.content.decode()
    plain = client.post(f"/notifications/books/{book.pk}/", {"mode": "hourly"})
    assert plain.status_code == 422 and "<h1>Notifications</h1>" in plain.content.decode()
    assert not NotificationPreference.objects.exists()
    assert client.post("/notifications/", {"action": "explode"}).status_code == 422


def test_a_book_that_is_not_yours_is_a_404_on_the_page(client, outsider, book):
    client.force_login(outsider)
    assert client.post(f"/notifications/books/{book.pk}/", {"mode": "at-once"}).status_code == 404
    assert not NotificationPreference.objects.exists()
