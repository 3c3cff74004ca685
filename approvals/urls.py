"""Browser pages of the review flow (mounted at /review/)."""

from django.urls import path

from . import views

app_name = "approvals"
urlpatterns = [
    path("", views.inbox, name="inbox"),
    path("<uuid:approval_id>/", views.decision, name="decision"),
    path("books/<uuid:book_id>/log/", views.book_log, name="book_log"),
]
