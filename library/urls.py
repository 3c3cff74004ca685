from django.urls import path

from . import views

app_name = "library"
urlpatterns = [
    path("", views.search_page, name="search"),
]
