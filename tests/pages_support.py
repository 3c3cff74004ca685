"""Browser-form helpers for page tests: a logged-in client that enforces CSRF, and a submit that
takes the token from the page the form is on (as a browser does)."""

from __future__ import annotations

import re

from django.test import Client

from .factories import PASSWORD

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def csrf_browser(user, password: str = PASSWORD) -> Client:
    client = Client(enforce_csrf_checks=True)
    assert client.login(username=user.username, password=password)
    return client


def submit(client: Client, page: str, action: str, data: dict, **extra):
    """GET ``page``, take its CSRF token, POST ``data`` to ``action``."""
    shown = client.get(page)
    assert shown.status_code == 200, (page, shown.status_code)
    match = TOKEN.search(shown.content.decode())
    assert match, f"{page} has a form with a CSRF token"
    return client.post(action, {**data, "csrfmiddlewaretoken": match.group(1)}, **extra)
