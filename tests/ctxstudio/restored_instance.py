"""What a restored instance answers: ``python -m tests.ctxstudio.restored_instance``, in a
process pointed at the restored database (``DATABASE_URL``) by ``test_backups``.

Resolves ``RESTORED_REQUEST`` (JSON) with the API key ``RESTORED_KEY`` through the API, and
prints one JSON object: the answer, the held texts files this process built or rebuilt, and
what the restored database holds (decision log, activity, the load layer's items).
"""

import json
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxstudio.settings")
django.setup()

from django.test import Client  # noqa: E402 -- after django.setup()

from profiles.models import Activity, DecisionLog, Item  # noqa: E402
from profiles.workspace import held_texts  # noqa: E402


def main() -> None:
    # Counted before the resolve below adds its own decision log row.
    held = {
        "decision_log": DecisionLog.objects.count(),
        "item_creations": Activity.objects.filter(kind="item", key="load", op="create").count(),
        "load_items": Item.objects.filter(layer__key="load").count(),
    }
    response = Client().post(
        "/api/v1/resolve",
        os.environ["RESTORED_REQUEST"],
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {os.environ['RESTORED_KEY']}",
    )
    print(
        json.dumps(
            {
                "status": response.status_code,
                "answer": response.content.decode(),
                "texts_built": held_texts.built,
                "texts_rebuilt": held_texts.last_rebuilt,
                **held,
            }
        )
    )


if __name__ == "__main__":
    main()
