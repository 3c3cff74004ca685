from django.urls import path

from . import views

app_name = "library"
urlpatterns = [
    path("library/", views.search_page, name="search"),
    path("library/chunks/<str:chunk_id>/", views.chunk_page, name="chunk"),
    path("library/topics/", views.topics_page, name="topics"),
    path("library/topics/<path:topic>/", views.topic_page, name="topic"),  # a topic may hold "/"
    path("library/sources/", views.sources_page, name="sources"),
    path("library/sources/<uuid:source_id>/", views.source_page, name="source"),
    path("books/<uuid:book_id>/research/", views.research, name="research"),
    path("books/<uuid:book_id>/research/from-url/", views.research_from_url, name="research_from_url"),
    path("books/<uuid:book_id>/research/<uuid:item_id>/decide/", views.research_decide, name="research_decide"),
]
