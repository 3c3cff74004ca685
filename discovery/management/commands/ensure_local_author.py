"""The local accounts of `make run`: a plain author, and a separate staff account for the admin.

The author is an ordinary person (no staff, no superuser): she sees what any author sees,
never the admin or the staff-curated library's editing. Staff curate the library and create
accounts from the admin. Every run prints the logins (the demo's editor too, once it exists).
"""

import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


def local_url() -> str:
    """Where `make run` serves (``make run PORT=8001`` sets NOVELGRAPH_LOCAL_URL for the lines it prints)."""
    return os.environ.get("NOVELGRAPH_LOCAL_URL", "http://127.0.0.1:8000").rstrip("/")


def local_logins() -> list[tuple[str, str, str, bool]]:
    """(who, username, default password, is staff) of the local accounts, from the environment."""
    return [
        (
            "author",
            os.environ.get("NOVELGRAPH_LOCAL_USER", "author"),
            os.environ.get("NOVELGRAPH_LOCAL_PASSWORD", "novelgraph-author"),
            False,
        ),
        (
            "staff (the admin)",
            os.environ.get("NOVELGRAPH_STAFF_USER", "staff"),
            os.environ.get("NOVELGRAPH_STAFF_PASSWORD", "novelgraph-staff"),
            True,
        ),
    ]


class Command(BaseCommand):
    help = "Ensure the local author (a plain author) and a staff account exist (for `make run`); print the logins."

    def handle(self, *args, **options):
        User = get_user_model()
        for who, username, password, staff in local_logins():
            user, created = User.objects.get_or_create(
                username=username, defaults={"is_staff": staff, "is_superuser": staff}
            )
            if created:
                user.set_password(password)
                user.save()
                self.stdout.write(f"Created the local {who} {username!r}.")
            elif not staff and (user.is_staff or user.is_superuser):
                # Earlier versions made the local author a superuser: she is a plain author now.
                user.is_staff = user.is_superuser = False
                user.save(update_fields=["is_staff", "is_superuser"])
                self.stdout.write(f"The local author {username!r} is no longer staff; log in as staff for the admin.")
        editor = os.environ.get("NOVELGRAPH_DEMO_EDITOR", "editor")
        logins = list(local_logins())
        if User.objects.filter(username=editor).exists():
            logins.insert(
                1, ("editor", editor, os.environ.get("NOVELGRAPH_DEMO_EDITOR_PASSWORD", "novelgraph-editor"), False)
            )
        for who, username, password, _staff in logins:
            user = User.objects.get(username=username)
            shown = password if user.check_password(password) else "(the password you set)"
            self.stdout.write(f"Log in at {local_url()}/login/ as the {who}: {username} / {shown}")
