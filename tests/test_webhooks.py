"""Webhooks (issue 29): a book's events posted, signed, to the URL its author registered, retried with backoff as
background work, every attempt in the delivery log. The receiver is the local test site (tests/local_site.py),
reached through the test-only allow list; the same address guards as research refuse anything else."""

from __future__ import annotations

import json
import socket

import pytest

from discovery.models import WebhookDelivery
from discovery.webhooks import MAX_ATTEMPTS, SIGNATURE_HEADER, TIMESTAMP_HEADER, verify

from .agents_support import work_off_queue
from .factories import ChapterFactory

RESEARCH = {
    "url": "https://tides.example.org/north",
    "title": "Tide tables",
    "claim": "High tide was at 06:12.",
    "citation": "Coastal Almanac",
}


def register(api, book, url):
    return api.put(f"/books/{book.pk}/webhook", {"url": url})


def a_decision_waits(api, book, capture):
    """A research proposal opens an approval: ``decision-waiting`` is sent once it commits."""
    with capture(execute=True):
        assert api.post(f"/books/{book.pk}/research", RESEARCH).status_code == 201


def test_a_post_verifies_with_the_shared_secret(author_api, book, research_site, django_capture_on_commit_callbacks):
    registered = register(author_api, book, f"{research_site.base}/hook")
    assert registered.status_code == 200, registered.content
    secret = registered.json()["secret"]
    assert len(secret) == 64

    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    assert work_off_queue() == 1

    [post] = research_site.received
    headers = {k.lower(): v for k, v in post["headers"].items()}
    assert verify(secret, headers[TIMESTAMP_HEADER.lower()], post["body"], headers[SIGNATURE_HEADER.lower()])
    assert not verify(
        "another secret", headers[TIMESTAMP_HEADER.lower()], post["body"], headers[SIGNATURE_HEADER.lower()]
    )
    assert not verify(secret, headers[TIMESTAMP_HEADER.lower()], post["body"] + b" ", headers[SIGNATURE_HEADER.lower()])
    # An old timestamp is a replay, even with its true signature.
    stamp = headers[TIMESTAMP_HEADER.lower()]
    assert not verify(secret, stamp, post["body"], headers[SIGNATURE_HEADER.lower()], now=int(stamp) + 3600)
    event = json.loads(post["body"])
    assert (event["kind"], event["book_id"]) == ("decision-waiting", str(book.pk))
    assert event["payload"]["summary"] == "Admit research: Tide tables"

    log = author_api.get(f"/books/{book.pk}/webhook").json()["deliveries"]
    assert [(d["attempt"], d["delivered"], d["status_code"]) for d in log] == [(1, True, 200)]


def test_a_receiver_that_is_down_gets_retries_and_the_log_shows_each_attempt(
    author_api, book, settings, research_site, django_capture_on_commit_callbacks
):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.NOVELGRAPH_RESEARCH_ALLOWED_HOSTS = [f"127.0.0.1:{port}"]
    settings.NOVELGRAPH_WEBHOOK_BACKOFF = 0  # the retries are due at once (the backoff still doubles: 0 * 2**n)
    assert register(author_api, book, f"http://127.0.0.1:{port}/hook").status_code == 200

    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    assert work_off_queue() == MAX_ATTEMPTS

    attempts = list(WebhookDelivery.objects.order_by("attempt"))
    assert [a.attempt for a in attempts] == list(range(1, MAX_ATTEMPTS + 1))
    assert len({a.event_id for a in attempts}) == 1 and not any(a.delivered for a in attempts)
    assert all("could not be reached" in a.error for a in attempts)
    assert [a.retry_at is not None for a in attempts] == [True] * (MAX_ATTEMPTS - 1) + [False]
    log = author_api.get(f"/books/{book.pk}/webhook").json()["deliveries"]
    assert len(log) == MAX_ATTEMPTS


def test_a_receiver_that_fails_then_recovers_is_delivered_on_a_retry(
    author_api, book, settings, research_site, django_capture_on_commit_callbacks
):
    settings.NOVELGRAPH_WEBHOOK_BACKOFF = 0
    research_site.hook_failures = 1
    register(author_api, book, f"{research_site.base}/hook")
    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    assert work_off_queue() == 2

    attempts = list(WebhookDelivery.objects.order_by("attempt"))
    assert [(a.attempt, a.status_code, a.delivered) for a in attempts] == [(1, 503, False), (2, 200, True)]
    assert len(research_site.received) == 2


