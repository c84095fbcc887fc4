"""Redaction hides secrets, and only secrets (issue 23 item 6): the lines real packages
hold that are ordinary code, and the real credentials that were missed, one line each.

The credentials stand apart from their names (``{v}`` in a shape), so this file shows as
it is when readmany reads it (``test_redact.py``'s scan of this repository).
"""

from __future__ import annotations

import pytest

from readmany_daemon.engine.redact import redact, sentinel

#: Ordinary code that names a secret but holds none, from Django 5.2, typescript 5.9,
#: cryptography, sympy, cfn-lint and model configurations.
ORDINARY = (
    # django/contrib/auth/forms.py: a name that refers to a field
    'password1_field_name="password1",',
    '    def validate_password_for_user(self, user, password_field_name="password2"):',
    # Django's tests: form data
    '"new_password1": "password1",',
    '"password": "1234567890",',
    '"password1": "FORBIDDEN_VALUE2",',
    '"password": "pass\\0word",',
    # a type annotation (cryptography)
    "    private_key: PKCS7PrivateKeyTypes,",
    # a destructuring (typescript.js)
    "const { contextToken: contextToken2, previousToken: previousToken2 } = getTokens(pos);",
    # sympy: "passive" holds "pass"
    "fiber_force_length_passive=FiberForceLengthPassiveDeGroote2016,",
    # cfn-lint: a content hash keyed by a resource type ("Association" holds "pass")
    '"AWS::EC2::EIPAssociation": "9a0b2c7d5e1f3a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a"',
    # a UUID
    'update_token = "5f0c3e1a-8b7d-4c2e-9a6f-1d3b5e7c9a2f"',
    # names that refer to a secret: "tokenizer" is no "token"
    '"tokenizer_class": "GPT2Tokenizer",',
    '"tokenizer_file": "models/gpt2-large/tokenizer.json",',
    "    secretName: api-shop-tls-2024",
    'LLM_SECRET_NAME = "NEXUS-GPT4-API-KEY"',
    'TOKEN_PREFIX = "tok9Xq2Lm8Zw7Kp3"',
    # a template's holes
    "f'GITHUB_TOKEN = \"{github[0]}\"\\n'",
)


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_code_is_not_redacted(line: str) -> None:
    text = f"before\n{line}\nafter\n"
    out = redact(text)
    assert out.lines == ()
    assert out.text is text


#: Real credentials as they are written (``{v}``: the value hidden) and their kind. The
#: values stand apart from their names here, so this file holds no secret as written.
SECRETS = (
    # what Django's startproject writes: punctuation in a value assigned to a secret name
    (
        "SECRET_KEY = '{v}'",
        "django-insecure-a%b)h8k8r^e0xknkr5@@@8#be3^^&4r0pdvqh*f*0xktfo@$l_",
        "secret",
    ),
    # the password of a URL without a user
    ('CACHE_URL = "redis://:{v}@cache:6379/0"', "pdJHmq3RAuq16CGDDp", "password"),
    # an Authorization header's credential
    ("Authorization: Basic {v}", "YWRtaW46Nm9uVWNNVUUzUWE0SXJwdQ==", "authorization"),
    (
        "curl -H 'Authorization: Bearer {v}' https://api.example.org/",
        "7fQ2xLk9Pm4Zt8Rw3Nv6Hs1J",
        "authorization",
    ),
    ('headers = {{"Authorization": "Bearer {v}"}}', "k3Jd9Qp2Lx7Vm5Rz8Tn1", "authorization"),
    # a secret name, a value with punctuation (judged by randomness, not its characters)
    ('DB_PASSWORD = "{v}"', "Xk9#mP2$vL7q(R4)nT8w", "password"),
)


@pytest.mark.parametrize(("shape", "value", "kind"), SECRETS)
def test_real_credentials_are_redacted(shape: str, value: str, kind: str) -> None:
    text = "before\n" + shape.format(v=value) + "\nafter\n"
    out = redact(text)
    assert out.text == "before\n" + shape.format(v=sentinel(kind, value)) + "\nafter\n"
    assert out.lines == ((2, kind),)


