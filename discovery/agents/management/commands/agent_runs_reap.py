from django.core.management.base import BaseCommand

from discovery.agents.services import agent_runs_reap


class Command(BaseCommand):
    help = (
        "Settle every agent run that can no longer move because its worker stopped: a run 'running' whose "
        "worker's process is gone (or whose provider's time is up) is marked failed and charged for the work "
        "it did; a run 'queued' whose task a stopped worker had claimed is queued again; task rows left "
        "RUNNING by stopped workers are pruned. `make run` and `make worker` run it before starting a worker."
    )

    def handle(self, *args, **options):
        settled = agent_runs_reap()
        self.stdout.write(f"{settled} lost run(s) settled (their worker had stopped)")
