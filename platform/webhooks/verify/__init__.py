"""Signature schemes, one module per provider; `schemes` picks one by a source's scheme."""
