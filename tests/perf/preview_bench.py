"""Time the editor's live preview on the demo workspace: ``python -m tests.perf.preview_bench``.

Loads the demo (``load_demo``) into a throw-away test database, signs a user in with the
Django test client, and times, interleaved so machine noise hits all alike:

* **engine** — ``CompiledWorkspace.with_profile_draft(...).resolve(request)`` on the warm,
  cached compilation: the engine's own cost of resolving an unsaved draft;
* **service** — ``services.profile_resolve`` with the same draft (adds the version-token query);
* **preview request** — ``POST /profiles/<key>/preview/`` as htmx sends it: session and auth,
  the draft parsed from the form and resolved, the saved profile's resolution (cached per
  workspace version and sample input) for "what changed", explanations, and the fragment
  rendered.

Every draft changes one rule, so each preview is a real draft (never the saved profile).
Prints medians and the 90th percentile in milliseconds, the ratio, and the SQL queries per
preview request. Not part of pytest: wall-clock figures are reported, never asserted.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxstudio.settings")
os.environ.setdefault("DATABASE_URL", "sqlite:///:memory:")

import django

django.setup()

from urllib.parse import urlencode  # noqa: E402

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.http import QueryDict  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from profiles.resolution.services import profile_resolve  # noqa: E402
from profiles.studio import draft as studio  # noqa: E402
from profiles.workspace import cache  # noqa: E402
from profiles.workspace.selectors import scenario_get_default  # noqa: E402
from tests.profiles.formdata import editor_form_data  # noqa: E402

PROFILE = "support-answer"


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summary(name: str, seconds: list[float]) -> str:
    ms = [value * 1000 for value in seconds]
    return f"{name:<34} median {statistics.median(ms):7.2f} ms   p90 {percentile(ms, 0.9):7.2f} ms"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args(argv)

    # No setup_test_environment(): its instrumented template rendering copies every context
    # for the test client's assertions, which a real server never does.
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        with open(os.devnull, "w") as quiet:
            call_command("load_demo", "--no-user", verbosity=0, stdout=quiet)
        user = get_user_model().objects.create_superuser("bench", "", "bench-pass-123")
        client = Client()
        client.force_login(user)
        url = f"/profiles/{PROFILE}/"
        form = editor_form_data(client.get(url).content.decode())
        document = cache.workspace_get().document
        layers = [layer["key"] for layer in document["layers"]]
        items = sum(len(layer.get("items") or []) for layer in document["layers"])

        # The drafts: each round excludes a different layer (and tightens the budget).
        drafts = []
        for index in range(args.rounds):
            data = dict(form)
            layer = layers[index % len(layers)]
            data[f"{layer}-participation"] = "exclude"
            data[f"{layer}-required"] = ""
            data["budget"] = str(900 + index % 5 * 100)
            drafts.append(data)

        values = studio.sample_values_from_scenario(scenario_get_default(profile=studio_profile()))
        sample = studio.sample_form(values, document)
        # What the preview resolves: a summary (SPEC §7.1).
        request = sample.as_request() | {"profile": PROFILE, "detail": studio.SUMMARY}

        engine, service, server, queries = [], [], [], set()
        for data in drafts[:5]:  # warm up: compile, templates, session
            post_preview(client, url, data)
        for data in drafts:
            draft = studio.draft_from_post(QueryDict(urlencode(data)), document, PROFILE)
            assert draft.is_valid(), draft.field_errors()
            overrides, budget = draft.rule_overrides(), draft.budget_value()

            compiled = cache.workspace_get().compiled
            start = time.perf_counter()
            compiled.with_profile_draft(PROFILE, rules=overrides, budget=budget).resolve(request)
            engine.append(time.perf_counter() - start)

            start = time.perf_counter()
            profile_resolve(
                profile=PROFILE, request=request, rule_overrides=overrides, budget_override=budget
            )
            service.append(time.perf_counter() - start)

            with CaptureQueriesContext(connection) as captured:
                start = time.perf_counter()
                response = post_preview(client, url, data)
                server.append(time.perf_counter() - start)
            assert response.status_code == 200, response.status_code
            queries.add(len(captured))

        print(
            f"Demo workspace: {len(layers)} layers, {items} items; profile {PROFILE}; "
            f"{args.rounds} drafts; database {connection.vendor}"
        )
        print(summary("engine (draft + resolve)", engine))
        print(summary("service profile_resolve", service))
        print(summary("preview request (test client)", server))
        ratio = statistics.median(server) / statistics.median(engine)
        print(f"preview / engine (medians)          {ratio:.1f}x")
        print(f"SQL queries per preview request     {sorted(queries)}")
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    return 0


def post_preview(client, url: str, data: dict):
    """Post the form as htmx does: url-encoded, with the HX-Request header."""
    return client.post(
        url + "preview/",
        urlencode(data),
        content_type="application/x-www-form-urlencoded",
        headers={"HX-Request": "true"},
    )


def studio_profile():
    from profiles.models import Profile

    return Profile.objects.get(key=PROFILE)


if __name__ == "__main__":
    raise SystemExit(main())