@pytest.mark.parametrize(
    "line",
    [
        # a placeholder credential: base64 of "username:password"
        "Authorization: Basic dXNlcm5hbWU6cGFzc3dvcmQ=",
        "Authorization: Bearer <your-token>",
        "Authorization: Bearer ${API_TOKEN}",
        "redis://:password@cache:6379/0",
    ],
)
def test_placeholder_credentials_are_kept(line: str) -> None:
    assert redact(line + "\n").lines == ()


@pytest.mark.parametrize("marker", ["readmany:allow", "gitleaks:allow"])
def test_a_line_marked_allowed_is_shown_as_it_is(marker: str) -> None:
    token = "ghp_" + "k3Jd9" * 8  # built here: a provider format, certain
    value = "a8Kq2Lm9" + "Zx7Pw3Rt5Nv1"
    text = f"API_TOKEN = '{value}'  # {marker}\nGITHUB = '{token}'  # {marker}\nOTHER = '{token}'\n"
    out = redact(text)
    assert out.lines == ((3, "github-token"),)
    assert out.text.split("\n")[:2] == text.split("\n")[:2]


def test_the_marker_allows_its_own_line_only() -> None:
    """A marker on a private key's END line does not show the key's body."""
    body = ["MIIEowIBAAKCAQEA" + "q7Xk" * 12, "Zx9Lm2Pw" * 8]
    end = "-----END RSA PRIVATE KEY----- readmany:allow"
    text = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *body, end, ""])
    out = redact(text)
    assert [line for line, _ in out.lines] == [2, 3]
    assert out.text.split("\n")[3] == end


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password1_field_name", False),
        ("passive", False),
        ("EIPAssociation", False),
        ("PassedToService", False),
        ("tokenizer", False),
        ("secretName", False),
        ("LLM_SECRET_NAME", False),
        ("tokenizer_file", False),
        ("TOKEN_PREFIX", False),
        ("password", True),
        ("DB_PASS", True),
        ("apiKey", True),
        ("APIKey", True),
        ("client_secret", True),
        ("AccessKey", True),
        ("access_key_id", False),
        ("contextToken2", True),
    ],
)
def test_a_name_matches_by_its_words(name: str, secret: bool) -> None:
    from readmany_daemon.rules.secrets import name_words, secret_name

    assert secret_name(name_words(name)) is secret


def test_offsets_are_characters_in_any_text() -> None:
    """The scanner matches UTF-8 bytes; what it hides is counted in characters."""
    token = "ghp_" + "k3Jd9" * 8
    value = "Xk9#mP2$vL7q" + "(R4)nT8w"
    text = f"# é 𝄞 ü\nT = '{token}'  # ß\nDB_PASSWORD = \"{value}\" 𝄞 \udcff\n"
    out = redact(text)
    expected = text.replace(token, sentinel("github-token", token)).replace(
        value, sentinel("password", value)
    )
    assert out.text == expected
    assert out.lines == ((2, "github-token"), (3, "password"))


def _key_body() -> list[str]:
    """Three lines of a private key's body, built here (so this file holds no key)."""
    return ["MIIEowIBAAKCAQEA" + "u1SU" * 12, "VTLw7onL" * 8, "LRoXGvxj" * 8]


@pytest.mark.parametrize(
    ("marker", "hidden"),
    [
        ("  # gitleaks:allow", [2, 4]),
        ("  // readmany:allow", [2, 4]),
        ("\n# gitleaks:allow", [2, 3, 5]),  # a marker on a line of its own
    ],
)
def test_a_marker_in_a_key_body_shows_that_line_only(marker: str, hidden: list[int]) -> None:
    """An allow marker on one line of a private key's body (after a line of it, or on a
    line of its own) does not show the lines after it: only the marked line is shown,
    the rest of the block stays hidden."""
    body = _key_body()
    begin, end = "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----"
    text = "\n".join([begin, body[0], body[1] + marker, body[2], end, ""])
    out = redact(text)
    shown = out.text.split("\n")
    assert [line for line, _ in out.lines] == hidden
    assert all(shown[n - 1].startswith("«redacted:private-key:") for n in hidden)
    assert [n for n, line in enumerate(shown, 1) if line.endswith(marker.strip())] == [
        n for n, line in enumerate(text.split("\n"), 1) if line.endswith(marker.strip())
    ]
    assert body[0] not in out.text and body[2] not in out.text
    assert shown[-2] == end


