from django.urls import path

from . import bible_pages, manuscript_pages, series_bible_pages, views, webhook_views

app_name = "discovery"
urlpatterns = [
    path("", views.home, name="home"),
    path("series/new/", views.series_new, name="series_new"),
    path("books/new/", views.book_new, name="book_new"),
    path("books/<uuid:book_id>/", views.book_detail, name="book"),
    path("books/<uuid:book_id>/edit/", views.book_edit, name="book_edit"),
    path("books/<uuid:book_id>/charters/new/", views.charter_new, name="charter_new"),
    path("books/<uuid:book_id>/charters/compare/", views.charter_compare, name="charter_compare"),
    path("books/<uuid:book_id>/people/", views.book_people, name="people"),
    path("books/<uuid:book_id>/webhook/", webhook_views.webhook, name="webhook"),
    path("books/<uuid:book_id>/people/<int:user_id>/remove/", views.book_editor_remove, name="editor_remove"),
    path("books/<uuid:book_id>/discovery/start/", views.discovery_start, name="discovery_start"),
    path("books/<uuid:book_id>/scratchpad/", views.scratchpad, name="scratchpad"),
    path("books/<uuid:book_id>/search/", views.book_search, name="book_search"),
    path("books/<uuid:book_id>/turns/", views.turn_add, name="turn_add"),
    path("books/<uuid:book_id>/turns/<uuid:turn_id>/confirm/", views.turn_confirm, name="turn_confirm"),
    path(
        "books/<uuid:book_id>/observations/<uuid:observation_id>/",
        views.observation_resolve,
        name="observation_resolve",
    ),
    path("books/<uuid:book_id>/dossiers/", views.dossiers, name="dossiers"),
    path("books/<uuid:book_id>/codex/", views.codex, name="codex"),
    path("books/<uuid:book_id>/bible/", bible_pages.bible, name="bible"),
    path("books/<uuid:book_id>/bible.md", bible_pages.bible_download, name="bible-download"),
    path("books/<uuid:book_id>/bible/links/", bible_pages.bible_link_make, name="bible-link-make"),
    path(
        "books/<uuid:book_id>/bible/links/<uuid:link_id>/revoke/",
        bible_pages.bible_link_revoke,
        name="bible-link-revoke",
    ),
    path("bible/shared/<str:token>/", bible_pages.bible_shared, name="bible-shared"),
    path("bible/shared/<str:token>/bible.md", bible_pages.bible_shared_download, name="bible-shared-md"),
    path("series/<uuid:series_id>/bible/", series_bible_pages.series_bible, name="series-bible"),
    path("series/<uuid:series_id>/bible.md", series_bible_pages.series_bible_download, name="series-bible-download"),
    path(
        "series/<uuid:series_id>/bible/links/", series_bible_pages.series_bible_link_make, name="series-bible-link-make"
    ),
    path(
        "series/<uuid:series_id>/bible/links/<uuid:link_id>/revoke/",
        series_bible_pages.series_bible_link_revoke,
        name="series-bible-link-revoke",
    ),
    path("books/<uuid:book_id>/codex/facts/", views.codex_state, name="codex-state"),
    path("books/<uuid:book_id>/codex/claims/<uuid:claim_id>/", views.codex_claim, name="codex-claim"),
    path(
        "books/<uuid:book_id>/codex/claims/<uuid:claim_id>/supersede/",
        views.codex_supersede,
        name="codex-supersede",
    ),
    path("books/<uuid:book_id>/codex/claims/<uuid:claim_id>/retract/", views.codex_retract, name="codex-retract"),
    path("books/<uuid:book_id>/codex/entries/", manuscript_pages.entry_add, name="codex-entry-add"),
    path("books/<uuid:book_id>/chapters/", manuscript_pages.chapters, name="chapters"),
    path("books/<uuid:book_id>/chapters/<int:number>/", manuscript_pages.chapter, name="chapter"),
    path("books/<uuid:book_id>/promises/", manuscript_pages.promises, name="promises"),
    path(
        "books/<uuid:book_id>/chapters/<int:number>/findings/<uuid:finding_id>/settle/",
        manuscript_pages.finding_settle,
        name="finding-settle",
    ),
    path(
        "books/<uuid:book_id>/chapters/<int:number>/findings/<uuid:finding_id>/entry/",
        manuscript_pages.finding_entry,
        name="finding-entry",
    ),
    path("books/<uuid:book_id>/dossiers/new/", views.dossier_create, name="dossier_create"),
    path("books/<uuid:book_id>/dossiers/<uuid:dossier_id>/", views.dossier_detail, name="dossier"),
]
