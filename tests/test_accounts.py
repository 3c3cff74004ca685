"""Accounts without the shell: staff create a person in the admin with password login disabled and invite
her by e-mail: a one-time link reaches her address, and she sets her password through it (the link then
stops working).

A person's password is hers: no staff member, superusers included, sets, resets or disables the password
of another account in the admin, or makes a link for one that has a password; a person who forgot hers
resets it herself by e-mail."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from novelgraph.core.mail import site_url

from .factories import PASSWORD, UserFactory
from .pages_support import TOKEN

pytestmark = pytest.mark.django_db


def _invite(admin: Client, *people) -> str:
    """Run the admin's "Invite by e-mail" action on ``people``; returns the page it answers."""
    changelist = "/admin/auth/user/"
    token = TOKEN.search(admin.get(changelist).content.decode()).group(1)
    done = admin.post(
        changelist,
        {"action": "invite_by_email", "_selected_action": [p.pk for p in people], "csrfmiddlewaretoken": token},
        follow=True,
    )
    assert done.status_code == 200
    return done.content.decode()


def test_staff_create_an_author_and_invite_her_by_email_to_set_her_password(db):
    staff = UserFactory(username="root", is_staff=True, is_superuser=True)
    admin = Client(enforce_csrf_checks=True)
    assert admin.login(username=staff.username, password=PASSWORD)
    add = "/admin/auth/user/add/"
    token = TOKEN.search(admin.get(add).content.decode()).group(1)
    created = admin.post(
        add,
        {"username": "noor", "email": "noor@example.test", "usable_password": "false", "csrfmiddlewaretoken": token},
    )
    assert created.status_code == 302, created.content.decode()[:2000]
    noor = get_user_model().objects.get(username="noor")
    assert not noor.has_usable_password() and not noor.is_staff

    page = _invite(admin, noor)
    assert "Invitation sent to noor@example.test for the username noor" in page
    assert "/set-password/" not in page  # the link goes to her, never to staff
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["noor@example.test"] and message.subject == "Your NovelGraph account: choose your password"
    assert "Your username is: noor" in message.body
    site = re.escape(site_url())
    link = re.search(site + r"(/set-password/[^/\s]+/[^/\s]+/)", message.body).group(1)
    html = message.alternatives[0][0]
    assert link in html and "<strong>noor</strong>" in html
    assert message.body.rstrip().endswith(f"NovelGraph · {site_url()}")  # the shared base's footer

    person = Client(enforce_csrf_checks=True)
    form = person.get(link, follow=True)
    assert form.status_code == 200 and "Choose your password" in form.content.decode()
    page = form.redirect_chain[-1][0] if form.redirect_chain else link
    token = TOKEN.search(form.content.decode()).group(1)
    secret = "tide-and-lantern-42"
    set_it = person.post(page, {"new_password1": secret, "new_password2": secret, "csrfmiddlewaretoken": token})
    assert set_it.status_code == 302 and set_it["Location"] == "/login/?password=set"
    assert "Your password is set" in person.get(set_it["Location"]).content.decode()
    assert Client().login(username="noor", password=secret)

    again = Client().get(link, follow=True).content.decode()
    assert "has been used or has expired" in again


def test_the_link_action_is_for_staff_only(author):
    browser = Client()
    assert browser.login(username=author.username, password=PASSWORD)
    assert browser.get("/admin/auth/user/").status_code == 302  # to the admin's login


# --- What staff cannot do to a person's account ------------------------------------------------------


