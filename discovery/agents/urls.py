from django.urls import path

from . import views

app_name = "agents"
urlpatterns = [
    path("books/<uuid:book_id>/agents/", views.runs, name="runs"),
    path("books/<uuid:book_id>/agents/start/", views.start, name="start"),
    path("books/<uuid:book_id>/agents/act/", views.act_on_their_own, name="act"),
    path("books/<uuid:book_id>/research/collect/", views.research_collect, name="research_collect"),
    path("books/<uuid:book_id>/chapters/<int:number>/check/", views.chapter_check, name="chapter-check"),
    path(
        "books/<uuid:book_id>/chapters/<int:number>/check/status/",
        views.chapter_check_status,
        name="chapter-check-status",
    ),
]
