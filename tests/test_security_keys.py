"""API keys: hashed at rest, shown once, revocable by their owner (page, command, API effect)."""

from __future__ import annotations

import hashlib
import re
from io import StringIO

from django.core.management import call_command
from django.test import Client

from novelgraph.core.models import ApiKey

from .factories import BookFactory


def raw_key_in(html: str) -> str:
    match = re.search(r'id="new-key"[^>]*value="(ng_[^"]+)"', html)
    assert match, "the new key is on the page"
    return match.group(1)


def api_get(key: str, path: str = "/api/v1/books"):
    return Client().get(path, HTTP_AUTHORIZATION=f"Bearer {key}")


def test_the_keys_page_needs_a_login(client, db):
    response = client.get("/keys/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_a_key_created_on_the_page_is_shown_once_and_only_its_hash_is_stored(author_browser, author, book):
    posted = author_browser.post("/keys/", {"name": "Sol on my laptop", "role": "sol"})
    assert posted.status_code == 302 and posted["Location"] == "/keys/", (
        "a created key redirects (no second key on reload)"
    )
    response = author_browser.get("/keys/")

    assert response["Cache-Control"] == "no-store"
    raw = raw_key_in(response.content.decode())
    key = ApiKey.objects.get(owner=author, name="Sol on my laptop")
    assert key.role == "sol"
    assert key.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert not ApiKey.objects.filter(key_hash=raw).exists()
    assert raw not in str(list(ApiKey.objects.values()))

    again = author_browser.get("/keys/").content.decode()
    assert raw not in again, "never shown again"
    assert ApiKey.objects.filter(owner=author).count() == 1, "reloading created nothing"
    assert key.prefix in again
    assert api_get(raw).status_code == 200


def test_a_key_can_be_limited_to_some_of_your_books(author_browser, author, book):
    second = BookFactory(owner=author, title="Second")
    response = author_browser.post("/keys/", {"role": "luna", "books": [str(second.pk)]}, follow=True)
    raw = raw_key_in(response.content.decode())

    titles = [b["title"] for b in api_get(raw).json()["items"]]

    assert titles == ["Second"]


def test_you_cannot_scope_a_key_to_someone_elses_book(author_browser, other_book):
    response = author_browser.post("/keys/", {"role": "sol", "books": [str(other_book.pk)]})
    assert response.status_code == 422
    assert "choose only books you own" in response.content.decode()
    assert not ApiKey.objects.exists()


def test_an_unknown_role_is_refused_inline(author_browser):
    response = author_browser.post("/keys/", {"role": "admin"})
    assert response.status_code == 422
    assert "unknown role" in response.content.decode()
    assert not ApiKey.objects.exists()


def test_a_nul_in_a_key_name_is_refused_inline_and_nothing_is_stored(author_browser, author):
    response = author_browser.post("/keys/", {"name": "Sol\x00laptop", "role": "sol"})

    assert response.status_code == 422
    assert "name: contains a NUL character" in response.content.decode()
    assert 'role="alert"' in response.content.decode()
    assert not ApiKey.objects.filter(owner=author).exists()


def test_revoking_a_key_on_the_page_locks_it_out_at_once(author_browser, author, book):
    raw = raw_key_in(author_browser.post("/keys/", {"role": "terra"}, follow=True).content.decode())
    key = ApiKey.objects.get(owner=author)
    assert api_get(raw).status_code == 200

    response = author_browser.post(f"/keys/{key.pk}/revoke/")

    assert response.status_code == 302
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert api_get(raw).status_code == 401
    assert "revoked" in author_browser.get("/keys/").content.decode()


def test_you_cannot_revoke_or_see_another_persons_key(author_browser, outsider):
    call_command("create_api_key", username=outsider.username, role="author", stdout=StringIO())
    theirs = ApiKey.objects.get(owner=outsider)

    assert author_browser.post(f"/keys/{theirs.pk}/revoke/").status_code == 404
    assert theirs.prefix not in author_browser.get("/keys/").content.decode()
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


def test_the_command_prints_the_key_once_and_stores_only_the_hash(author, book):
    out = StringIO()
    call_command("create_api_key", username="ada", role="author", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    key = ApiKey.objects.get(owner=author)
    assert key.key_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert api_get(raw).status_code == 200


def test_a_revoked_key_and_a_made_up_key_get_the_same_401(author_api, author):
    key = ApiKey.objects.get(owner=author)
    key.revoked_at = key.created_at
    key.save()
    revoked = api_get(author_api.key)
    made_up = api_get("ng_not-a-real-key")
    assert revoked.status_code == made_up.status_code == 401
    assert revoked.json() == made_up.json()