@pytest.fixture
def staff(db):
    return UserFactory(username="root", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_browser(staff):
    browser = Client(enforce_csrf_checks=True)
    assert browser.login(username=staff.username, password=PASSWORD)
    return browser


def _token(browser: Client, url: str) -> str:
    return TOKEN.search(browser.get(url).content.decode()).group(1)


def _still_her_password(person) -> None:
    person.refresh_from_db()
    assert person.has_usable_password() and person.check_password(PASSWORD)
    assert Client().login(username=person.username, password=PASSWORD)


@pytest.mark.parametrize("who", ["author", "editor"])
def test_staff_cannot_make_a_set_password_link_for_a_person_who_has_a_password(admin_browser, author, editor, who):
    person = {"author": author, "editor": editor}[who]
    page = _invite(admin_browser, person)

    assert "/set-password/" not in page
    assert f"No link was made for {person.username}: the account already has a password." in page
    assert mail.outbox == []
    _still_her_password(person)


def test_a_person_without_an_email_address_is_not_invited_and_staff_are_told_why(admin_browser):
    noor = UserFactory(username="noor", email="")
    noor.set_unusable_password()
    noor.save()
    zara = UserFactory(username="zara", email="zara@example.test")
    zara.set_unusable_password()
    zara.save()

    page = _invite(admin_browser, noor, zara)

    assert "No invitation was sent to noor: the account has no e-mail address." in page
    assert "Invitation sent to zara@example.test for the username zara" in page
    assert [message.to for message in mail.outbox] == [["zara@example.test"]]


@pytest.mark.parametrize("who", ["author", "editor", "another superuser"])
def test_no_staff_member_sets_resets_or_disables_another_persons_password_in_the_admin(
    admin_browser, author, editor, who
):
    person = {
        "author": author,
        "editor": editor,
        "another superuser": UserFactory(username="root2", is_staff=True, is_superuser=True),
    }[who]
    form = f"/admin/auth/user/{person.pk}/password/"
    change = f"/admin/auth/user/{person.pk}/change/"

    shown = admin_browser.get(form, follow=True)
    assert shown.redirect_chain[-1][0] == change
    assert "Staff cannot set, reset or disable another person&#x27;s password." in shown.content.decode()
    token = _token(admin_browser, change)
    for posted in (
        {"usable_password": "true", "password1": "taken-over-77", "password2": "taken-over-77", "set-password": "1"},
        {"usable_password": "false", "unset-password": "1"},
    ):
        refused = admin_browser.post(form, {**posted, "csrfmiddlewaretoken": token})
        assert refused.status_code == 302 and refused["Location"] == change
    _still_her_password(person)
    # The change form offers no way to it either: no password button, and her e-mail address is not staff's
    # to change (the reset link goes there).
    page = admin_browser.get(change).content.decode()
    assert "../password/" not in page and "Only she can change it" in page
    fields = {
        "username": person.username,
        "email": "root@staff.example",
        "is_active": "on",
        "date_joined_0": "2026-01-01",
        "date_joined_1": "00:00:00",
        "csrfmiddlewaretoken": token,
    }
    saved = admin_browser.post(change, fields)
    assert saved.status_code == 302, saved.content.decode()[:3000]
    person.refresh_from_db()
    assert person.email == f"{person.username}@example.test"


def test_a_new_account_gets_its_password_through_the_link_not_the_admins_password_form(admin_browser):
    add = "/admin/auth/user/add/"
    created = admin_browser.post(
        add,
        {
            "username": "noor",
            "email": "noor@example.test",
            "usable_password": "true",
            "password1": "staff-knows-this-1",
            "password2": "staff-knows-this-1",
            "csrfmiddlewaretoken": _token(admin_browser, add),
        },
    )
    assert created.status_code == 302, created.content.decode()[:2000]
    noor = get_user_model().objects.get(username="noor")
    assert not noor.has_usable_password() and noor.email == "noor@example.test"
    assert "password1" not in admin_browser.get(add).content.decode()

    form = f"/admin/auth/user/{noor.pk}/password/"
    token = _token(admin_browser, f"/admin/auth/user/{noor.pk}/change/")
    posted = {"usable_password": "true", "password1": "staff-knows-this-1", "password2": "staff-knows-this-1"}
    assert admin_browser.post(form, {**posted, "csrfmiddlewaretoken": token}).status_code == 302
    noor.refresh_from_db()
    assert not noor.has_usable_password()


def test_a_staff_member_changes_her_own_password_in_the_admin(admin_browser, staff):
    form = f"/admin/auth/user/{staff.pk}/password/"
    assert admin_browser.get(form).status_code == 200
    secret = "lamp-and-ledger-93"
    changed = admin_browser.post(
        form,
        {
            "usable_password": "true",
            "password1": secret,
            "password2": secret,
            "csrfmiddlewaretoken": _token(admin_browser, form),
        },
    )
    assert changed.status_code == 302
    staff.refresh_from_db()
    assert staff.check_password(secret)


# --- A person who forgot her password resets it herself, by e-mail ------------------------------------


def test_an_author_who_forgot_her_password_resets_it_herself_by_email(author):
    person = Client(enforce_csrf_checks=True)
    login = person.get("/login/").content.decode()
    assert '<a href="/password-reset/">Forgot your password?</a>' in login

    asked = person.post(
        "/password-reset/", {"email": author.email, "csrfmiddlewaretoken": _token(person, "/password-reset/")}
    )
    assert asked.status_code == 302 and asked["Location"] == "/password-reset/sent/"
    assert "Check your e-mail" in person.get(asked["Location"]).content.decode()
    assert len(mail.outbox) == 1 and mail.outbox[0].to == [author.email]
    message = mail.outbox[0]
    # The same templates and bases as every message the product sends, the link on the site's own address.
    assert message.subject == "Your NovelGraph password" and f"({author.username})" in message.body
    assert message.body.rstrip().endswith(f"NovelGraph · {site_url()}")
    link = re.search(re.escape(site_url()) + r"(/password-reset/[^/\s]+/[^/\s]+/)", message.body).group(1)
    assert link in message.alternatives[0][0]

    form = person.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    page = form.redirect_chain[-1][0]
    secret = "harbour-light-1904"
    token = TOKEN.search(form.content.decode()).group(1)
    set_it = person.post(page, {"new_password1": secret, "new_password2": secret, "csrfmiddlewaretoken": token})
    assert set_it.status_code == 302 and set_it["Location"] == "/login/?password=reset"
    assert "Your password is set" in person.get(set_it["Location"]).content.decode()
    assert Client().login(username=author.username, password=secret)
    assert not Client().login(username=author.username, password=PASSWORD)
    assert "has been used or has expired" in Client().get(link, follow=True).content.decode()


def test_a_reset_is_sent_only_to_an_accounts_own_address_and_never_for_one_without_a_password(db):
    newcomer = UserFactory(username="noor")
    newcomer.set_unusable_password()
    newcomer.save()
    person = Client()
    for email in ("nobody@example.test", newcomer.email):
        asked = person.post("/password-reset/", {"email": email})
        assert asked.status_code == 302 and asked["Location"] == "/password-reset/sent/"
    assert mail.outbox == []
