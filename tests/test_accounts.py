"""Accounts without the shell: staff create a person in the admin with password login disabled, make a
one-time link, and the person sets her password through it (the link then stops working)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from .factories import PASSWORD, UserFactory
from .pages_support import TOKEN

pytestmark = pytest.mark.django_db


def test_staff_create_an_author_and_send_a_one_time_link_to_set_her_password(db):
    staff = UserFactory(username="root", is_staff=True, is_superuser=True)
    admin = Client(enforce_csrf_checks=True)
    assert admin.login(username=staff.username, password=PASSWORD)
    add = "/admin/auth/user/add/"
    token = TOKEN.search(admin.get(add).content.decode()).group(1)
    created = admin.post(add, {"username": "noor", "usable_password": "false", "csrfmiddlewaretoken": token})
    assert created.status_code == 302, created.content.decode()[:2000]
    noor = get_user_model().objects.get(username="noor")
    assert not noor.has_usable_password() and not noor.is_staff

    changelist = "/admin/auth/user/"
    token = TOKEN.search(admin.get(changelist).content.decode()).group(1)
    done = admin.post(
        changelist,
        {"action": "make_set_password_link", "_selected_action": [noor.pk], "csrfmiddlewaretoken": token},
        follow=True,
    )
    link = re.search(r"http://testserver(/set-password/[^/]+/[^/]+/)", done.content.decode()).group(1)

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
