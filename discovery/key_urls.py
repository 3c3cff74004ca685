"""The API keys page, mounted at the site's root without a namespace (``keys``, ``key-revoke``)."""

from django.urls import path

from . import key_pages

urlpatterns = [
    path("keys/", key_pages.keys, name="keys"),
    path("keys/<uuid:key_id>/revoke/", key_pages.key_revoke, name="key-revoke"),
]
