"""WSGI entry point (gunicorn ctxstudio.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxstudio.settings")
application = get_wsgi_application()
