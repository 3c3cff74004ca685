"""Luna collects research from a URL in her own run (issue 29): the author asks "collect this page" (the research
page, ``POST /books/{id}/research/collect``, the ``research_collect`` tool); Luna's in-app run fetches it through
the same service and guards as research from a URL and proposes it; the author admits it with a rationale, as
today. A page the guards refuse ends the run failed with the reason, and nothing is proposed.

The page is the local test site (tests/local_site.py), reached through the test-only allow list."""

from __future__ import annotations

import hashlib

import pytest

from discovery.agents.models import AgentRun
from library.models import ResearchItem
from tests.agents_support import work_off_queue
from tests.local_site import ARTICLE_TEXT, ARTICLE_TITLE

from .pages_support import csrf_browser, submit

pytestmark = pytest.mark.django_db

CLAIM = "Keepers logged every lighting."


@pytest.fixture
def started(author_api, book):
    """Luna's runs, as every built-in run, belong to a book whose discovery has started."""
    assert author_api.post(f"/books/{book.pk}/discovery").status_code in (200, 201)
    return book


def ask_luna(api, book, url, **extra):
    return api.post(f"/books/{book.pk}/research/collect", {"url": url, **extra})


def luna_collects(api, book, url, reader=None, **extra) -> dict:
    """Ask, let the worker run it, and return the finished run (as ``reader`` sees it: the asker by default)."""
    queued = ask_luna(api, book, url, **extra)
    assert queued.status_code == 202, queued.content
    assert (queued.json()["role"], queued.json()["task"], queued.json()["status"]) == ("luna", "research-url", "queued")
    work_off_queue()
    return (reader or api).get(f"/agent-runs/{queued.json()['id']}").json()


def test_luna_collects_a_page_and_proposes_it_then_the_author_admits_it(author_api, started, research_site):
    run = luna_collects(author_api, started, f"{research_site.base}/page", claim=CLAIM)

    assert run["status"] == "done", run
    [item] = ResearchItem.objects.filter(book=started)
    assert (item.status, item.title, item.claim, item.proposed_by) == ("pending", ARTICLE_TITLE, CLAIM, "luna")
    assert ARTICLE_TEXT in item.source_snapshot
    assert item.source_sha256 == hashlib.sha256(item.source_snapshot.encode()).hexdigest()
    assert ARTICLE_TITLE in item.citation and item.url == f"{research_site.base}/page"
    assert {"type": "research", "id": str(item.pk)} in run["written"]
    assert research_site.hosts_seen[-1] == research_site.allow_entry  # fetched through the guarded fetcher

    admitted = author_api.post(f"/research/{item.pk}/admit", {"rationale": "The harbour board's own account."})
    assert admitted.status_code == 200, admitted.content
    item.refresh_from_db()
    assert item.status == "admitted"


def test_without_a_claim_luna_proposes_the_pages_first_sentence(sol_api, author_api, started, research_site):
    page = f"{research_site.base}/page"
    run = luna_collects(sol_api, started, page, reader=author_api, citation="Vell harbour society")

    assert run["status"] == "done", run
    item = ResearchItem.objects.get(book=started)
    assert item.claim == ARTICLE_TEXT.split(". ")[0] + ".", item.claim
    assert item.citation == "Vell harbour society"
    assert any("first sentence" in note for note in run["notes"])


@pytest.fixture
def private_name(settings, research_site):
    settings.NOVELGRAPH_RESOLVER_HOSTS = {"intranet.example.com": ["10.1.2.3"]}
    return "intranet.example.com"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/", "loopback"),
        ("http://10.0.0.1/", "private"),
        ("http://[::1]/", "loopback"),
        ("http://169.254.169.254/", "link-local"),
        ("http://intranet.example.com/", "private"),
        ("file:///etc/passwd", "only http and https"),
        ("http://user:secret@example.com/", "user name or password"),
    ],
)
def test_a_refused_address_ends_the_run_with_the_reason_and_nothing_is_proposed(
    author_api, started, private_name, url, reason
):
    run = luna_collects(author_api, started, url, claim=CLAIM)

    assert run["status"] == "failed" and reason in run["reason"], run
    assert run["written"] == []
    assert not ResearchItem.objects.filter(book=started).exists()


def test_a_redirect_to_a_private_address_is_refused_in_the_run(author_api, started, research_site):
    run = luna_collects(author_api, started, f"{research_site.base}/redirect?to=http://10.0.0.1/", claim=CLAIM)

    assert run["status"] == "failed" and "private" in run["reason"], run
    assert not ResearchItem.objects.filter(book=started).exists()


def test_only_the_author_or_sol_asks_and_a_blank_url_is_a_422(
    author_api, editor_api, luna_api, started, research_site
):
    page = f"{research_site.base}/page"
    assert editor_api.post(f"/books/{started.pk}/research/collect", {"url": page}).status_code == 403
    assert luna_api.post(f"/books/{started.pk}/research/collect", {"url": page}).status_code == 403
    blank = ask_luna(author_api, started, "  ")
    assert blank.status_code == 422 and blank.json()["field"] == "url", blank.content
    generic = author_api.post(f"/books/{started.pk}/agent-runs", {"task": "research-url"})
    assert generic.status_code == 422 and generic.json()["field"] == "task"
    assert not AgentRun.objects.filter(book=started).exists()


# --- The research page ----------------------------------------------------------------------------------------


def test_the_author_asks_luna_from_the_research_page_and_sees_how_each_run_ended(author, started, research_site):
    browser = csrf_browser(author)
    research = f"/books/{started.pk}/research/"
    collect = f"{research}collect/"
    assert "Ask Luna to collect a page" in browser.get(research).content.decode()

    asked = submit(browser, research, collect, {"url": f"{research_site.base}/page", "claim": CLAIM})
    assert asked.status_code == 302 and asked["Location"].startswith(research)
    assert "Luna is collecting" in browser.get(asked["Location"]).content.decode()
    submit(browser, research, collect, {"url": "http://10.0.0.1/", "claim": CLAIM})
    work_off_queue()

    page = browser.get(research).content.decode()
    item = ResearchItem.objects.get(book=started)
    assert f'id="research-{item.pk}"' in page and ARTICLE_TITLE in page
    assert "Collected and proposed" in page and f'href="#research-{item.pk}"' in page
    assert "Not collected" in page and "private" in page  # the refusal, as the run recorded it

    refused = submit(browser, research, collect, {"url": "", "claim": CLAIM})
    assert refused.status_code == 422 and 'id="collect-url-error"' in refused.content.decode()


def test_the_ask_luna_form_is_not_offered_to_an_editor(editor, started):
    page = csrf_browser(editor).get(f"/books/{started.pk}/research/").content.decode()
    assert "Ask Luna to collect a page" not in page
