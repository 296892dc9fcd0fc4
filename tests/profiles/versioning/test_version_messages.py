"""A version's message (why a save was made): one line, bounded, no control character."""

import pytest

from profiles.versioning.versions import VERSION_MESSAGE_MAX, version_message_error


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ("", None),
        ("Fewer tickets for the phone app — ça va", None),
        ("x" * VERSION_MESSAGE_MAX, None),
        ("x" * (VERSION_MESSAGE_MAX + 1), "at most 500 characters (501 given)"),
        ("a\x00b", "must not contain a control character (U+0000)"),
        ("a\tb", "must not contain a control character (U+0009)"),
        ("a\x7fb", "must not contain a control character (U+007F)"),
        ("a\ud800b", "must not contain a lone surrogate (U+D800)"),
    ],
)
def test_version_message_error__text__says_why_it_cannot_be_a_message(message, problem):
    assert version_message_error(message) == problem
