"""The agents in Debian's Chromium: the author sends Luna to the library from the scratchpad page,
watches the run go from queued to done in place, and sees its entries appear without reloading."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django_tasks_db.management.commands.db_worker import Worker

from discovery.access import book_access
from discovery.services import discovery_start
from novelgraph.core.auth import principal_for_user
from tests.factories import PASSWORD, BookFactory, UserFactory

from .conftest import assert_accessible_basics, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker():
    """A database worker in a thread of this process, started by the test and stopped after it."""
    runner = Worker(
        queue_names=["*"],
        interval=0.2,
        batch=False,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="browser-test",
        excluded_queue_names=[],
    )

    def run() -> None:
        try:
            runner.run()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    yield thread.start
    runner.running = False
    if thread.is_alive():
        thread.join(timeout=30)


def test_luna_is_sent_to_the_library_and_her_entries_appear_in_place(page, screenshot, seeded, worker):
    author = UserFactory(username="mara-author")
    book = BookFactory(owner=author, title="The Salt Road", premise="A courier carries a map that redraws itself.")
    discovery_start(access=book_access(principal_for_user(author), book))
    log_in(page, author.username, PASSWORD)

    page.goto(f"/books/{book.pk}/scratchpad/")
    assert "no agent has run on this book yet" in page.locator("#entries").inner_text()
    assert_accessible_basics(page)
    page.get_by_label("Send Luna to look for guidance on…").fill("planting fair clues")
    page.get_by_role("button", name="Send Luna").click()
    page.locator('#agent-runs [data-status="queued"]').wait_for()

    worker()
    page.locator('#agent-runs [data-status="done"]').wait_for(timeout=60_000)
    page.locator("#entries .written-by", has_text="Written by Luna's run").first.wait_for()
    assert page.locator("#entries .entry").count() >= 2
    assert "literary-guidance" in page.locator("#entries").inner_text()
    assert page.js_errors == []
    screenshot(page, "agents")
