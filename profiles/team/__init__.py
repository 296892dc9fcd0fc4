"""The team: who belongs to the workspace and with which role (``members``), how teammates are
invited and how they sign in through the company's identity provider.

Every door that changes a member (the studio's Team page, single sign-on, the admin) goes
through ``members``: one rule for who may change whom, one activity entry per change.
"""
