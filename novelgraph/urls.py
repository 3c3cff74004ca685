from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from novelgraph.core.security import ThrottledLoginView

from .api import api

handler400 = "novelgraph.core.security.bad_request"

urlpatterns = [
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "set-password/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            template_name="registration/set_password.html", success_url="/login/?password=set"
        ),
        name="password_set",
    ),
    path("", include("discovery.key_urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("review/", include("approvals.urls")),
    path("", include("library.urls")),
    path("", include("discovery.loop.urls")),
    path("", include("discovery.agents.urls")),
    path("", include("discovery.urls")),
]
