import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novelgraph.settings")
django_application = get_wsgi_application()

from novelgraph.core.security import ChunkedBodyMiddleware  # noqa: E402  (after Django is set up)

# Django reads no chunked body by itself (no Content-Length): ChunkedBodyMiddleware hands it over, bounded.
application = ChunkedBodyMiddleware(django_application)
