app_name = "library"
urlpatterns: list = []
