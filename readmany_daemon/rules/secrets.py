"""What a secret looks like: credential formats as rules compiled into one scanner.

Each :class:`SecretRule` is a regex body with one group ``(?P<v>…)`` around the value
to hide, a ``kind`` (the name shown in ``«redacted:<kind>:…»``) and, for the loose
rules, a check of the value in Python (:func:`accepts`). The formats are the ones
gitleaks (``config/gitleaks.toml``), trufflehog's detectors and GitHub's secret scanning
document: fixed prefixes (``AKIA``, ``ghp_``, ``glpat-``, ``xoxb-``, ``sk_live_``,
``AIza``, ``sk-``, ``eyJ…``) and PEM private key blocks are certain; a value assigned to
a name like ``password``, ``secret`` or ``token`` counts only when it looks random
(Shannon entropy of at least 3.5 bits a character, gitleaks' threshold for its generic
rule, less for short values, and a digit in it) and is no code or placeholder
(``self.token``, ``${TOKEN}``, ``<your-token>``, ``changeme``).

All rules are one alternation compiled by ``rules.regex.compile_scanner`` (RE2, one
linear pass a text); :func:`scanner` compiles it once a process.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import Final, NamedTuple

from readmany_daemon.rules.regex import Scanner, compile_scanner


class SecretRule(NamedTuple):
    """One credential format: ``kind`` (lower-case, dashes), the regex ``body`` (one
    ``(?P<v>…)`` group: the value replaced), and whether the value must pass
    :func:`accepts` (``loose``)."""

    kind: str
    body: str
    loose: bool = False


#: A value ends where a token can't go on (the class is the value's own, negated).
_B64_END = r"(?:[^A-Za-z0-9+/=]|$)"
_WORD_END = r"(?:[^A-Za-z0-9_]|$)"
_DASH_END = r"(?:[^A-Za-z0-9_-]|$)"
#: The value of the loose rules: 8 to 200 characters of a token, quotes and space aside.
_VALUE = r"[A-Za-z0-9+/=_.~!@#$%^&*][A-Za-z0-9+/=_.~!@#$%^&*-]{7,199}"
#: Names a secret is assigned to, for the loose rule (gitleaks' generic-api-key words).
_NAMES = (
    r"(?:passw(?:or)?d|pwd|pass|secret|token|api[_.-]?key|apikey|access[_.-]?key"
    r"|auth[_.-]?key|private[_.-]?key|client[_.-]?secret|credentials?)"
)

RULES: Final[tuple[SecretRule, ...]] = (
    # PEM/OpenSSH/PGP private keys: the body between the markers (one line with literal
    # \n escapes, as in a JSON service-account file, or many lines). A block cut before
    # its END marker (a window of a large file) hides the key-like lines that follow.
    SecretRule(
        "private-key",
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:\\r|\\n|\s)*(?:[A-Za-z-]{1,40}: ?[^\n]{0,200}(?:\\r|\\n|\s)+)*"
        r"(?P<v>(?:[A-Za-z0-9+/=]|\\r|\\n|\s){16,}?)"
        r"(?:(?:\\r|\\n|\s)*-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:\\r|\\n|\s)*(?:[^A-Za-z0-9+/=\s\\]|\\[^rn]|$))",
    ),
    SecretRule("aws-access-key", r"\b(?P<v>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})" + _WORD_END),
    SecretRule(
        "aws-secret-key",
        r"(?i:aws_?(?:secret_?(?:access_?)?key)|secret_?access_?key)[\"']?\s{0,5}"
        r"(?:[:=]|=>|:=)\s{0,5}[\"']?(?P<v>[A-Za-z0-9/+]{40})" + _B64_END,
    ),
    SecretRule(
        "github-token",
        r"\b(?P<v>(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,250}))" + _WORD_END,
    ),
    SecretRule(
        "gitlab-token",
        r"\b(?P<v>gl(?:pat|ptt|dt|rt|ft|soat|cbt|oas)-[A-Za-z0-9_-]{20,200})" + _DASH_END,
    ),
    SecretRule("slack-token", r"\b(?P<v>xox[abposre]-[A-Za-z0-9-]{10,250})" + _DASH_END),
    SecretRule("slack-token", r"\b(?P<v>xapp-\d-[A-Za-z0-9-]{10,250})" + _DASH_END),
    SecretRule(
        "slack-webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9_/+-]{20,200})"
        + _B64_END,
    ),
    SecretRule(
        "stripe-key", r"\b(?P<v>(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,247})" + _WORD_END
    ),
    SecretRule("google-api-key", r"\b(?P<v>AIza[0-9A-Za-z_-]{35})" + _DASH_END),
    SecretRule("openai-key", r"\b(?P<v>sk-[A-Za-z0-9_-]{20,250})" + _DASH_END, True),
    SecretRule(
        "jwt",
        r"\b(?P<v>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)" + _DASH_END,
    ),
    # A value assigned to a secret's name: `password = "…"`, `API_KEY: …`, `"token": "…"`,
    # `--secret=…`; quoted or bare, up to the end of the value.
    # `config["password"] = …` (a subscript), `db_password: str = …` (a Python or
    # TypeScript annotation before the `=`).
    SecretRule(
        "assigned",
        r"(?i:" + _NAMES + r")[A-Za-z0-9_.-]{0,20}[\"']?\]?"
        r"(?:[ \t]{0,5}:[ \t]{0,5}[A-Za-z_][A-Za-z0-9_.\[\], |]{0,40}?[ \t]{0,5}="
        r"|[ \t]{0,5}(?:=|:=|=>|:|\?=))[ \t]{0,5}[\"'`]?(?P<v>" + _VALUE + r")(?:[\"'`\s,;]|$)",
        True,
    ),
    # XML: `<password>…</password>`, and a name/value pair of attributes, as .NET
    # settings write it: `<add key="ApiKey" value="…"/>`.
    SecretRule(
        "assigned",
        r"<[A-Za-z0-9_.:-]{0,20}(?i:" + _NAMES + r")[A-Za-z0-9_.-]{0,20}>[ \t]{0,5}"
        r"(?P<v>" + _VALUE + r")[ \t]{0,5}</",
        True,
    ),
    SecretRule(
        "assigned",
        r"(?i:key|name)[ \t]{0,5}=[ \t]{0,5}\"[A-Za-z0-9_.:-]{0,20}(?i:" + _NAMES + r")"
        r"[A-Za-z0-9_.-]{0,20}\"[ \t]{1,5}(?i:value)[ \t]{0,5}=[ \t]{0,5}\""
        r"(?P<v>" + _VALUE + r")\"",
        True,
    ),
    # Credentials in a URL, `scheme://user:password@host`: the password alone (RFC 3986
    # userinfo: unreserved, percent-encoded and sub-delimiter characters). The match
    # starts at `://`: a scheme before it would make every word a place to start.
    SecretRule(
        "password",
        r"://[A-Za-z0-9._~%!$&()*+,;=-]{1,100}:"
        r"(?P<v>[A-Za-z0-9._~%!$&()*+,;=-]{8,200})@[A-Za-z0-9\[]",
        True,
    ),
)

#: Shannon entropy (bits a character) a loose value needs (gitleaks' generic rule: 3.5).
MIN_ENTROPY: Final = 3.5
#: Values of the loose rules that are code or placeholders, not secrets.
_CODE_LIKE = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(\)?)?"  # self.token, os.environ
    r"|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|<[^>]*>|%\(?\w*\)?s?|\*+|x+|X+"
)
_PLACEHOLDER_WORDS = ("changeme", "example", "placeholder", "your", "dummy", "redacted", "xxxx")


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits a character (0.0 for ``""``)."""
    n = len(value)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def min_entropy(length: int) -> float:
    """Entropy (bits a character) a loose value of ``length`` characters needs:
    :data:`MIN_ENTROPY`, or 80 % of the most that length can hold (``log2(length)``)
    when that is less: a random 16-character password holds at most 4 bits a
    character, and often less than 3.5."""
    return min(MIN_ENTROPY, 0.8 * math.log2(max(length, 2)))


def accepts(rule: SecretRule, value: str) -> bool:
    """Whether ``value`` matched by a loose ``rule`` is a secret: random-looking (a digit
    and at least :func:`min_entropy` bits a character), not code (``self.token``,
    ``${TOKEN}``) and no placeholder (``changeme``, ``<your-key>``). Certain rules
    accept every value."""
    if not rule.loose:
        return True
    if _CODE_LIKE.fullmatch(value):
        return False
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return False
    if not any(c.isdigit() for c in value):
        return False
    return entropy(value) >= min_entropy(len(value))


#: The kind shown for a value the "assigned" rule found, by the name it was given to.
_ASSIGNED_KINDS: Final = (
    ("pass", "password"),
    ("pwd", "password"),
    ("token", "token"),
    ("key", "api-key"),
)


def assigned_kind(name: str) -> str:
    """The kind of a value assigned to ``name``: ``password``, ``token``, ``api-key``,
    else ``secret``."""
    lowered = name.lower()
    for word, kind in _ASSIGNED_KINDS:
        if word in lowered:
            return kind
    return "secret"


@functools.cache
def scanner() -> Scanner:
    """:data:`RULES` compiled as one scanner (once a process)."""
    return compile_scanner([rule.body for rule in RULES])
