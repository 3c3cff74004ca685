from django.core.management.base import BaseCommand

from discovery.models import KnowledgeBase
from library.models import KnowledgeChunk, KnowledgeSource
from library.seed import seed_curated_library


class Command(BaseCommand):
    help = "Ensure the global literary knowledge base and the curated craft library exist (idempotent)."

    def handle(self, *args, **options):
        created = seed_curated_library(KnowledgeBase, KnowledgeSource, KnowledgeChunk)
        self.stdout.write("Seeded the curated craft library." if created else "The curated craft library is present.")
