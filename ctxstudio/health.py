"""``GET /healthz``: 200 when the database answers, 503 otherwise (no authentication)."""

from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


@never_cache
@require_GET
def healthz(request):
    """Report whether this process can reach its database."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return JsonResponse(
            {"status": "unavailable", "database": f"unreachable: {type(exc).__name__}"},
            status=503,
        )
    return JsonResponse({"status": "ok", "database": "ok"})
