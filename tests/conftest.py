"""Shared fixtures: the people in a scene (personas), their keys, and an API client."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from django.db import connection
from django.test import Client

from novelgraph.core.db import remove_append_only
from novelgraph.core.services import api_key_create

from .factories import PASSWORD, BookFactory, UserFactory

# --- Append-only guards and transactional tests ------------------------------
# Transactional tests end with a flush that deletes every row; on SQLite the
# append-only triggers would refuse it, so they are lifted for the flush. The
# flush then emits post_migrate, and novelgraph.core.db.restore_store_invariants puts
# the guards and the data-migration rows (curated library, roster) back.


@pytest.fixture
def transactional_db(transactional_db):
    yield
    remove_append_only(connection)


# --- API client ----------------------------------------------------------


@dataclass
class Api:
    """A JSON client for /api/v1 that sends a Bearer key (or rides a logged-in session)."""

    client: Client
    key: str | None = None

    def _headers(self) -> dict:
        return {"HTTP_AUTHORIZATION": f"Bearer {self.key}"} if self.key else {}

    def get(self, path: str, **params):
        return self.client.get(f"/api/v1{path}", params, **self._headers())

    def post(self, path: str, body: dict | None = None):
        return self.client.post(
            f"/api/v1{path}", json.dumps(body or {}), content_type="application/json", **self._headers()
        )

    def put(self, path: str, body: dict | None = None):
        return self.client.put(
            f"/api/v1{path}", json.dumps(body or {}), content_type="application/json", **self._headers()
        )

    def patch(self, path: str, body: dict | None = None):
        return self.client.patch(
            f"/api/v1{path}", json.dumps(body or {}), content_type="application/json", **self._headers()
        )

    def delete(self, path: str):
        return self.client.delete(f"/api/v1{path}", **self._headers())


# --- Personas ------------------------------------------------------------


@pytest.fixture
def author(db):
    return UserFactory(username="ada")


@pytest.fixture
def editor(db):
    return UserFactory(username="eli")


@pytest.fixture
def outsider(db):
    """Another author, with a book of her own."""
    user = UserFactory(username="otto")
    BookFactory(owner=user, title="Otto's own book")
    return user


@pytest.fixture
def book(author, editor):
    return BookFactory(owner=author, editors=[editor], title="The Tide Clock")


@pytest.fixture
def other_book(outsider):
    return outsider.books.get()


def _key(user, role: str, books=None) -> str:
    return api_key_create(owner=user, role=role, books=books)[1]


@pytest.fixture
def author_api(author, book):
    return Api(Client(), _key(author, "author"))


@pytest.fixture
def sol_api(author, book):
    return Api(Client(), _key(author, "sol"))


@pytest.fixture
def terra_api(author, book):
    return Api(Client(), _key(author, "terra"))


@pytest.fixture
def luna_api(author, book):
    return Api(Client(), _key(author, "luna"))


@pytest.fixture
def editor_api(editor, book):
    return Api(Client(), _key(editor, "author"))


@pytest.fixture
def outsider_api(outsider):
    return Api(Client(), _key(outsider, "author"))


@pytest.fixture
def anonymous_api(db):
    return Api(Client())


@pytest.fixture
def author_browser(author):
    client = Client()
    assert client.login(username=author.username, password=PASSWORD)
    return client


@pytest.fixture
def editor_browser(editor):
    client = Client()
    assert client.login(username=editor.username, password=PASSWORD)
    return client


@pytest.fixture(autouse=True)
def _append_only_guards_for_transaction_marker(request):
    """`@pytest.mark.django_db(transaction=True)` gets the same trigger lifting as the `transactional_db` fixture."""
    marker = request.node.get_closest_marker("django_db")
    if marker and (marker.kwargs.get("transaction") or (marker.args and marker.args[0])):
        request.getfixturevalue("transactional_db")
    yield


# --- Speed ---------------------------------------------------------------------
# Every persona gets a password; the production hasher (PBKDF2, ~0.5 s under load per
# hash) would dominate the suite. Tests check who may do what, not the hash strength.
@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# --- The agents act on their own only where a test asks for it ------------------------------------
# In the product Sol takes the next step after each turn and verdict (NOVELGRAPH_AGENTS["ACT_ON_THEIR_OWN"],
# on by default; each book can turn it off). Most tests check one act and the explicit buttons, run by run;
# a test marked ``agents_act`` gets the product's default (tests/test_discovery_to_handoff.py).
@pytest.fixture(autouse=True)
def _agents_act_when_asked(request, settings):
    acting = request.node.get_closest_marker("agents_act") is not None
    settings.NOVELGRAPH_AGENTS = {**settings.NOVELGRAPH_AGENTS, "ACT_ON_THEIR_OWN": acting}


@pytest.fixture
def research_site(settings):
    """The local test site (tests/local_site.py), reachable through the test-only allow list
    NOVELGRAPH_RESEARCH_ALLOWED_HOSTS (its own 127.0.0.1:<port> only; the guard stays on for every other address)."""
    from tests.local_site import site

    local = site()
    local.received.clear()
    local.hook_status = 200
    local.hook_failures = 0
    settings.NOVELGRAPH_RESEARCH_ALLOWED_HOSTS = [local.allow_entry]
    return local
