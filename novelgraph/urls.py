from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from novelgraph.core.forms import PasswordResetByMailForm
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
    # A person who forgot her password resets it herself: the link goes to her e-mail address, never to staff,
    # in a message on the same templates as every other (templates/email/password_reset*).
    path(
        "password-reset/",
        auth_views.PasswordResetView.as_view(form_class=PasswordResetByMailForm),
        name="password_reset",
    ),
    path("password-reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "password-reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(success_url="/login/?password=reset"),
        name="password_reset_confirm",
    ),
    path("", include("discovery.key_urls")),
    path("", include("discovery.notification_urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("review/", include("approvals.urls")),
    path("", include("library.urls")),
    path("", include("discovery.loop.urls")),
    path("", include("discovery.agents.urls")),
    path("", include("discovery.urls")),
]
