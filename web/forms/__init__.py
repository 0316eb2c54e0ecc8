"""The UI's forms: run and bulk actions, capacity changes, and login."""
