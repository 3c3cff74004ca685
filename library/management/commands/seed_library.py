from django.core.management.base import BaseCommand

from library.models import KnowledgeChunk, KnowledgeSource
from library.seed import seed_curated_library


class Command(BaseCommand):
    help = "Ensure the curated craft library exists (idempotent; migrate already seeds it)."

    def handle(self, *args, **options):
        created = seed_curated_library(KnowledgeSource, KnowledgeChunk)
        self.stdout.write("Seeded the curated craft library." if created else "The curated craft library is present.")
