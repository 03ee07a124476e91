"""The parts of the HTTP client (``layersched.sdk.client.Client`` is all of them together), one module a resource of
the API, as ``server/routes/`` cuts it: ``me``, ``submissions``, ``phases`` (with boards and the current set),
``teams``, ``admin``; beneath them ``transport`` (one request, its errors, following a run to its end),
``responses`` (the answers' dataclasses) and ``decoding`` (checking JSON against them)."""
