"""Throttles of resolve, preview and expand: atomic counters, exactly the rate served."""

import threading

import pytest
from django.core.cache import caches
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from profiles.api.throttling import ResolutionRateThrottle

pytestmark = pytest.mark.django_db

START = 1_800_000_000.0  # the start of a period of 60 s (and of one of 3,600 s)


class ExpandView:
    throttle_scope = "expand"


def throttle_at(moment: float) -> ResolutionRateThrottle:
    """Return the throttle reading a clock that shows ``moment``."""
    throttle = ResolutionRateThrottle()
    throttle.timer = lambda: moment
    return throttle


def api_request(user) -> Request:
    request = Request(APIRequestFactory().post("/api/v1/expand"))
    request.user = user
    return request


@pytest.fixture(params=["locmem", "redis"])
def shared_cache(request):
    """The cache every worker shares: local memory (one process) or Redis (CACHE_URL)."""
    if request.param == "redis":
        return request.getfixturevalue("redis_cache")
    return caches["default"]


@pytest.fixture
def expand_rate(settings):
    def set_rate(rate):
        settings.REST_FRAMEWORK = {
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {"expand": rate},
        }

    return set_rate


def test_throttle__eight_threads_beyond_the_rate__serve_exactly_the_rate(
    shared_cache, expand_rate, django_user_model
):
    # Given a rate of 600 per minute and 8 threads sending 100 expands each for one user,
    expand_rate("600/minute")
    user = django_user_model.objects.create_user("busy")
    served = []
    barrier = threading.Barrier(8)

    def client():
        throttle, request, view = throttle_at(START + 30), api_request(user), ExpandView()
        barrier.wait()  # all threads start together
        served.append(sum(throttle.allow_request(request, view) for _ in range(100)))

    threads = [threading.Thread(target=client) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # then exactly 600 of the 800 were served.
    assert sum(served) == 600


def test_throttle__rate_reached__refuses_and_counts_users_apart(expand_rate, django_user_model):
    expand_rate("3/minute")
    alice = api_request(django_user_model.objects.create_user("alice"))
    bob = api_request(django_user_model.objects.create_user("bob"))
    throttle = throttle_at(START + 10)

    served = [throttle.allow_request(alice, ExpandView()) for _ in range(5)]

    assert served == [True, True, True, False, False]
    assert throttle.allow_request(bob, ExpandView())  # another user has their own count


def test_throttle__previous_period_full__slides_rather_than_resetting(
    expand_rate, django_user_model
):
    # Given 60 requests served in the last 10 seconds of one period (rate 60/minute),
    expand_rate("60/minute")
    request = api_request(django_user_model.objects.create_user("steady"))
    assert all(throttle_at(START + 50).allow_request(request, ExpandView()) for _ in range(60))

    # then the next period does not open with a fresh allowance of 60:
    period_start = throttle_at(START + 60)
    assert not period_start.allow_request(request, ExpandView())
    # one request fits again once the sliding minute has let one of them go,
    assert period_start.wait() == 1
    # and half a period later, half the rate is available.
    half_way = throttle_at(START + 90)
    assert sum(half_way.allow_request(request, ExpandView()) for _ in range(60)) == 30


def test_throttle__refused_requests__are_not_counted(expand_rate, django_user_model):
    expand_rate("2/minute")
    request = api_request(django_user_model.objects.create_user("knocking"))
    throttle = throttle_at(START + 59)
    assert [throttle.allow_request(request, ExpandView()) for _ in range(50)].count(True) == 2

    # 48 refused requests at the end of one period do not carry into the next;
    # the 2 served ones, weighted by the share still in the window, do.
    next_period = throttle_at(START + 90)  # the previous period weighs 1/2
    assert [next_period.allow_request(request, ExpandView()) for _ in range(5)].count(True) == 1


def test_throttle__no_rate_for_the_scope__never_refuses(expand_rate, django_user_model):
    expand_rate(None)
    request = api_request(django_user_model.objects.create_user("free"))
    throttle = throttle_at(START)
    assert all(throttle.allow_request(request, ExpandView()) for _ in range(1000))
