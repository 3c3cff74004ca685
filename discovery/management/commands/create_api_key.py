from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from discovery.models import Book
from novelgraph.core.errors import DomainError
from novelgraph.core.roles import KEY_ROLES
from novelgraph.core.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a user. The key is printed once, alone on the last line; only its hash is kept."

    def add_arguments(self, parser):
        parser.add_argument("--username", required=True)
        parser.add_argument("--role", required=True, choices=[value for value, _ in KEY_ROLES])
        parser.add_argument(
            "--book",
            action="append",
            default=[],
            metavar="BOOK_ID",
            help="limit the key to this book (repeatable); default: all of the user's books",
        )
        parser.add_argument("--name", default="")

    def handle(self, *args, username, role, book, name, **options):
        User = get_user_model()
        try:
            owner = User.objects.get(username=username)
        except User.DoesNotExist:
            raise CommandError(f"no user named {username!r}")
        books = []
        for book_id in book:
            try:
                books.append(Book.objects.get(pk=book_id))
            except (Book.DoesNotExist, ValueError):
                raise CommandError(f"no book with id {book_id!r}")
        try:
            key, raw = api_key_create(owner=owner, role=role, books=books, name=name)
        except DomainError as exc:
            raise CommandError(exc.message)
        scope = ", ".join(b.title for b in books) or f"all books of {username}"
        self.stdout.write(f"Created {role} key {key.prefix}… for {username} ({scope}). It is shown only once:")
        self.stdout.write(raw)
