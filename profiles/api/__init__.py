"""The REST API (``/api/v1/``): resolve, preview and expand for applications, CRUD for editors.

One module per feature (material, authoring, resolution, import_export, versioning, safechange,
keys, notifications) with its serializers in ``serializers/<feature>.py``; what their views share
(``base``, ``entries``); DRF's machinery as the API configures it (authentication, exceptions,
filters, metadata, middleware, pagination, parsers, renderers, routers, schema, throttling); the
routes (``urls``).
"""
