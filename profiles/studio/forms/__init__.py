"""The studio's forms, one module per feature (``entries`` holds what the entry forms share,
``editor`` the editor's rule forms); import a form from its module."""
