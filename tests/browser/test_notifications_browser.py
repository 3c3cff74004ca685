"""Notifications in Debian's Chromium (issue 29): the author sets how she hears about a book, sees it saved in
place (and a bad value refused in place), makes her feed address, and revokes it."""

from __future__ import annotations

import pytest

from discovery.models import FeedToken, NotificationPreference
from tests.factories import PASSWORD, BookFactory, UserFactory

from .conftest import assert_accessible_basics, assert_fits_phone_width, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_author_chooses_at_once_sees_it_saved_and_makes_then_revokes_her_feed(page, seeded, screenshot):
    author = UserFactory(username="ada")
    book = BookFactory(owner=author, title="The Tide Clock")
    log_in(page, "ada", PASSWORD)

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Notifications").click()
    page.wait_for_url("**/notifications/")
    select = page.locator(f"#mode-{book.pk}")
    assert select.input_value() == "digest"  # the author's default
    assert_accessible_basics(page)

    select.select_option("at-once")  # saved on change, through htmx
    page.get_by_text("Saved: at once.").wait_for()
    screenshot(page, "notifications-saved")
    assert NotificationPreference.objects.get(person=author, book=book).mode == "at-once"
    page.reload()
    assert page.locator(f"#mode-{book.pk}").input_value() == "at-once"

    # A value the page never offers (a tampered form) is refused in place, and nothing changes.
    page.evaluate(
        f"""() => {{ const s = document.getElementById("mode-{book.pk}");
        s.add(new Option("hourly", "hourly")); s.value = "hourly";
        s.dispatchEvent(new Event("change", {{bubbles: true}})); }}"""
    )
    page.get_by_role("alert").filter(has_text="mode:").wait_for()
    assert NotificationPreference.objects.get(person=author, book=book).mode == "at-once"

    page.get_by_role("button", name="Make a feed address").click()
    address = page.get_by_label("Feed address")
    address.wait_for()
    assert "/feeds/nf_" in address.input_value() and address.input_value().endswith("/atom.xml")
    assert_accessible_basics(page)
    page.set_viewport_size({"width": 390, "height": 844})
    assert_fits_phone_width(page)
    screenshot(page, "notifications-feed-phone")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke the feed address").click()
    page.get_by_text("Your feed address is revoked").wait_for()
    assert not FeedToken.objects.filter(person=author, revoked_at__isnull=True).exists()
