"""The page events an in-place (HTMX) action announces, so that every count on the page refreshes itself.

One mechanism, everywhere: a view whose action changes what a count, badge or pill shows answers with
django-htmx's ``trigger_client_event(response, <event>)`` (an ``HX-Trigger`` header); each count fragment
re-fetches itself on ``hx-trigger="<event> from:body"`` (the review nav badge, the inbox, the waiting list beside
a decision, the scratchpad's entries, the book page's panels). Nothing reloads the page.
"""

# A decision was recorded (or refused as stale): pending counts changed.
APPROVALS_CHANGED = "approvals-changed"
# An agent run the page watched has finished: its entries and its proposals (which wait for the author) are in.
AGENTS_FINISHED = "agents-finished"
