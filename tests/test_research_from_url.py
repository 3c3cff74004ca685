"""Research from a URL (issue 29): the server collects a page through the address guards of
novelgraph.core.fetch, extracts its title and main text, and proposes it; the author still admits it.

The local site (tests/local_site.py) is reached through the test-only allow list, never by switching the guard
off; a name that answers a private address is made by NOVELGRAPH_RESOLVER_HOSTS, the fetcher's hosts-file seam.
"""

from __future__ import annotations

import hashlib

import pytest

from library.models import ResearchItem
from tests.local_site import ARTICLE_TEXT, ARTICLE_TITLE

CLAIM = "Keepers logged every lighting."


def propose(api, book, url, **extra):
    return api.post(f"/books/{book.pk}/research/from-url", {"url": url, "claim": CLAIM, **extra})


def test_a_local_test_page_becomes_a_proposed_item_with_its_title_text_and_hash(author_api, book, research_site):
    response = propose(author_api, book, f"{research_site.base}/page")

    assert response.status_code == 201, response.content
    body = response.json()
    item = ResearchItem.objects.get(pk=body["id"])
    assert (item.status, item.title, item.claim) == ("pending", ARTICLE_TITLE, CLAIM)
    assert ARTICLE_TEXT in item.source_snapshot and ARTICLE_TEXT[:80] in item.excerpt
    assert "Home" not in item.source_snapshot.split("\n")[0], "the navigation is not the main text"
    assert item.source_sha256 == hashlib.sha256(item.source_snapshot.encode()).hexdigest() == body["source_sha256"]
    assert item.approval is not None and item.approval.status == "pending"
    assert ARTICLE_TITLE in item.citation
    # The socket went to the checked address; the Host header still carried the name and port.
    assert research_site.hosts_seen[-1] == research_site.allow_entry

    # The author still admits it with a rationale, as any research.
    admitted = author_api.post(f"/research/{item.pk}/admit", {"rationale": "The harbour board's own account."})
    assert admitted.status_code == 200, admitted.content
    item.refresh_from_db()
    assert item.status == "admitted"


def test_a_plain_text_page_and_a_redirect_within_the_limit_are_collected(luna_api, book, research_site):
    plain = propose(luna_api, book, f"{research_site.base}/plain")
    assert plain.status_code == 201, plain.content
    assert plain.json()["title"] == ARTICLE_TITLE and plain.json()["proposed_by"] == "luna"

    hopped = propose(luna_api, book, f"{research_site.base}/hops/3")
    assert hopped.status_code == 201, hopped.content
    assert hopped.json()["url"] == f"{research_site.base}/page"


@pytest.fixture
def private_name(settings, research_site):
    """A name whose DNS (the resolver seam) answers a private address."""
    settings.NOVELGRAPH_RESOLVER_HOSTS = {
        "intranet.example.com": ["10.1.2.3"],
        "mapped.example.com": ["::ffff:10.0.0.1"],
    }
    return "intranet.example.com"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/", "loopback"),
        ("http://10.0.0.1/", "private"),
        ("http://[::1]/", "loopback"),
        ("http://169.254.169.254/", "link-local"),
        ("http://[::ffff:127.0.0.1]/", "loopback"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://240.0.0.1/", "reserved"),
        ("http://intranet.example.com/", "private"),
        ("http://mapped.example.com/", "private"),
        ("file:///etc/passwd", "only http and https"),
        ("ftp://example.com/x", "only http and https"),
        ("http://user:secret@example.com/", "user name or password"),
        ("http://user@example.com/", "user name or password"),
        ("not a url", "only http and https"),
    ],
)
def test_a_refused_address_is_a_422_naming_the_url_field_and_the_reason(author_api, book, private_name, url, reason):
    response = propose(author_api, book, url)

    assert response.status_code == 422, response.content
    body = response.json()
    assert body["field"] == "url" and reason in body["detail"], body
    assert not ResearchItem.objects.filter(book=book).exists()


@pytest.mark.parametrize(
    "to", ["http://10.0.0.1/", "http://intranet.example.com/x", "http://127.0.0.1/", "file:///etc/passwd"]
)
def test_a_redirect_to_a_refused_address_is_refused(author_api, book, private_name, research_site, to):
    response = propose(author_api, book, f"{research_site.base}/redirect?to={to}")

    assert response.status_code == 422, response.content
    assert response.json()["field"] == "url"
    assert not ResearchItem.objects.filter(book=book).exists()


def test_too_many_redirects_a_wrong_type_and_an_oversize_page_are_refused(author_api, book, research_site):
    for path, words in (("/hops/4", "more than 3"), ("/image", "image/png"), ("/big", "larger than")):
        response = propose(author_api, book, f"{research_site.base}{path}")
        assert response.status_code == 422, (path, response.content)
        assert response.json()["field"] == "url" and words in response.json()["detail"], path


def test_the_allow_list_names_one_host_and_port_not_the_whole_machine(author_api, book, research_site):
    """The test-only allow list lets the site's own port through; port 80 of the same address stays refused."""
    response = propose(author_api, book, "http://127.0.0.1:80/page")

    assert response.status_code == 422 and "loopback" in response.json()["detail"]


def test_an_editor_may_not_propose_and_no_request_leaves(editor_api, book, research_site):
    before = len(research_site.hosts_seen)
    response = propose(editor_api, book, f"{research_site.base}/page")

    assert response.status_code == 403
    assert len(research_site.hosts_seen) == before


# --- The browser form ----------------------------------------------------------------------------------


def test_the_research_page_form_collects_a_page_and_shows_a_refusal_inline(client, author, book, research_site):
    client.force_login(author)
    page = client.get(f"/books/{book.pk}/research/")
    assert b"Propose research from a URL" in page.content

    refused = client.post(f"/books/{book.pk}/research/from-url/", {"url": "http://169.254.169.254/", "claim": CLAIM})
    assert refused.status_code == 422
    assert b"link-local address" in refused.content and b'value="http://169.254.169.254/"' in refused.content
    assert not ResearchItem.objects.filter(book=book).exists()

    made = client.post(f"/books/{book.pk}/research/from-url/", {"url": f"{research_site.base}/page", "claim": CLAIM})
    assert made.status_code == 302
    item = ResearchItem.objects.get(book=book)
    assert item.title == ARTICLE_TITLE and item.status == "pending"
    listed = client.get(f"/books/{book.pk}/research/")
    assert ARTICLE_TITLE.encode() in listed.content and b"Waiting for admission" in listed.content


def test_the_form_is_not_offered_to_an_editor(client, editor, book):
    client.force_login(editor)
    assert b"Propose research from a URL" not in client.get(f"/books/{book.pk}/research/").content


def test_the_socket_goes_to_the_checked_address_with_the_name_in_the_host_header(
    author_api, book, settings, research_site
):
    """A name resolved once (the resolver seam maps it to the site's address): the connection is made to that
    address, and the page is asked for by its name."""
    port = research_site.server_address[1]
    settings.NOVELGRAPH_RESOLVER_HOSTS = {"harbour.test": ["127.0.0.1"]}
    settings.NOVELGRAPH_RESEARCH_ALLOWED_HOSTS = [f"harbour.test:{port}"]

    response = propose(author_api, book, f"http://harbour.test:{port}/page")

    assert response.status_code == 201, response.content
    assert research_site.hosts_seen[-1] == f"harbour.test:{port}"
    assert response.json()["url"] == f"http://harbour.test:{port}/page"
