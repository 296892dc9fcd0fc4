"""Prometheus metrics (issue 37, item 1): ``GET /metrics`` protected by a token and/or an
allow-list, the requests of every door counted (the lean door's too), the resolutions by
status and blocker, bounded labels (no customer text, no key, no customer's value), and the
task queue read at scrape time in one query (``ctxstudio.metrics``,
``profiles.workspace.metrics``)."""

import copy
import json
import secrets
import stat
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult, get_date_max
from prometheus_client.mmap_dict import MmapedDict
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from ctxstudio.metrics import QueueCollector, WebhookCollector
from ctxstudio.metrics_files import MetricsFolderRefused, multiprocess_folder_prepare
from profiles.import_export.imports import workspace_import
from profiles.models import Webhook, WebhookDelivery
from profiles.notifications.delivery import webhook_delivery_attempt
from profiles.workspace import metrics
from profiles.workspace.keys import token_replace
from tests.ctxstudio import test_structured_logs
from tests.ctxstudio.test_horizontal_scaling import call, free_port, gunicorn, needs_postgresql
from tests.profiles.conftest import NOW, api_key_for, small_workspace
from tests.profiles.workspace.test_served_layers import desk, empty_workspace

case_01 = test_structured_logs.case_01  # fixtures: a conformance workspace, an editor
editor = test_structured_logs.editor
TOKEN = "scrape-" + "s3cret" * 6


@pytest.fixture
def metrics_on(settings):
    """The door on with a token (set before the client's first request builds the stack)."""
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_IPS = []
    return settings


def scrape(client=None, token: str = TOKEN) -> str:
    client = client or APIClient()
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.status_code
    assert response["Content-Type"].startswith("text/plain")
    return response.content.decode()


