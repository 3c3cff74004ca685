from django.urls import path

from . import views

app_name = "library"
urlpatterns = [
    path("library/", views.search_page, name="search"),
    path("books/<uuid:book_id>/research/", views.research, name="research"),
    path("books/<uuid:book_id>/research/<uuid:item_id>/decide/", views.research_decide, name="research_decide"),
]
