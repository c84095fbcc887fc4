"""What a secret looks like: credential formats as rules compiled into one scanner, and
the judgment of what the loose rules find (PROTOCOL §4, "Secrets redacted, not dropped").

Each :class:`SecretRule` is a regex body with one group ``(?P<v>…)`` around the value
to hide, a ``kind`` (the name shown in ``«redacted:<kind>:…»``) and whether it is loose.
The formats are the ones gitleaks (``config/gitleaks.toml``), trufflehog's detectors and
GitHub's secret scanning document: fixed prefixes (``AKIA``, ``ghp_``, ``glpat-``,
``xoxb-``, ``sk_live_``, ``AIza``, ``eyJ…``) and PEM private key blocks are certain.
What a loose rule finds is judged in Python (:func:`judge`, issue 23 item 6):

- a value assigned to a name counts only when the name is a secret's
  (:func:`secret_name`: one of its words, split at ``_ - .``, camelCase and digits, is
  a secret word, and its last word does not make it a reference, ``secretName``);
- the value must look random (:func:`random_looking`: a digit, Shannon entropy of at
  least 3.5 bits a character, gitleaks' threshold for its generic rule, less for short
  or hex values) and be none of code, a placeholder, a number, a UUID, a path or a name
  made of words (:func:`reads_as_words`, ``password1``, ``GPT2Tokenizer``);
- an ``Authorization: Basic`` credential is judged by the password it encodes.

All rules are one alternation compiled by ``rules.regex.compile_scanner`` (RE2, one
linear pass a text); :func:`scanner` compiles it once a process. No rule has a long
bounded repetition (``{0,100}``): RE2's DFA holds a state per count, which a fresh
process pays for as it scans (0.3 s of CPU over the trees of ``bench/bench_redact.py``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import itertools
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
#: A bare value of the loose rules: 8 to 200 characters of a token, quotes and space aside.
_VALUE = r"[A-Za-z0-9+/=_.~!@#$%^&*?][A-Za-z0-9+/=_.~!@#$%^&*?-]{7,}"
#: Where a secret's name may be, for the loose rules: a word of gitleaks' generic-api-key
#: rule inside a name. RE2 finds the places; :func:`secret_name` judges the whole name.
_NAMES = (
    r"(?:passw(?:or)?d|pwd|pass|secret|token|api[_.-]?key|apikey|access[_.-]?key"
    r"|auth[_.-]?key|private[_.-]?key|client[_.-]?secret|credentials?)"
)
#: A secret's name up to its value: the rest of the name, a closing quote or bracket,
#: then `=`, `:`, `:=`, `=>`, `?=`, or a type annotation and `=`.
_ASSIGN = (
    r"(?i:" + _NAMES + r")[A-Za-z0-9_.-]*[\"']?\]?"
    r"(?:[ \t]*:[ \t]*[A-Za-z_][A-Za-z0-9_.\[\], |]{0,40}?[ \t]*="
    r"|[ \t]*(?:=|:=|=>|:|\?=))[ \t]*"
)

#: A line holding one of these is shown as it is (gitleaks' own marker, and ours).
ALLOW_MARKERS: Final = ("readmany:allow", "gitleaks:allow")
#: The rest of a line up to and past an allow marker (a comment after a key's BEGIN line:
#: that line is shown, the body after it is not). No `\\` before the marker: a key on one
#: line with `\\n` escapes is not taken for a comment.
_MARKED_REST = r"(?:[^\n\\]*?(?:readmany|gitleaks):allow[^\n]*)?"

RULES: Final[tuple[SecretRule, ...]] = (
    # PEM/OpenSSH/PGP private keys: the body between the markers (one line with literal
    # \n escapes, as in a JSON service-account file, or many lines). A block cut before
    # its END marker (a window of a large file) hides the key-like lines that follow.
    SecretRule(
        "private-key",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        + _MARKED_REST
        + r"(?:\\r|\\n|\s)*(?:[A-Za-z-]+: ?[^\n]*(?:\\r|\\n|\s)+)*"
        r"(?P<v>(?:[A-Za-z0-9+/=]|\\r|\\n|\s){16,}?)"
        r"(?:(?:\\r|\\n|\s)*-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:\\r|\\n|\s)*(?:[^A-Za-z0-9+/=\s\\]|\\[^rn]|$))",
    ),
    SecretRule("aws-access-key", r"\b(?P<v>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})" + _WORD_END),
    SecretRule(
        "aws-secret-key",
        r"(?i:aws_?(?:secret_?(?:access_?)?key)|secret_?access_?key)[\"']?[ \t]*"
        r"(?:[:=]|=>|:=)[ \t]*[\"']?(?P<v>[A-Za-z0-9/+]{40})" + _B64_END,
    ),
    SecretRule(
        "github-token",
        r"\b(?P<v>(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}))" + _WORD_END,
    ),
    SecretRule(
        "gitlab-token",
        r"\b(?P<v>gl(?:pat|ptt|dt|rt|ft|soat|cbt|oas)-[A-Za-z0-9_-]{20,})" + _DASH_END,
    ),
    SecretRule("slack-token", r"\b(?P<v>xox[abposre]-[A-Za-z0-9-]{10,})" + _DASH_END),
    SecretRule("slack-token", r"\b(?P<v>xapp-\d-[A-Za-z0-9-]{10,})" + _DASH_END),
    SecretRule(
        "slack-webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9_/+-]{20,})" + _B64_END,
    ),
    SecretRule("stripe-key", r"\b(?P<v>(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,})" + _WORD_END),
    SecretRule("google-api-key", r"\b(?P<v>AIza[0-9A-Za-z_-]{35})" + _DASH_END),
    SecretRule("openai-key", r"\b(?P<v>sk-[A-Za-z0-9_-]{20,})" + _DASH_END, True),
    SecretRule(
        "jwt",
        r"\b(?P<v>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)" + _DASH_END,
    ),
    # A value assigned to a secret's name: `password = "…"`, `API_KEY: …`, `"token": "…"`,
    # `--secret=…`; quoted (any characters but white space and the quote: Django's
    # `'django-insecure-a%b)h8…'`) or bare, up to the end of the value.
    # `config["password"] = …` (a subscript), `db_password: str = …` (a Python or
    # TypeScript annotation before the `=`). The name is judged whole in Python
    # (:func:`secret_name`): the regex only finds where one may be.
    SecretRule("assigned", _ASSIGN + r'"(?P<v>[^"\s]{8,})"', True),
    SecretRule("assigned", _ASSIGN + r"'(?P<v>[^'\s]{8,})'", True),
    SecretRule("assigned", _ASSIGN + r"`(?P<v>[^`\s]{8,})`", True),
    # A bare value ends at white space, `,`, `;`, or the quote or bracket closing what
    # holds the whole assignment: `- "POSTGRES_PASSWORD=…"`, `["REDIS_PASSWORD=…"]`.
    SecretRule("assigned", _ASSIGN + r"(?P<v>" + _VALUE + r")(?:[\s,;\"'\]]|$)", True),
    # XML: `<password>…</password>`, and a name/value pair of attributes, as .NET
    # settings write it: `<add key="ApiKey" value="…"/>`.
    SecretRule(
        "assigned",
        r"<[A-Za-z0-9_.:-]*(?i:" + _NAMES + r")[A-Za-z0-9_.-]*>[ \t]*"
        r"(?P<v>" + _VALUE + r")[ \t]*</",
        True,
    ),
    SecretRule(
        "assigned",
        r"(?i:key|name)[ \t]*=[ \t]*\"[A-Za-z0-9_.:-]*(?i:" + _NAMES + r")"
        r"[A-Za-z0-9_.-]*\"[ \t]+(?i:value)[ \t]*=[ \t]*\""
        r"(?P<v>" + _VALUE + r")\"",
        True,
    ),
    # Credentials in a URL, `scheme://user:password@host` or `scheme://:password@host`
    # (Redis): the password alone (RFC 3986 userinfo: unreserved, percent-encoded and
    # sub-delimiter characters). The match starts at `://`: a scheme before it would
    # make every word a place to start.
    SecretRule(
        "password",
        r"://[A-Za-z0-9._~%!$&()*+,;=-]*:"
        r"(?P<v>[A-Za-z0-9._~%!$&()*+,;=-]{8,})@[A-Za-z0-9\[]",
        True,
    ),
    # An HTTP `Authorization` header's credential (RFC 9110 §11.6.2): `Basic <base64 of
    # user:password>`, `Bearer <token>` (RFC 6750) or `Token <token>` (Django REST
    # framework's TokenAuthentication, GitHub's API), as a header line, a curl `-H`, or
    # a key of a headers mapping.
    SecretRule(
        "authorization",
        r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic|bearer|token)[ \t]+"
        r"(?P<v>[A-Za-z0-9+/=._~-]{8,})(?:[^A-Za-z0-9+/=._~-]|$)",
        True,
    ),
)

#: Shannon entropy (bits a character) a loose value needs (gitleaks' generic rule: 3.5).
MIN_ENTROPY: Final = 3.5
#: The same for a value of hex digits only: 80 % of the 4 bits 16 symbols can hold.
HEX_MIN_ENTROPY: Final = 3.2
_HEX = re.compile(r"[0-9a-fA-F]+")
#: Values of the loose rules that are code or placeholders, not secrets.
_CODE_LIKE = re.compile(
    r"\$\{[^{}]*\}|\$[A-Z_][A-Z0-9_]*|\$[a-z_][a-z0-9_]*|\{\{.*\}\}|<[^>]*>"
    r"|%(?:\(\w+\))?[sdr]|\*+|x+|X+"
)
#: A dotted name (`self.token`, `os.environ.get()`, `settings.SECRET_KEY`): its parts are
#: judged by :func:`_dotted_code`.
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(\)?)?")
_PLACEHOLDER_WORDS = ("changeme", "example", "placeholder", "your", "dummy", "redacted", "xxxx")
#: A number, a version or a date: digits and separators only (`1234567890`, `2024-01-31`).
_NUMBER = re.compile(r"[0-9][0-9._:,/+-]*")
#: A hole of a template or format string (`{name}`, `${NAME}`, `{{ name }}`).
_TEMPLATE = re.compile(r"\$?\{\{?[^{}]*\}?\}")
#: A backslash escape of a string literal (`\0`, `\x1b`, `\u00e9`, `\n`).
_ESCAPE = re.compile(r"\\(?:x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{1,3}|.)")
#: A UUID (RFC 9562's 8-4-4-4-12 hex form), braced or not: an id, not a secret.
_UUID = re.compile(r"\{?[0-9A-Fa-f]{8}-(?:[0-9A-Fa-f]{4}-){3}[0-9A-Fa-f]{12}\}?")
#: An Amazon Resource Name (`arn:aws:secretsmanager:<region>:<account>:secret:<name>`):
#: where a secret is kept, not the secret.
_ARN = re.compile(r"arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:[0-9]*:\S+")
#: A hex digest (MD5 to SHA-512: 32 to 128 hex digits).
_HEX_DIGEST = re.compile(r"[0-9a-f]{32,128}|[0-9A-F]{32,128}")
#: An identifier, a kebab-case or dotted name, or a field name: words and digits joined
#: by `_`, `-`, `.`, `:` or `$`.
_NAME_LIKE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:[.:-]+[A-Za-z0-9_$]+)*")
#: The words of a name: split at `_`, `-`, `.`, camelCase and digits (`GPT2Tokenizer`
#: → GPT, 2, Tokenizer; `APIKey` → API, Key).
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_LETTER_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")
#: The letter pairs that make 93 % of the pairs in the words (3 letters or more) of the
#: identifiers of CPython 3.11's standard library (276 of 676; each word counted once):
#: names are made of these, random strings mostly not.
_PAIRS: Final = (
    "aa ab ac ad ag ai ak al am an ap ar as at au av aw ax ay ba bb bc be bi bl bo "
    "br bs bu by ca cc ce ch ci ck cl co cr cs ct cu cy da dd de df di dl do dr ds "
    "dt du ea eb ec ed ee ef eg ei el em en eo ep eq er es et ev ew ex ey fa fe ff "
    "fi fl fo fr fs ft fu ga ge gh gi gl gn go gr gs gu ha he hi ho hr ht ia ib ic "
    "id ie if ig il im in io ip ir is it iv ix iz ka ke ki ks la ld le li ll lo lp "
    "ls lt lu ly ma mb me mi mm mo mp ms mu na nc nd ne nf ng ni nk nl nn no np ns "
    "nt nu nv oa ob oc od of og oi ok ol om on oo op or os ot ou ov ow ox pa pe ph "
    "pi pl po pp pr ps pt pu py qu ra rc rd re rf rg ri rk rl rm rn ro rp rr rs rt "
    "ru ry sa sc sd se sh si sk sl sm so sp ss st su sy ta tc td te tf th ti tl tm "
    "tn to tp tr ts tt tu ty ua ub uc ud ue uf ug ui ul um un up ur us ut va ve vi "
    "wa we wi wn wo wr ws xe xi xp xt yn yp ys yt ze "
)
_COMMON_PAIRS: Final = frozenset(_PAIRS.split())
#: Share of a value's letter pairs that must be common for it to read as words.
_WORDY_SHARE: Final = 0.75
#: The same for a value of short words (`superS3cret`): random strings are made of those.
_SHORT_WORDS_SHARE: Final = 0.9


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


def name_words(name: str) -> list[str]:
    """The lower-cased letter words of ``name``, split at `_`, `-`, `.`, camelCase and
    digits (``password1_field_name`` → ``["password", "field", "name"]``)."""
    return [w.lower() for w in _LETTER_WORDS.findall(name)]


def reads_as_words(value: str) -> bool:
    """Whether ``value`` is an identifier, a kebab-case, dotted or field name made of
    words (``password1``, ``GPT2Tokenizer``, ``contextToken2``, ``FORBIDDEN_VALUE2``,
    ``NEXUS-GPT4-API-KEY``), not a random string: at least 3 letter pairs, 75 % of them
    among :data:`_COMMON_PAIRS` (90 % when its words are 4 characters or less on
    average), at most 3 runs of digits, and words of 3 characters on average. Random
    strings of letters and digits pass 1 to 4 times in 100 at 8 characters, less than 1
    in 100 from 16."""
    if not _NAME_LIKE.fullmatch(value):
        return False
    words = _WORDS.findall(value)
    if len(words) * 3 > len(value) + 3:
        return False
    pairs = common = digit_runs = 0
    for word in words:
        if word[0].isdigit():
            digit_runs += 1
            continue
        lowered = word.lower()
        for a, b in itertools.pairwise(lowered):
            pairs += 1
            common += a + b in _COMMON_PAIRS
    # short words (4 characters on average or less) must be all but made of common pairs
    share = _WORDY_SHARE if len(words) * 4 <= len(value) + 4 else _SHORT_WORDS_SHARE
    return pairs >= 3 and common >= share * pairs and digit_runs <= 3


def _path_like(value: str) -> bool:
    """Whether ``value`` is a path or a URL path (``models/gpt2/tokenizer.json``,
    ``/etc/ssl/key.pem``): parts between `/` that read as words, or are 5 characters at
    most, at least one of them words. Base64 holds `/` too, between random parts."""
    parts = [p for p in value.replace("\\", "/").split("/") if p not in ("", ".", "..", "~")]
    if len(parts) < 2 and not value.startswith(("/", "./", "../", "~/")):
        return False
    wordy = 0
    for part in parts:
        stem = part.lstrip(".")  # a dot file or folder: `.cache`, `.env`
        stem = stem.rsplit(".", 1)[0] if "." in stem else stem
        if reads_as_words(stem):
            wordy += 1
        elif len(part) > 5:
            return False
    return wordy > 0


def random_looking(value: str) -> bool:
    """Whether ``value`` looks like a secret by itself: not code or a placeholder
    (``self.token``, ``${TOKEN}``, ``<your-key>``, ``changeme``), not a number, a UUID,
    a name made of words (:func:`reads_as_words`) or a path; a digit in it and at least
    :func:`min_entropy` bits a character, whatever punctuation it holds."""
    if _CODE_LIKE.fullmatch(value) or _NUMBER.fullmatch(value) or _UUID.fullmatch(value):
        return False
    if _ARN.fullmatch(value):
        return False
    if _DOTTED.fullmatch(value) and _dotted_code(value):
        return False
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return False
    if "{" in value:  # a template's holes are code: `{github[0]}`, `${DB_PASS}`, `{{ x }}`
        value = _TEMPLATE.sub("", value)
        if len(value) < 8:
            return False
    if "\\" in value:  # judged as the string it writes: `pass\0word` is `pass` `word`
        value = _ESCAPE.sub("", value)
    if not any(c.isdigit() for c in value):
        return False
    if reads_as_words(value) or ("/" in value and _path_like(value)):
        return False
    if _HEX.fullmatch(value):  # 16 symbols hold 4 bits at most: 80 % of that
        return entropy(value) >= min(HEX_MIN_ENTROPY, min_entropy(len(value)))
    return entropy(value) >= min_entropy(len(value))


def _dotted_code(value: str) -> bool:
    """Whether dotted ``value`` is code, not a token holding dots: each part is a word
    of 8 letters at most (``self``, ``os``, ``environ``) or reads as words."""
    for part in value.rstrip("()").split("."):
        if not ((part.isalpha() and len(part) <= 8) or reads_as_words(part)):
            return False
    return True


def accepts(rule: SecretRule, value: str) -> bool:
    """Whether ``value`` matched by ``rule`` is a secret: every value of a certain rule;
    for a loose rule, a :func:`random_looking` one, and for ``authorization``'s
    ``Basic`` credential, the password inside its base64 (``user:password``) when it
    decodes to one."""
    if not rule.loose:
        return True
    if rule.kind == "authorization":
        password = _basic_password(value)
        if password is not None:
            return random_looking(password)
    return random_looking(value)


def _basic_password(value: str) -> str | None:
    """The password of a ``Basic`` credential (base64 of ``user:password``, RFC 7617),
    or None when ``value`` is no such base64."""
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    _user, colon, password = decoded.partition(":")
    if not colon or not decoded.isprintable():
        return None
    return password


#: Secret words: a name holding one of these words holds a secret (with its plurals).
_SECRET_WORDS: Final = frozenset(
    {"password", "passwd", "pwd", "pass", "passphrase", "secret", "token", "apikey"}
    | {"credential", "credentials", "passwords", "secrets", "tokens", "apikeys"}
)
#: Secret words that end a name of one word, written all in capitals or all in small
#: letters (`PGPASSWORD`, `dbpasswd`, `clientsecret`, `GITHUBTOKEN`): the words of such a
#: name do not split. Not `pass`, which ends `bypass` and `compass`.
_SECRET_ENDINGS: Final = ("password", "passwd", "secret", "token", "passwords", "secrets", "tokens")
#: Words before `key` that make it a secret's name (`api_key`, `AccessKey`, …).
_KEY_QUALIFIERS: Final = frozenset({"api", "access", "auth", "private", "secret", "client"})
#: Last words of a name that refers to a secret, not holds one (`secretName`,
#: `tokenizer_file`, `TOKEN_PREFIX`, `password1_field_name`, `secret_arn`,
#: `token_cache_dir`), or tells how it is made or kept (`token_scope`,
#: `passwordAlgorithm`, `secretBackend`).
_REFERENCE_WORDS: Final = frozenset(
    {"name", "id", "ref", "file", "path", "class", "type", "field", "prefix", "suffix", "url"}
    | {"names", "ids", "refs", "files", "paths", "classes", "types", "fields", "urls", "uri"}
    | {"arn", "arns", "dir", "dirs", "directory", "scope", "scopes", "algorithm", "backend"}
)
_NAME_CHARS: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-$")
#: Where a secret word may start in what a loose rule matched before its value.
_NAME_HINT = re.compile(r"(?i)pass|pwd|secret|token|api|access|auth|private|client|credential")


def secret_name(words: list[str]) -> bool:
    """Whether a name of ``words`` (:func:`name_words`) holds a secret: one of its
    words is a secret word (``password``, ``pwd``, ``pass``, ``secret``, ``token``,
    ``apikey``, ``credential``, …), or ``key`` after ``api``, ``access``, ``auth``,
    ``private``, ``secret`` or ``client``, or it is one word ending in a secret word of
    :data:`_SECRET_ENDINGS` (``PGPASSWORD``, ``GITHUBTOKEN``); and its last word does
    not make it a reference to one (:data:`_REFERENCE_WORDS`: ``name``, ``id``, ``ref``,
    ``file``, ``path``, ``arn``, ``dir``, ``scope``, ``algorithm``, ``backend``, …). So
    ``passive``, ``Association``, ``bypass`` and ``tokenizer`` are no secret words."""
    if not words or words[-1] in _REFERENCE_WORDS:
        return False
    if len(words) == 1 and words[0].endswith(_SECRET_ENDINGS):
        return True
    for i, word in enumerate(words):
        if word in _SECRET_WORDS:
            return True
        if word == "key" and i and words[i - 1] in _KEY_QUALIFIERS:
            return True
    return False


def name_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """``(start, end)`` in ``text`` of the whole name a loose match between ``start``
    and ``end`` (its value's start) was given to: the run of name characters (letters,
    digits, `_`, `.`, `-`, `$`) around the first place a secret word may start; None
    when there is none."""
    hint = _NAME_HINT.search(text, start, end)
    if hint is None:
        return None
    a, b = hint.start(), hint.end()
    while a > 0 and text[a - 1] in _NAME_CHARS:
        a -= 1
    while b < end and text[b] in _NAME_CHARS:
        b += 1
    return a, b


def judge(rule: SecretRule, text: str, start: int, vs: int, ve: int) -> str | None:
    """The kind of the value ``text[vs:ve]`` that ``rule`` matched from ``start``
    (character offsets into ``text``, 0-based, ends exclusive), or None when it is no
    secret. A certain rule's kind as it is; a loose rule's value must
    pass :func:`accepts`; an ``assigned`` value must also be given to a
    :func:`secret_name`, and a hex digest keyed by a qualified name in a data table
    (`"AWS::EC2::EIPAssociation": "<sha256>"`) is not one."""
    if not rule.loose:
        return rule.kind
    value = text[vs:ve]
    if rule.kind == "assigned":
        span = name_span(text, start, vs)
        if span is None:
            return None
        words = name_words(text[span[0] : span[1]])
        if not secret_name(words):
            return None
        if _HEX_DIGEST.fullmatch(value) and text[max(0, span[0] - 2) : span[0]] == "::":
            return None
        if not accepts(rule, value):
            return None
        return assigned_kind(words)
    return rule.kind if accepts(rule, value) else None


def assigned_kind(words: list[str]) -> str:
    """The kind of a value assigned to a name of ``words`` (:func:`name_words`):
    ``password`` (password, passwd, pwd, pass, passphrase), ``token``, ``api-key`` (a
    key not a secret's: `api_key`, `AccessKey`), else ``secret``."""
    kinds = set(words)
    if len(words) == 1:  # `PGPASSWORD` is password, `GITHUBTOKEN` token
        kinds.update(end for end in _SECRET_ENDINGS if words[0].endswith(end))
    if kinds & {"password", "passwords", "passwd", "pwd", "pass", "passphrase"}:
        return "password"
    if kinds & {"token", "tokens"}:
        return "token"
    if kinds & {"apikey", "apikeys"} or ("key" in kinds and "secret" not in kinds):
        return "api-key"
    return "secret"


@functools.cache
def scanner() -> Scanner:
    """:data:`RULES` compiled as one scanner (once a process)."""
    return compile_scanner([rule.body for rule in RULES])