def samples(text: str) -> dict[tuple, float]:
    """Every sample of an exposition: (name, sorted labels) -> value."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(found: dict, name: str, **labels) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def key_client(key: str) -> APIClient:
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


# --- the door's protection ---------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("token", "allowed", "sent", "status"),
    [
        ("", [], f"Bearer {TOKEN}", 404),  # neither set: off
        (TOKEN, [], f"Bearer {TOKEN}", 200),
        (TOKEN, [], "Bearer wrong-" + TOKEN, 403),
        (TOKEN, [], TOKEN, 401),  # not a bearer
        (TOKEN, [], None, 401),
        ("", ["127.0.0.1"], None, 200),  # the test client's address
        ("", ["10.0.0.0/8", "::1"], None, 403),
        (TOKEN, ["127.0.0.0/8"], f"Bearer {TOKEN}", 200),
        (TOKEN, ["10.0.0.0/8"], f"Bearer {TOKEN}", 403),  # both must hold
        (TOKEN, ["127.0.0.1"], "Bearer nope", 403),
    ],
)
def test_metrics_door__token_and_allow_list__answers(settings, token, allowed, sent, status):
    settings.METRICS_TOKEN, settings.METRICS_ALLOWED_IPS = token, allowed
    headers = {} if sent is None else {"HTTP_AUTHORIZATION": sent}

    response = APIClient().get("/metrics", **headers)

    assert response.status_code == status
    if status == 200:
        assert b"ctxstudio_requests_total" in response.content
    else:
        assert TOKEN.encode() not in response.content
        assert len(response.content) < 200  # no detail: Django's bare answer at most
    assert "sessionid" not in response.cookies and "csrftoken" not in response.cookies


@pytest.mark.django_db
def test_metrics_door__behind_a_proxy__the_client_address_counts_not_the_proxy(settings):
    settings.METRICS_TOKEN, settings.METRICS_ALLOWED_IPS = "", ["203.0.113.7"]
    settings.TRUSTED_PROXY_COUNT = 1
    client = APIClient()

    allowed = client.get("/metrics", HTTP_X_FORWARDED_FOR="203.0.113.7")
    refused = client.get("/metrics", HTTP_X_FORWARDED_FOR="198.51.100.1")

    assert (allowed.status_code, refused.status_code) == (200, 403)


@pytest.mark.django_db
def test_metrics_door__other_methods__refused(metrics_on):
    response = APIClient().post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405


# --- what is counted --------------------------------------------------------------------------


@pytest.mark.django_db
def test_requests__resolve_studio_401_and_429__counted_by_door_status_and_operation(
    metrics_on, client, case_01, editor
):
    _, key = token_replace(user=editor)
    api = key_client(key)
    before = samples(scrape())

    resolved = api.post("/api/v1/resolve", case_01["request"], format="json")
    refused = key_client("not-a-key").post("/api/v1/resolve", case_01["request"], format="json")
    client.force_login(editor)
    page = client.get("/profiles/support-answer/")
    listed = api.get("/api/v1/profiles")
    metrics_on.REST_FRAMEWORK = copy.deepcopy(metrics_on.REST_FRAMEWORK)
    metrics_on.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["resolve"] = "1/minute"
    throttled = api.post("/api/v1/resolve", case_01["request"], format="json")
    after = samples(scrape())

    assert [resolved.status_code, refused.status_code, page.status_code] == [200, 401, 200]
    assert (listed.status_code, throttled.status_code) == (200, 429)

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    requests = "ctxstudio_requests_total"
    # The lean door's requests (no URL resolved: the door names them) and the full stack's.
    assert grew(requests, door="resolve", method="POST", operation="", status="2xx") == 1
    assert grew(requests, door="resolve", method="POST", operation="", status="4xx") == 2
    assert grew(requests, door="api", method="GET", operation="api/v1/profiles$", status="2xx") == 1
    studio = [
        labels
        for (name, labels), count in after.items()
        if name == requests and dict(labels)["door"] == "studio" and count
    ]
    assert studio and all(dict(labels)["operation"] for labels in studio)
    assert grew("ctxstudio_requests_refused_total", door="resolve", status="401") == 1
    assert grew("ctxstudio_requests_throttled_total", door="resolve") == 1
    histogram = "ctxstudio_request_duration_seconds_count"
    assert grew(histogram, door="resolve", status="2xx") == 1
    assert (
        value(
            after,
            "ctxstudio_request_duration_seconds_bucket",
            door="resolve",
            status="2xx",
            le="+Inf",
        )
        >= 1
    )
    status = resolved.json()["status"]
    assert grew("ctxstudio_resolutions_total", status=status, degraded="False", profile="") == 1
    for blocker in resolved.json()["blockers"]:
        assert grew("ctxstudio_resolution_blockers_total", code=blocker["code"]) >= 1
    # The scrapes themselves are counted too (their door and pattern name).
    assert value(after, requests, door="metrics", method="GET", operation="metrics", status="2xx")


@pytest.mark.django_db
def test_metrics__off__requests_not_counted(settings, client, case_01, editor):
    settings.METRICS_TOKEN, settings.METRICS_ALLOWED_IPS = "", []
    _, key = token_replace(user=editor)
    settings.METRICS_TOKEN = TOKEN  # on for the scrape's stack only
    before = samples(scrape(APIClient()))
    settings.METRICS_TOKEN = ""
    api = key_client(key)  # built while off

    assert api.post("/api/v1/resolve", case_01["request"], format="json").status_code == 200

    settings.METRICS_TOKEN = TOKEN
    after = samples(scrape(APIClient()))
    labels = {"door": "resolve", "method": "POST", "operation": "", "status": "2xx"}
    assert value(after, "ctxstudio_requests_total", **labels) == value(
        before, "ctxstudio_requests_total", **labels
    )


@pytest.mark.django_db
def test_exposition__customer_text_key_and_profile_key__in_no_line(metrics_on, case_01, editor):
    marker = f"zq{secrets.token_hex(6)}"
    document = copy.deepcopy(case_01["workspace"])
    profile = copy.deepcopy(document["profiles"][0])
    profile["key"], profile["objective"] = f"p-{marker}", f"objective-{marker}"
    document["profiles"].append(profile)
    for layer in document["layers"]:
        for item in layer.get("items", []):
            item["body"] = f"{item.get('body', '')} {marker}"
    workspace_import(document=document, mode="replace")
    _, key = token_replace(user=editor)
    request = {**case_01["request"], "profile": profile["key"]}
    request["input"] = {**request["input"], "message": f"refund {marker}"}

    resolved = key_client(key).post("/api/v1/resolve", request, format="json")
    text = scrape()

    assert resolved.status_code == 200 and marker in resolved.content.decode()
    assert marker not in text
    assert key not in text and key[:12] not in text
    # With METRICS_PROFILE_LABELS the profile's key is a label (the check above could fail).
    metrics_on.METRICS_PROFILE_LABELS = True
    assert key_client(key).post("/api/v1/resolve", request, format="json").status_code == 200
    assert f'profile="p-{marker}"' in scrape()


@pytest.mark.django_db
def test_label_cardinality__a_thousand_customers_resolved__no_series_added(metrics_on, editor):
    metrics_on.REST_FRAMEWORK = copy.deepcopy(metrics_on.REST_FRAMEWORK)
    metrics_on.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["resolve"] = None  # not throttled
    empty_workspace()
    workspace_import(document=desk(customers=1_000, per_customer=1))
    _, key = token_replace(user=editor)
    api = key_client(key)

    def resolve(customer: int) -> int:
        request = {
            "profile": "support",
            "input": {"customer_id": f"C{customer}", "message": "refund card"},
            "now": "2026-11-20T00:00:00Z",
        }
        return api.post("/api/v1/resolve", request, format="json").status_code

    assert {resolve(customer) for customer in range(10)} == {200}
    series = set(samples(scrape()))
    assert {resolve(customer) for customer in range(10, 1_000)} == {200}
    text = scrape()
    grown = set(samples(text))

    assert grown == series  # the same series, only their values moved
    assert "C999" not in text and "C10" not in text
    found = samples(text)
    assert value(found, "ctxstudio_served_candidates_total", result="miss") >= 1_000
    assert value(found, "ctxstudio_served_statements_total") >= 1_000


# --- the task queue's collector ---------------------------------------------------------------


def task(path: str, queue: str, *, enqueued_ago: float, run_after=None) -> DBTaskResult:
    found = DBTaskResult.objects.create(
        args_kwargs={"args": [], "kwargs": {}},
        task_path=path,
        queue_name=queue,
        backend_name="default",
        run_after=run_after or get_date_max(),
    )
    DBTaskResult.objects.filter(pk=found.pk).update(
        enqueued_at=timezone.now() - timedelta(seconds=enqueued_ago)
    )
    return found


@pytest.mark.django_db
def test_queue_collector__depth_and_oldest_due__one_query_whatever_the_tasks():
    for n in range(30):
        task("profiles.import_export.jobs.import_run", "default", enqueued_ago=100 + n)
    for n in range(5):
        task("profiles.notifications.delivery.webhook_delivery_task", "webhooks", enqueued_ago=n)
    # Deferred: one due 50 s ago, one not yet due (waiting, not late).
    now = timezone.now()
    task(
        "profiles.notifications.delivery.webhook_delivery_task",
        "webhooks",
        enqueued_ago=900,
        run_after=now - timedelta(seconds=50),
    )
    task(
        "profiles.notifications.delivery.webhook_delivery_task",
        "webhooks",
        enqueued_ago=900,
        run_after=now + timedelta(hours=1),
    )
    done = task("profiles.import_export.jobs.import_run", "default", enqueued_ago=5_000)
    DBTaskResult.objects.filter(pk=done.pk).update(status="SUCCESSFUL")

    with CaptureQueriesContext(connection) as queries:
        families = {family.name: family for family in QueueCollector().collect()}

    assert len(queries) == 1
    depth = {
        tuple(s.labels.values()): s.value for s in families["ctxstudio_task_queue_depth"].samples
    }
    oldest = {
        tuple(s.labels.values()): s.value
        for s in families["ctxstudio_task_queue_oldest_due_seconds"].samples
    }
    assert depth == {("default", "import_run"): 30, ("webhooks", "webhook_delivery_task"): 7}
    assert 129 <= oldest[("default", "import_run")] < 200
    assert 50 <= oldest[("webhooks", "webhook_delivery_task")] < 100


# --- several workers: prometheus-client's multiprocess mode -----------------------------------


@pytest.mark.django_db(transaction=True)
@needs_postgresql
def test_gunicorn_two_workers__one_scrape_counts_both_workers_requests(tmp_path, admin_user):
    workspace_import(document=small_workspace())
    key = api_key_for(admin_user)
    folder = tmp_path / "metrics"
    env = {
        "GUNICORN_WORKERS": "2",
        "METRICS_TOKEN": TOKEN,
        "PROMETHEUS_MULTIPROC_DIR": str(folder),
    }
    request = {"profile": "profile-0", "input": {"message": "refund"}, "now": NOW}
    sent = 40
    with gunicorn(free_port(), more_env=env) as port:
        # Concurrent requests on their own connections: both sync workers take some.
        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(
                pool.map(
                    lambda _: call(port, "POST", "/api/v1/resolve", key, request)[0], range(sent)
                )
            )
        status, _, body = call(
            port, "GET", "/metrics", "", headers={"Authorization": f"Bearer {TOKEN}"}
        )
        files = {path.name: path for path in folder.glob("counter_*.db")}

        assert statuses == [200] * sent
        assert status == 200
        found = samples(body.decode())
        labels = {"door": "resolve", "method": "POST", "operation": "", "status": "2xx"}
        assert value(found, "ctxstudio_requests_total", **labels) == sent
        resolutions = [
            count for (name, _), count in found.items() if name == "ctxstudio_resolutions_total"
        ]
        assert sum(resolutions) == sent
        # Each worker wrote its own file, and each counted some of the resolves.
        counted = {name: resolves_in(path) for name, path in files.items()}
        assert len([count for count in counted.values() if count]) == 2, counted
        assert sum(counted.values()) == sent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def resolves_in(path) -> float:
    """The resolve door's 2xx requests one worker's counter file holds."""
    total = 0.0
    for key, count, _, _ in MmapedDict.read_all_values_from_file(str(path)):
        name, _, labels, _ = json.loads(key)
        if (
            name == "ctxstudio_requests"
            and labels.get("door") == "resolve"
            and labels.get("status") == "2xx"
        ):
            total += count
    return total


def test_multiprocess_folder__others_may_use_it__refused_and_stale_files_emptied(tmp_path):
    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o755)
    open_folder.chmod(0o755)
    with pytest.raises(MetricsFolderRefused):
        multiprocess_folder_prepare(str(open_folder))
    private = tmp_path / "private"
    multiprocess_folder_prepare(str(private))
    (private / "counter_123.db").write_bytes(b"old run")

    multiprocess_folder_prepare(str(private))

    assert stat.S_IMODE(private.stat().st_mode) == 0o700
    assert list(private.iterdir()) == []


@pytest.mark.django_db
def test_webhooks__deliveries_kept_by_status_in_one_query__an_attempt_counted_by_outcome():
    hook = Webhook.objects.create(url="https://hooks.example.com/in", secret="s" * 32)
    statuses = ["pending"] * 3 + ["delivered"] * 5 + ["failed"]
    for status in statuses:
        WebhookDelivery.objects.create(webhook=hook, event="profile.published", status=status)
    idle = Webhook.objects.create(
        url="https://hooks.example.com/off", secret="s" * 32, active=False
    )
    attempted = WebhookDelivery.objects.create(webhook=idle, event="profile.published")
    failed = metrics.webhook_attempts.labels("failed")
    before = failed._value.get()

    outcome = webhook_delivery_attempt(delivery_id=attempted.pk)  # inactive: failed, not sent
    with CaptureQueriesContext(connection) as queries:
        [family] = WebhookCollector().collect()

    assert outcome == "failed" and failed._value.get() == before + 1
    assert len(queries) == 1
    kept = {sample.labels["status"]: sample.value for sample in family.samples}
    assert kept == {"pending": 3, "delivered": 5, "failed": 2}
