"""HTTP API: thin FastAPI routers that validate input and call the platform."""
