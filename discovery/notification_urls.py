"""The notifications page and the feed, mounted at the site's root without a namespace (``notifications``,
``notification-mode``, ``notification-feed``)."""

from django.urls import path

from . import notifications_pages

urlpatterns = [
    path("notifications/", notifications_pages.notifications, name="notifications"),
    path("notifications/books/<uuid:book_id>/", notifications_pages.notification_mode, name="notification-mode"),
    path("feeds/<str:token>/atom.xml", notifications_pages.notification_feed, name="notification-feed"),
]
