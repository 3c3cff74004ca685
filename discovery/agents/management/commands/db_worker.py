"""``db_worker``: django-tasks-db's worker, naming itself by host and process.

The same command as the backend's (this app comes before ``django_tasks_db`` in INSTALLED_APPS, so
its command is the one ``manage.py db_worker`` runs), except that the default ``--worker-id`` is
``<host>:<pid>:<random>`` (``discovery.agents.workers.new_worker_id``): the reap can then tell that the
worker holding a task or a run has stopped, and settle it at once.
"""

from django_tasks_db.management.commands.db_worker import Command as DatabaseWorkerCommand
from django_tasks_db.management.commands.db_worker import validate_worker_id

from discovery.agents.workers import new_worker_id


class Command(DatabaseWorkerCommand):
    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.set_defaults(worker_id=None)

    def handle(self, *args, worker_id=None, **options):
        return super().handle(*args, worker_id=validate_worker_id(worker_id or new_worker_id()), **options)
