"""The site layout: one navigation, accessible basics, and error pages in the site's look."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.test import Client, override_settings
from django.urls import path

from novelgraph.urls import urlpatterns as site_urlpatterns

from .factories import UserFactory


def _refuse(request):
    raise PermissionDenied("editor lacks decision:make")


def _missing(request):
    raise Http404("no such book")


def _explode(request):
    raise RuntimeError("boom")


urlpatterns = [
    path("test-403/", _refuse),
    path("test-404/", _missing),
    path("test-500/", _explode),
    *site_urlpatterns,
]

pytestmark = pytest.mark.django_db


def test_the_layout_has_a_skip_link_landmarks_and_one_navigation(author_browser):
    html = author_browser.get("/").content.decode()
    assert '<a class="skip-link" href="#main">' in html
    assert '<main id="main"' in html
    assert '<nav aria-label="Main" id="main-nav">' in html
    assert html.count("<nav ") == 1
    assert 'aria-current="page">Books</a>' in html
    assert 'href="/api/v1/docs"' in html
    assert 'id="loading"' in html
    assert "Log out" in html


def test_admin_link_shows_only_for_staff(author, author_browser):
    assert "/admin/" not in author_browser.get("/").content.decode()
    author.is_staff = True
    author.save()
    assert 'href="/admin/"' in author_browser.get("/").content.decode()


def test_anonymous_visitors_see_no_navigation_on_the_login_page(client: Client):
    html = client.get("/login/").content.decode()
    assert "<nav " not in html
    assert '<label for="id_username">' in html


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_403_page_uses_the_site_layout_and_names_the_refusal(author_browser):
    response = author_browser.get("/test-403/")
    assert response.status_code == 403
    html = response.content.decode()
    assert "You are not allowed to do that" in html
    assert "editor lacks decision:make" in html
    assert '<nav aria-label="Main" id="main-nav">' in html


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_404_page_uses_the_site_layout(author_browser):
    response = author_browser.get("/test-404/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "We could not find that page" in html
    assert 'class="skip-link"' in html


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_500_page_renders_without_a_request_context():
    UserFactory(username="someone")
    client = Client(raise_request_exception=False)
    response = client.get("/test-500/")
    assert response.status_code == 500
    html = response.content.decode()
    assert "Something went wrong on our side" in html
    assert "/static/css/app.css" in html
