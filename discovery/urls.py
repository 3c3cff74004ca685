from django.urls import path

from . import views

app_name = "discovery"
urlpatterns = [
    path("", views.home, name="home"),
    path("books/<uuid:book_id>/", views.book_detail, name="book"),
    path("books/<uuid:book_id>/discovery/start/", views.discovery_start, name="discovery_start"),
    path("books/<uuid:book_id>/scratchpad/", views.scratchpad, name="scratchpad"),
    path("books/<uuid:book_id>/turns/", views.turn_add, name="turn_add"),
    path("books/<uuid:book_id>/dossiers/", views.dossiers, name="dossiers"),
    path("books/<uuid:book_id>/codex/", views.codex, name="codex"),
    path("books/<uuid:book_id>/dossiers/new/", views.dossier_create, name="dossier_create"),
    path("books/<uuid:book_id>/dossiers/<uuid:dossier_id>/", views.dossier_detail, name="dossier"),
]
