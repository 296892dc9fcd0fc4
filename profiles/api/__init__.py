"""The REST API (``/api/v1/``): resolve, preview and expand for applications, CRUD for editors."""
