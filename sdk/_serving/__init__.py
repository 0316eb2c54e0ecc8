"""Serving functions to Weir: the endpoint and its request handling, signatures, registration,
and the HTTP answers."""
