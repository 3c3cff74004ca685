"""Starting in the browser: a new author creates a series and a book, invites and removes an editor,
starts the discovery — every form through the same services as the API, with CSRF enforced."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from discovery.models import Book, DiscoverySession, Series
from novelgraph.core.mail import site_url

from .factories import BookFactory, SeriesFactory, UserFactory
from .pages_support import csrf_browser, submit

pytestmark = pytest.mark.django_db


@pytest.fixture
def newcomer(db):
    return UserFactory(username="nadia")


def test_the_empty_dashboard_offers_to_start_a_book(newcomer):
    page = csrf_browser(newcomer).get("/").content.decode()
    assert "No books yet" in page
    assert 'href="/books/new/"' in page and 'href="/series/new/"' in page
    assert "POST /api/v1/books" not in page


def test_a_new_author_creates_a_series_then_a_book_in_it(newcomer):
    browser = csrf_browser(newcomer)
    response = submit(
        browser, "/series/new/", "/series/new/", {"title": "Salt Roads", "premise": "Smugglers and tides."}
    )
    series = Series.objects.get(owner=newcomer)
    assert response.status_code == 302 and response["Location"] == f"/books/new/?series={series.pk}"

    form = browser.get(response["Location"]).content.decode()
    assert f'<option value="{series.pk}" selected>Salt Roads</option>' in form
    assert '<option value="mystery">Mystery</option>' in form

    response = submit(
        browser,
        "/books/new/",
        "/books/new/",
        {
            "title": "The Pilot's Daughter",
            "premise": "A pilot's daughter reads the sea.",
            "genre_pack": "mystery",
            "series_id": str(series.pk),
            "planned_order": "1",
        },
    )
    book = Book.objects.get(owner=newcomer)
    assert response.status_code == 302 and response["Location"] == f"/books/{book.pk}/"
    assert (book.series, book.genre_pack, book.planned_order) == (series, "mystery", 1)
    home = browser.get("/").content.decode()
    assert "The Pilot&#x27;s Daughter" in home and "No books yet" not in home


def test_a_book_without_a_title_is_refused_inline_and_nothing_is_created(newcomer):
    response = submit(csrf_browser(newcomer), "/books/new/", "/books/new/", {"title": "  ", "premise": "kept"})
    assert response.status_code == 422
    page = response.content.decode()
    assert 'role="alert"' in page and "title" in page and "kept" in page
    assert not Book.objects.exists()


def test_a_book_cannot_go_into_another_authors_series(newcomer, outsider):
    theirs = SeriesFactory(owner=outsider)
    response = submit(
        csrf_browser(newcomer), "/books/new/", "/books/new/", {"title": "Mine", "series_id": str(theirs.pk)}
    )
    assert response.status_code == 404
    assert "series not found" in response.content.decode()
    assert not Book.objects.filter(owner=newcomer).exists()


def test_a_form_without_the_csrf_token_is_refused(newcomer):
    response = csrf_browser(newcomer).post("/books/new/", {"title": "No token"})
    assert response.status_code == 403
    assert not Book.objects.exists()


def test_the_author_invites_an_editor_by_username_then_removes_her(
    author, book, mailoutbox, django_capture_on_commit_callbacks
):
    newcomer = UserFactory(username="mira")
    browser = csrf_browser(author)
    people = f"/books/{book.pk}/people/"

    with django_capture_on_commit_callbacks(execute=True):
        response = submit(browser, people, people, {"username": "mira"})
    assert response.status_code == 302
    # The editor is told: what book, who invited her, and a link to it, on the shared e-mail bases.
    assert len(mailoutbox) == 1
    told = mailoutbox[0]
    assert told.to == ["mira@example.test"] and told.subject == f"ada invited you to edit “{book.title}” on NovelGraph"
    link = f"{site_url()}/books/{book.pk}/"
    assert f"ada invited you to edit the book “{book.title}”" in told.body and link in told.body
    assert f'<a href="{link}">' in told.alternatives[0][0]
    assert told.body.rstrip().endswith(f"NovelGraph · {site_url()}")
    assert book.editors.filter(pk=newcomer.pk).exists()
    assert csrf_browser(newcomer).get(f"/books/{book.pk}/").status_code == 200, "the editor sees the book"

    page = browser.get(people).content.decode()
    assert "mira" in page and "data-confirm=" in page, "removing asks to confirm first"
    response = submit(browser, people, f"{people}{newcomer.pk}/remove/", {})
    assert response.status_code == 302
    assert not book.editors.filter(pk=newcomer.pk).exists()
    assert csrf_browser(newcomer).get(f"/books/{book.pk}/").status_code == 404


@pytest.mark.parametrize(
    ("username", "status", "message"),
    [("nobody", 422, "no active account is named"), ("ada", 422, "you are this book"), ("eli", 409, "already edits")],
)
def test_inviting_an_unknown_person_herself_or_a_current_editor_says_why(
    author, book, username, status, message, mailoutbox, django_capture_on_commit_callbacks
):
    people = f"/books/{book.pk}/people/"
    before = list(book.editors.values_list("pk", flat=True))
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(csrf_browser(author), people, people, {"username": username})
    assert response.status_code == status
    assert message in response.content.decode()
    assert list(book.editors.values_list("pk", flat=True)) == before
    assert mailoutbox == [], "a refused invitation tells nobody"


def test_an_editor_may_not_change_who_edits_the_book(editor, book):
    other = UserFactory(username="zed")
    people = f"/books/{book.pk}/people/"
    browser = csrf_browser(editor)
    assert "Invite an editor" not in browser.get(people).content.decode()
    response = submit(browser, people, people, {"username": "zed"})
    assert response.status_code == 403
    assert not book.editors.filter(pk=other.pk).exists()
    response = submit(browser, people, f"{people}{editor.pk}/remove/", {})
    assert response.status_code == 403
    assert book.editors.filter(pk=editor.pk).exists()


def test_a_stranger_cannot_see_or_change_the_books_people(outsider, book):
    browser = csrf_browser(outsider)
    assert browser.get(f"/books/{book.pk}/people/").status_code == 404


def test_the_author_starts_the_discovery_of_her_new_book(newcomer):
    book = BookFactory(owner=newcomer, title="Fresh")
    response = submit(csrf_browser(newcomer), f"/books/{book.pk}/", f"/books/{book.pk}/discovery/start/", {})
    assert response.status_code == 302
    assert DiscoverySession.objects.filter(book=book).count() == 1


def test_the_local_author_is_a_plain_author_and_staff_is_a_separate_account(db):
    User = get_user_model()
    User.objects.create_user("author", password="x", is_staff=True, is_superuser=True)  # as earlier versions made her
    out = StringIO()
    call_command("ensure_local_author", stdout=out)
    author, staff = User.objects.get(username="author"), User.objects.get(username="staff")
    assert not author.is_staff and not author.is_superuser
    assert staff.is_staff and staff.is_superuser and staff.check_password("novelgraph-staff")
    printed = out.getvalue()
    assert "as the author: author" in printed and "as the staff (the admin): staff / novelgraph-staff" in printed

    call_command("demo", stdout=StringIO())
    out = StringIO()
    call_command("ensure_local_author", stdout=out)
    assert "as the editor: editor / novelgraph-editor" in out.getvalue(), "all three logins on every run"
    assert not User.objects.get(username="author").is_superuser


def test_the_api_invites_and_removes_an_editor_through_the_same_service(
    author_api, sol_api, book, mailoutbox, django_capture_on_commit_callbacks
):
    mira = UserFactory(username="mira")
    assert sol_api.post(f"/books/{book.pk}/editors", {"username": "mira"}).status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        created = author_api.post(f"/books/{book.pk}/editors", {"username": "mira"})
    assert created.status_code == 201 and created.json() == {"id": mira.pk, "username": "mira"}
    assert [message.to for message in mailoutbox] == [["mira@example.test"]], "the editor is told by e-mail"
    assert author_api.post(f"/books/{book.pk}/editors", {"username": "mira"}).status_code == 409
    assert author_api.delete(f"/books/{book.pk}/editors/{mira.pk}").status_code == 204
    assert not book.editors.filter(pk=mira.pk).exists()
    assert author_api.delete(f"/books/{book.pk}/editors/{mira.pk}").status_code == 404
