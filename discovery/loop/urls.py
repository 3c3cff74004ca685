"""The loop's browser page (namespace ``loop``)."""

from django.urls import path

from . import views

app_name = "loop"
urlpatterns = [
    path("books/<uuid:book_id>/loop/", views.loop_page, name="page"),
]
