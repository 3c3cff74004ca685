"""What any floor announces about a book for the people and integrations outside the open page.

``book_event`` is sent (``book``, ``kind``, ``payload``: a JSON-ready dict) after the change it reports has
committed (send it from ``transaction.on_commit``), so a receiver never tells of something that rolled back. The
notifications (e-mail, the feed) and the webhooks listen to it; any app may send it, since it lives in the kernel.

Kinds: ``decision-waiting`` (an approval waits for the author), ``decision-made`` (a verdict was recorded),
``run-finished`` (an agent run ended, done or failed), ``continuity-finding`` (the continuity check found something
in a chapter). A new kind is added here, to ``BOOK_EVENT_KINDS``, and nowhere else.
"""

from django.dispatch import Signal

BOOK_EVENT_KINDS = ("decision-waiting", "decision-made", "run-finished", "continuity-finding")

book_event = Signal()
