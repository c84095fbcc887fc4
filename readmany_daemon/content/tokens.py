"""Token counts: texts counted as OpenAI's ``o200k_base`` encoding counts them.

The one concept here is :func:`count`, the number of o200k_base tokens of a text taken
as ordinary text (a special-token string such as ``<|endoftext|>`` counts as the
ordinary tokens it is made of, as a client counting a tool result does). The vocabulary
comes bundled in the ``bpe-openai`` wheel (a Rust BPE; no download at run time).

Loading: the package's ``__init__`` decodes every vocabulary it bundles when imported
(about 0.6 s and 144 MB), so the compiled module ``_bindings`` beside it is loaded alone
(from its file, the package ``__init__`` never runs: 0.05-0.09 s and 69 MB) and its
``PyTokenizer.count`` is used: it counts without building a token list (about 15 MB of
text a second). When that module is missing or its API changed, the public
``bpe_openai.get_encoding("o200k_base").encode_ordinary`` is used instead (same counts,
slower). Nothing loads at import: the first :func:`count` (or :func:`warm`) loads it,
once, under a lock.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import threading
import warnings
from collections.abc import Callable
from typing import Final

from readmany_daemon.wire.messages import wire_safe

__all__ = [
    "BOUNDARY_MARGIN",
    "ENCODING",
    "Tally",
    "count",
    "count_keyed",
    "count_memo",
    "counter_kind",
    "estimate",
    "warm",
]

#: The encoding counted (the one of GPT-4o and later models).
ENCODING: Final = "o200k_base"
#: Tokens a concatenation ``a + b`` can have beyond ``count(a) + count(b)``: BPE's
#: pre-split may join or re-split the pieces around the boundary. Measured on 200,000
#: random cuts of source, Markdown and CJK text: at most 2 more (0.2 % of cuts give
#: one or two more, the others as many or fewer). A sum of part counts plus this per
#: boundary is an upper bound of the count of the whole.
BOUNDARY_MARGIN: Final = 2

#: :func:`count_memo` keeps the counts of texts up to ``MEMO_TEXT_CHARS`` characters,
#: up to ``MEMO_CHARS`` characters of them in all (then it starts over).
MEMO_TEXT_CHARS: Final = 64 << 10
MEMO_CHARS: Final = 4 << 20

_lock = threading.Lock()
_count: Callable[[str], int] | None = None
_kind = ""
_memo: dict[str, int] = {}
_memo_chars = 0


def _binding_counter() -> Callable[[str], int] | None:
    """``PyTokenizer.count`` of o200k_base from ``bpe_openai/_bindings`` loaded alone
    (without running the package ``__init__``), or None when it is not there or its
    API is not the one known (``tokenizer_for_encoding`` → an object with ``count``)."""
    spec = importlib.util.find_spec("bpe_openai")  # finds; does not import the package
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_bindings" + suffix)
            if not os.path.isfile(path):
                continue
            mod_spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
            if mod_spec is None or mod_spec.loader is None:
                return None
            try:
                module = importlib.util.module_from_spec(mod_spec)
                mod_spec.loader.exec_module(module)
                counter = module.tokenizer_for_encoding(ENCODING).count
            except (ImportError, AttributeError, TypeError, ValueError):
                return None
            if not callable(counter) or counter("hello world") != 2:
                return None
            return counter  # type: ignore[no-any-return]
    return None


def _public_counter() -> Callable[[str], int]:
    """The count through the package's public, tiktoken-like API (the fallback)."""
    with warnings.catch_warnings():
        # 0.1.4 reads its data with importlib.resources.open_binary (deprecated).
        warnings.simplefilter("ignore", DeprecationWarning)
        encoding = importlib.import_module("bpe_openai").get_encoding(ENCODING)
    encode = encoding.encode_ordinary

    def count_public(text: str) -> int:
        return len(encode(text))

    return count_public


def _load() -> Callable[[str], int]:
    global _count, _kind
    with _lock:
        if _count is None:
            fast = _binding_counter()
            if fast is not None:
                _count, _kind = fast, "binding"
            else:
                _count, _kind = _public_counter(), "public"
        return _count


def warm() -> None:
    """Load the vocabulary now (a daemon does it in the background at start, so that
    its first answer does not wait for it). Thread-safe; later calls cost nothing."""
    if _count is None:
        _load()


