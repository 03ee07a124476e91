"""layersched.sdk: the ``layersched`` command, the HTTP client (``client.Client``) and local validation."""
