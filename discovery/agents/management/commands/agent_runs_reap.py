from django.core.management.base import BaseCommand

from discovery.agents.services import agent_runs_reap, stale_after


class Command(BaseCommand):
    help = (
        "Mark as failed every agent run still 'running' after its time is up (its worker was killed): "
        "nothing of such a run was written. `make run` and `make worker` run it before starting a worker."
    )

    def handle(self, *args, **options):
        marked = agent_runs_reap()
        limit = int(stale_after().total_seconds())
        self.stdout.write(f"{marked} lost run(s) marked failed (running for more than {limit} s)")