def test_a_marker_on_a_key_begin_line_shows_that_line_only() -> None:
    body = _key_body()
    begin = "-----BEGIN RSA PRIVATE KEY----- # gitleaks:allow"
    text = "\n".join([begin, *body, "-----END RSA PRIVATE KEY-----", ""])
    out = redact(text)
    assert [line for line, _ in out.lines] == [2, 3, 4]
    assert out.text.split("\n")[0] == begin


#: Settings that name a secret but hold none: a path, a scope, an algorithm, a backend,
#: an ARN (a reference to a secret, not its value), in YAML and JSON.
ORDINARY_SETTINGS = (
    'token_cache_dir = "~/.cache/hf/tokens_v2"',
    "token_cache_dir: ~/.cache/hf/tokens_v2",
    'token_scope: "repo,read:org,workflow2"',
    'git_token_scope = "repo,read:org,workflow2"',
    "passwordAlgorithm: pbkdf2_sha256",
    "secretBackend: vault-kv-v2",
    '"secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf",',
    "secret_arn: arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf",
    # words that end in a secret word's letters, or hold them, are no secret words
    'tokenizer = "gpt2-tok9Xq2Lm8Zw7Kp3"',
    'bypass = "Nq7vLk2mZp9x"',
    'compass = "Nq7vLk2mZp9x"',
    'passive = "Nq7vLk2mZp9x"',
)


@pytest.mark.parametrize("line", ORDINARY_SETTINGS)
def test_settings_about_a_secret_are_not_redacted(line: str) -> None:
    text = f"before\n{line}\nafter\n"
    out = redact(text)
    assert out.lines == ()
    assert out.text is text


#: Credentials as compose files, shells and HTTP clients write them (``{v}``: the value).
MORE_SECRETS = (
    ('      - "POSTGRES_PASSWORD={v}"', "Nq7vLk2mZp9x", "password"),
    ("      - 'POSTGRES_PASSWORD={v}'", "Nq7vLk2mZp9x", "password"),
    ('      - "API_TOKEN={v}"', "Nq7vLk2mZp9xLm4W", "token"),
    ('environment: ["REDIS_PASSWORD={v}"]', "s9Kd82jLmQxW", "password"),
    ('environment: ["REDIS_PASSWORD={v}", "DEBUG=1"]', "s9Kd82jLmQxW", "password"),
    ("      PGPASSWORD: {v}", "Nq7vLk2mZp9x", "password"),
    ("PGPASSWORD={v} psql -h db -U app", "Nq7vLk2mZp9x", "password"),
    ("GITHUBTOKEN={v}", "Nq7vLk2mZp9xLm4W", "token"),
    ("Authorization: Token {v}", "9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6", "authorization"),
    (
        "headers = {{'Authorization': 'Token {v}'}}",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6",
        "authorization",
    ),
)


@pytest.mark.parametrize(("shape", "value", "kind"), MORE_SECRETS)
def test_compose_shell_and_header_credentials_are_redacted(
    shape: str, value: str, kind: str
) -> None:
    text = "before\n" + shape.format(v=value) + "\nafter\n"
    out = redact(text)
    assert out.text == "before\n" + shape.format(v=sentinel(kind, value)) + "\nafter\n"
    assert out.lines == ((2, kind),)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("PGPASSWORD", True),
        ("dbpasswd", True),
        ("clientsecret", True),
        ("GITHUBTOKEN", True),
        ("bypass", False),
        ("compass", False),
        ("tokenizer", False),
        ("passive", False),
        ("token_cache_dir", False),
        ("token_scope", False),
        ("passwordAlgorithm", False),
        ("secretBackend", False),
        ("secret_arn", False),
    ],
)
def test_a_secret_word_ends_a_single_word_name(name: str, secret: bool) -> None:
    from readmany_daemon.rules.secrets import name_words, secret_name

    assert secret_name(name_words(name)) is secret


def test_a_marker_on_a_key_end_line_hides_nothing_after_the_block() -> None:
    body = _key_body()
    end = "-----END RSA PRIVATE KEY----- # readmany:allow"
    text = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *body, end, "Ordinary", "words", ""])
    out = redact(text)
    assert [line for line, _ in out.lines] == [2, 3, 4]
    assert out.text.split("\n")[4:] == [end, "Ordinary", "words", ""]
