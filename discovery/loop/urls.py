"""The loop's browser page (namespace ``loop``) and its two author actions."""

from django.urls import path

from . import views

app_name = "loop"
urlpatterns = [
    path("books/<uuid:book_id>/loop/", views.loop_page, name="page"),
    path("books/<uuid:book_id>/loop/nodes/<uuid:node_id>/pick/", views.candidate_pick, name="pick"),
    path("books/<uuid:book_id>/loop/questions/<uuid:question_id>/answer/", views.question_answer, name="answer"),
    path("books/<uuid:book_id>/loop/hand-off/", views.hand_off, name="hand_off"),
    path("books/<uuid:book_id>/reopen/", views.reopen, name="reopen"),
]
