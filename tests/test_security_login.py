"""Login throttling: five failures for one username from one address in 15 minutes block further attempts (429)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from novelgraph.core.models import LoginFailure

from .factories import PASSWORD


def attempt(client: Client, username: str, password: str, path: str = "/login/"):
    return client.post(path, {"username": username, "password": password})


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@pytest.fixture
def browser():
    return Client(REMOTE_ADDR="203.0.113.7")


def test_four_failures_still_let_the_right_password_in(browser, author):
    for _ in range(4):
        response = attempt(browser, "ada", "wrong")
        assert response.status_code == 200
        assert "correct username and password" in response.content.decode()

    response = attempt(browser, "ada", PASSWORD)

    assert response.status_code == 302
    assert logged_in(browser)
    assert not LoginFailure.objects.filter(username="ada").exists(), "a success forgets the failures"


def test_the_fifth_failure_blocks_even_the_right_password_with_a_clear_429(browser, author):
    for _ in range(4):
        attempt(browser, "ada", "wrong")

    fifth = attempt(browser, "ada", "wrong")
    assert fifth.status_code == 429
    assert "Too many failed attempts" in fifth.content.decode()
    assert int(fifth["Retry-After"]) > 0

    right = attempt(browser, "ada", PASSWORD)
    assert right.status_code == 429
    assert "Try again in 15 minutes" in right.content.decode()
    assert not logged_in(browser)
    assert LoginFailure.objects.filter(username="ada", ip="203.0.113.7").count() == 5


def test_the_block_is_per_username_and_address(browser, author, editor):
    for _ in range(5):
        attempt(browser, "ada", "wrong")

    other_address = Client(REMOTE_ADDR="198.51.100.2")
    assert attempt(other_address, "ada", PASSWORD).status_code == 302
    assert attempt(browser, "eli", PASSWORD).status_code == 302, "another username from the same address"


def test_usernames_are_throttled_case_insensitively(browser, author):
    for name in ["ada", "ADA", "Ada ", "aDa", "ada"]:
        attempt(browser, name, "wrong")
    assert attempt(browser, "ada", PASSWORD).status_code == 429


def test_the_block_lifts_when_the_failures_leave_the_window(browser, author):
    for _ in range(5):
        attempt(browser, "ada", "wrong")
    LoginFailure.objects.update(at=timezone.now() - timedelta(minutes=16))

    response = attempt(browser, "ada", PASSWORD)

    assert response.status_code == 302
    assert logged_in(browser)


def test_old_failures_are_pruned_on_the_next_failure(browser, author):
    attempt(browser, "ada", "wrong")
    LoginFailure.objects.update(at=timezone.now() - timedelta(hours=2))
    attempt(browser, "ada", "wrong")
    assert LoginFailure.objects.count() == 1


def test_the_admin_login_is_throttled_by_the_same_rule(browser, author):
    author.is_staff = True
    author.save()
    for _ in range(5):
        attempt(browser, "ada", "wrong", path="/admin/login/")

    attempt(browser, "ada", PASSWORD, path="/admin/login/")

    assert not logged_in(browser)
    assert LoginFailure.objects.filter(username="ada").count() == 5


def test_a_nul_in_the_username_is_a_form_error_never_a_500(browser, author):
    """PostgreSQL cannot look up a NUL; the form refuses it and the throttle never queries it."""
    response = attempt(browser, "ada\x00", "wrong")

    assert response.status_code == 200
    assert "Null characters are not allowed" in response.content.decode()
    assert not logged_in(browser)


def test_a_nul_in_the_username_does_not_escape_the_throttle(browser, author):
    for _ in range(5):
        attempt(browser, "ada", "wrong")

    response = attempt(browser, "ada\x00", PASSWORD)

    assert response.status_code == 429, "“ada\\x00” is throttled as “ada”"
    assert "Too many failed attempts" in response.content.decode()
    assert attempt(browser, "\x00", "wrong").status_code == 200
