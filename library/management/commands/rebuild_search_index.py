from django.core.management.base import BaseCommand
from tqdm import tqdm

from library.search import search_index_rebuild


class Command(BaseCommand):
    help = "Rebuild the library search index (FTS5 or PostgreSQL tsvector) from the chunk table."

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=1000)

    def handle(self, *args, **options):
        from library.models import KnowledgeChunk

        total = KnowledgeChunk.objects.count()
        with tqdm(total=total, unit="chunk", desc="Indexing", file=self.stderr, disable=None) as bar:
            report = search_index_rebuild(batch_size=options["batch_size"], progress=bar.update)
        if report.mode == "like":
            self.stdout.write(
                f"No full-text index on this database (mode: like); {report.chunks} chunks are searched directly."
            )
        else:
            self.stdout.write(f"Rebuilt the {report.mode} index: {report.indexed} of {report.chunks} chunks indexed.")
