"""What a restored instance answers: ``main()``, run by ``test_backups`` in a ``manage.py
shell`` pointed at the restored database (``DATABASE_URL``).

Resolves ``RESTORED_REQUEST`` (JSON) with the API key ``RESTORED_KEY`` through the API, and
prints one JSON object: the answer, the held texts files this process built or rebuilt, and
what the restored database holds (decision log, activity, the load layer's items).
"""

import json
import os

from django.test import Client

from profiles.models import Activity, DecisionLog, Item
from profiles.workspace import held_texts


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