def counter_kind() -> str:
    """``"binding"`` (the compiled module alone) or ``"public"`` (the package's API);
    loads the vocabulary when it is not loaded yet."""
    warm()
    return _kind


def count_key(text: str) -> bytes:
    """The key under which a count of ``text`` is kept by content (``ContentCache``'s
    ``stored_count``, the daemon's counts made ahead in ``rank.ahead``): BLAKE2b of 128
    bits of its UTF-8 (lone surrogates as they are), personalized ``o200k``."""
    data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16, person=b"o200k").digest()


def count(text: str) -> int:
    """The o200k_base tokens of ``text`` as ordinary text (special-token strings are not
    special). ``""`` is 0. Loads the vocabulary on first use (see the module)."""
    if not text:
        return 0
    counter = _count if _count is not None else _load()
    try:
        return counter(text)
    except UnicodeEncodeError:
        # Lone surrogates (names that are not UTF-8): counted as they are sent, U+FFFD.
        return counter(wire_safe(text))


def count_memo(text: str) -> int:
    """:func:`count`, remembered for texts that recur from one answer to the next: the
    framing between files, the notices, a file cut where the budget ran out (a warm
    client asking the same thing again gets them all again). Bounded: texts up to
    ``MEMO_TEXT_CHARS`` characters, ``MEMO_CHARS`` in all. Thread-safe."""
    got = _memo.get(text)
    if got is not None:
        return got
    counted = count(text)
    if len(text) <= MEMO_TEXT_CHARS:
        global _memo_chars
        with _lock:
            if _memo_chars + len(text) > MEMO_CHARS:
                _memo.clear()
                _memo_chars = 0
            _memo[text] = counted
            _memo_chars += len(text)
    return counted


#: :func:`count_keyed` keeps the counts of at most this many texts by their
#: :func:`count_key` (16 bytes and an int each: ~2 MB), then starts over.
KEYED_KEPT: Final = 16_384
_keyed: dict[bytes, int] = {}


def count_keyed(text: str, key: bytes) -> int:
    """:func:`count` of ``text``, remembered by ``key`` (its :func:`count_key`, which the
    caller has made already): the same text shown for another file (a copy, a vendored
    module, the same window of it) is not counted again. Keeps only the 16-byte keys,
    at most ``KEYED_KEPT`` of them. Thread-safe."""
    got = _keyed.get(key)
    if got is not None:
        return got
    counted = count(text)
    with _lock:
        if len(_keyed) >= KEYED_KEPT:
            _keyed.clear()
        _keyed[key] = counted
    return counted


#: Tenths of a token :func:`estimate` gives a byte of UTF-8 (o200k gives the standard
#: library's ``.py`` files 0.27 token a byte; CJK text about 1 a character, 0.33 a byte;
#: base64 up to 0.7).
ESTIMATE_TENTHS_A_BYTE = 3


def estimate(text: str) -> int:
    """An estimate of :func:`count` of ``text`` without counting: 0.3 token a byte of its
    UTF-8, rounded up. No bound: calibrated on source code (+11 % on the standard
    library), under for base64-dense text. Constant time for ASCII text
    (``str.isascii`` reads a flag); another is encoded once to know its bytes."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return -(-size * ESTIMATE_TENTHS_A_BYTE // 10)


class Tally:
    """How the texts of one answer are counted: exactly (:func:`count_memo`) while the
    characters counted stay under ``exact_chars`` (each call charged at least
    ``CALL_CHARS``, the cost of a call), then by :func:`estimate`; ``exact_chars`` None:
    always exactly (an answer under a token budget: PROTOCOL §4). ``estimated`` says
    whether any text was estimated. Counting runs at about 15 MB of text a second, so
    an answer of a whole large tree (1 GB) would spend a minute counting."""

    CALL_CHARS = 64

    def __init__(self, exact_chars: int | None) -> None:
        self.left = exact_chars
        self.estimated = False

    def exact(self, text: str) -> bool:
        """Whether ``text`` is to be counted exactly (charging it when so)."""
        if self.left is None:
            return True
        if self.left <= 0:
            return False
        self.left -= max(len(text), self.CALL_CHARS)
        return True

    def __call__(self, text: str) -> int:
        """The count of ``text``: exact while the tally lasts, else its estimate."""
        if self.exact(text):
            return count_memo(text)
        self.estimated = True
        return estimate(text)