def test_the_retry_waits_for_its_backoff(author_api, book, settings, research_site, django_capture_on_commit_callbacks):
    settings.NOVELGRAPH_WEBHOOK_BACKOFF = 60
    research_site.hook_status = 500
    register(author_api, book, f"{research_site.base}/hook")
    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)

    assert work_off_queue() == 1, "the second attempt is not due for a minute"
    [first] = WebhookDelivery.objects.all()
    assert 55 <= (first.retry_at - first.created_at).total_seconds() <= 65


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://10.0.0.1/hook", "private"),
        ("http://127.0.0.1/hook", "loopback"),
        ("http://[::1]/hook", "loopback"),
        ("http://169.254.169.254/latest", "link-local"),
        ("file:///etc/passwd", "only http and https"),
        ("http://user:pw@example.com/hook", "user name or password"),
    ],
)
def test_a_webhook_url_passes_the_same_address_guard(author_api, book, url, reason):
    response = register(author_api, book, url)

    assert response.status_code == 422, response.content
    assert response.json()["field"] == "url" and reason in response.json()["detail"]


def test_only_the_author_registers_or_reads_the_webhook(author_api, sol_api, editor_api, book, research_site):
    assert register(author_api, book, f"{research_site.base}/hook").status_code == 200
    for api in (sol_api, editor_api):
        assert register(api, book, f"{research_site.base}/other").status_code == 403
        assert api.get(f"/books/{book.pk}/webhook").status_code == 403


# --- The page ------------------------------------------------------------------------------------


def test_the_author_registers_on_the_page_and_reads_the_log(
    client, author, book, settings, research_site, django_capture_on_commit_callbacks, author_api
):
    settings.NOVELGRAPH_WEBHOOK_BACKOFF = 0
    client.force_login(author)
    assert b"webhook" in client.get(f"/books/{book.pk}/agents/").content.lower()
    refused = client.post(f"/books/{book.pk}/webhook/", {"url": "http://169.254.169.254/"})
    assert refused.status_code == 422 and b"link-local address" in refused.content

    assert client.post(f"/books/{book.pk}/webhook/", {"url": f"{research_site.base}/hook"}).status_code == 302
    research_site.hook_failures = 1
    a_decision_waits(author_api, book, django_capture_on_commit_callbacks)
    work_off_queue()

    page = client.get(f"/books/{book.pk}/webhook/").content.decode()
    assert page.count('class="delivery"') == 2
    assert "A decision waits" in page and "Delivered" in page and "Failed: the receiver answered 503" in page


# --- The continuity check's findings: one event per check that files something new --------------------------


CHAPTER_TEXT = "Father Aubrey rang the bell. Inspector Hale waited on the pier with Tova."


def luna_files(api, book, findings: list[tuple[str, str, str]], capture):
    """Luna files a check of chapter 1's first revision (``(kind, key, quoted words)`` each), as her run does."""
    items = []
    for kind, key, quote in findings:
        start = CHAPTER_TEXT.index(quote)
        items.append(
            {
                "kind": kind,
                "key": key,
                "span_start": start,
                "span_end": start + len(quote),
                "quote": quote,
                "message": f"{quote} is not in the codex.",
            }
        )
    with capture(execute=True):
        filed = api.post(f"/books/{book.pk}/chapters/1/findings", {"revision": 1, "findings": items})
    assert filed.status_code == 201, filed.content
    return filed.json()["filed"]


def test_a_check_that_files_findings_posts_one_continuity_finding_event_listing_them(
    author_api, luna_api, book, research_site, django_capture_on_commit_callbacks
):
    ChapterFactory(book=book, number=1, title="The Bell")
    assert author_api.put(f"/books/{book.pk}/chapters/1/text", {"text": CHAPTER_TEXT}).status_code == 201
    register(author_api, book, f"{research_site.base}/hook")

    filed = luna_files(
        luna_api,
        book,
        [("not-in-canon", "not-in-canon:hale", "Hale"), ("not-in-canon", "not-in-canon:tova", "Tova")],
        django_capture_on_commit_callbacks,
    )
    assert work_off_queue() == 1

    [post] = research_site.received
    event = json.loads(post["body"])
    assert event["kind"] == "continuity-finding" and event["book_id"] == str(book.pk)
    assert {k.lower(): v for k, v in post["headers"].items()}["x-novelgraph-event"] == "continuity-finding"
    payload = event["payload"]
    assert (payload["chapter"], payload["chapter_title"], payload["revision"], payload["count"]) == (
        1,
        "The Bell",
        1,
        2,
    )
    assert [(f["finding_id"], f["kind"], f["quote"]) for f in payload["findings"]] == [
        (filed[0]["id"], "not-in-canon", "Hale"),
        (filed[1]["id"], "not-in-canon", "Tova"),
    ]
    assert payload["findings"][0]["message"] == "Hale is not in the codex."

    # The same check again files nothing new (the findings are open already): no event, no post.
    luna_files(luna_api, book, [("not-in-canon", "not-in-canon:hale", "Hale")], django_capture_on_commit_callbacks)
    assert work_off_queue() == 0 and len(research_site.received) == 1
    assert WebhookDelivery.objects.filter(kind="continuity-finding").count() == 1
