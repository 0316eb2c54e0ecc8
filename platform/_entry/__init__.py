"""Weir: a self-hosted durable-function platform with Inngest's semantics."""

from pathlib import Path

__version__ = "0.1.0"

# In a source checkout (and an editable install) this package lives at <root>/platform/_entry
# while its sub-packages are the top-level folders <root>/platform, <root>/sdk, ... (the layout
# the design card fixes). `platform/` must not carry an __init__.py (it would shadow the
# standard library's `platform` for anything run from the root), so the editable installer
# cannot map it; pointing this package's search path at the root lets `weir.platform` resolve
# as a namespace package there. An installed wheel has the sub-packages beside this file.
_checkout_root = Path(__file__).resolve().parents[2]
if (_checkout_root / "platform" / "_entry").is_dir():
    __path__.append(str(_checkout_root))
