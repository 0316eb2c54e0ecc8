"""Declaring functions: options, triggers, scopes, their config and the checks on them."""
