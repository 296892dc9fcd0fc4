"""The hall's rate counters, which the API's throttle and the studio's doors share: a request
of several resolutions counts as that many, and a refused one counts nothing."""

import pytest
from django.core.cache import caches

from profiles.workspace.throttling import RateCounter, throttle_key, user_throttle_wait

pytestmark = pytest.mark.django_db

START = 1_800_000_000.0  # the start of a period of 60 s


@pytest.fixture(params=["locmem", "redis"])
def shared_cache(request):
    if request.param == "redis":
        return request.getfixturevalue("redis_cache")
    caches["default"].clear()
    return caches["default"]


def counter(key: str = "throttle_resolve_1", rate: str = "5/minute") -> RateCounter:
    return RateCounter(key, rate, timer=lambda: START + 10)


def test_counter__cost_two__counts_two_and_a_refused_cost_counts_nothing(shared_cache):
    assert counter().admit(2)
    assert counter().admit(2)  # 4 of 5
    refused = counter()

    assert not refused.admit(2)  # 6 would pass the rate: refused, and not counted
    assert refused.wait() >= 1
    assert counter().admit(1)  # the 5th still fits
    assert not counter().admit(1)


def test_user_throttle_wait__same_key_as_the_api__and_none_without_a_rate(settings, shared_cache):
    class Dana:
        pk = 7
        is_authenticated = True

    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"preview": "1/minute"},
    }
    timer = lambda: START + 5  # noqa: E731

    assert user_throttle_wait(scope="preview", user=Dana(), timer=timer) is None
    assert user_throttle_wait(scope="preview", user=Dana(), timer=timer) >= 1
    # The studio's count is the API's: DRF's key for user 7 in scope preview.
    assert throttle_key("preview", 7) == "throttle_preview_7"
    assert user_throttle_wait(scope="resolve", user=Dana(), timer=timer) is None  # no rate


def test_counter__cost_above_the_rate__fits_an_empty_window_rather_than_never(shared_cache):
    # A compare (two resolutions) with a rate of 1 a minute is served once, then waits.
    first, second = counter(rate="1/minute"), counter(rate="1/minute")

    assert first.admit(2)
    assert not second.admit(2)
    assert 1 <= second.wait() <= 120  # the sliding minute lets it go within two periods
