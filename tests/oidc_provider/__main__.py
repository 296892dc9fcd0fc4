"""The provider's ``manage.py``: ``python -m tests.oidc_provider <command>``."""

import os
import sys

from django.core.management import execute_from_command_line

if __name__ == "__main__":
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    execute_from_command_line(sys.argv)
