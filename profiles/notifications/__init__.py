"""Notifications of review events: email to the people in a review, and outgoing webhooks."""
