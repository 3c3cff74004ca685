"""Send the daily notification digest (issue 29): ``python manage.py notifications_digest [--day YYYY-MM-DD]
[--now]``. Without ``--day``, yesterday (the last day that has ended, in the site's time zone). It queues the
digest as background work (``db_worker`` runs it); ``--now`` sends it in this process and prints how many mails
went out. Run it once a day from cron, after midnight; a second run of the same day sends nothing again."""

from datetime import date

from django.core.management.base import BaseCommand, CommandError

from discovery.notifications import digest_day_check, digest_day_default, notifications_digest, send_digest
from novelgraph.core.errors import Invalid


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--day: {text!r} is not a date (YYYY-MM-DD)") from None


class Command(BaseCommand):
    help = "Send (or queue) the daily digest of notifications for a day that has ended (default: yesterday)."

    def add_arguments(self, parser):
        parser.add_argument("--day", help="The day to collect, YYYY-MM-DD (default: yesterday).")
        parser.add_argument("--now", action="store_true", help="Send in this process instead of queueing.")

    def handle(self, *args, day=None, now=False, **options):
        day = _day(day) if day else digest_day_default()
        if now:
            try:
                sent = notifications_digest(day=day)
            except Invalid as exc:
                raise CommandError(exc.message) from None
            self.stdout.write(f"The digest of {day.isoformat()}: {sent} mail{'s' if sent != 1 else ''} sent.")
            return
        try:
            digest_day_check(day)
        except Invalid as exc:
            raise CommandError(exc.message) from None
        result = send_digest.enqueue(day.isoformat())
        self.stdout.write(f"The digest of {day.isoformat()} is queued (task {result.id}); db_worker sends it.")
