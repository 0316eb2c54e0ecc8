"""Webhooks: a provider's POST to /webhooks/{id}, verified by the source's scheme, turned into
an event by its CEL transform and ingested as events sent to /e/ are; every delivery noted."""
