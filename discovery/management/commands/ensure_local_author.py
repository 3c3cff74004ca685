import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Ensure a local author account exists (for `make run`) and print how to log in."

    def handle(self, *args, **options):
        username = os.environ.get("NOVELGRAPH_LOCAL_USER", "author")
        password = os.environ.get("NOVELGRAPH_LOCAL_PASSWORD", "novelgraph-author")
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username, defaults={"is_staff": True, "is_superuser": True})
        if created:
            user.set_password(password)
            user.save()
            self.stdout.write(f"Created local author {username!r} with password {password!r}.")
        self.stdout.write(
            f"Log in at http://127.0.0.1:8000/login/ as {username!r}"
            + (f" / {password!r}" if created else " (password as set earlier)")
        )
