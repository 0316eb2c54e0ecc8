"""How strong `weir start`'s secrets must be, so no guessing rate reaches them.

The estimate is the length times the bits of the smallest alphabet the secret's characters come
from: hexadecimal digits 4 bits each (an Inngest signing key's `signkey-<env>-` prefix aside),
otherwise the sum of the classes used (lower case 26, upper case 26, digits 10, anything else
33, printable ASCII being 95). A secret made of one short piece repeated
(`abababab...`) counts as that piece. It is an estimate against mistakes (`test`, `changeme`,
a one-character key), not a proof of randomness: generate secrets with `openssl rand -hex 32`.

- signing keys, event keys and the admin token: at least KEY_BITS (128: 32 hex characters, or
  22 of letters and digits). They are checked by machines at any rate, and the admin token is
  never locked out (lockout.py), so their length is their only guard;
- the admin password: at least PASSWORD_BITS (64, e.g. 12 characters of lower and upper case
  letters and digits, or 14 lower-case letters) and 12 characters; a person types it, and
  failed logins back off per address.
"""

import math
import re
import string

from weir.platform.foundation.record_type import record

KEY_BITS = 128
PASSWORD_BITS = 64
PASSWORD_CHARS = 12
_PREFIX = re.compile(r"^signkey-\w+-")
_HEX = frozenset(string.hexdigits)


@record
class Secret:
    what: str  # how the problem names it: "--event-key", ...
    value: str
    minimum_bits: int = KEY_BITS
    minimum_chars: int = 0


def bits(value: str) -> float:
    """The estimated strength of a secret, in bits."""
    value = _PREFIX.sub("", value)
    value = value[: _period(value)]  # "abab..." is as strong as "ab"
    if not value:
        return 0.0
    if set(value) <= _HEX:
        return 4.0 * len(value)
    alphabet = 0
    alphabet += 26 if any(c.islower() for c in value) else 0
    alphabet += 26 if any(c.isupper() for c in value) else 0
    alphabet += 10 if any(c.isdigit() for c in value) else 0
    alphabet += 33 if any(not c.isalnum() for c in value) else 0
    return len(value) * math.log2(max(alphabet, 2))


def problem(secret: Secret) -> str | None:
    """What is wrong with a secret's strength, and what is required; None if it is enough."""
    strength = bits(secret.value)
    if strength >= secret.minimum_bits and len(secret.value) >= secret.minimum_chars:
        return None
    need = f"at least {secret.minimum_bits} bits"
    if secret.minimum_chars:
        need += f" and {secret.minimum_chars} characters"
    example = (
        "32 random hex characters (`openssl rand -hex 16`), or more"
        if secret.minimum_bits >= KEY_BITS
        else "12 random letters and digits, or a passphrase of several words"
    )
    return (
        f"{secret.what} is too weak (about {int(strength)} bits by Weir's estimate); it must have "
        f"{need}, e.g. {example}"
    )


def _period(value: str) -> int:
    """The length of the shortest piece `value` repeats (its own length if none)."""
    n = len(value)
    for size in range(1, n // 2 + 1):
        if n % size == 0 and value[:size] * (n // size) == value:
            return size
    return n
