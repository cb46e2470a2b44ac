"""The ``jieba/<name>`` base tokenizer: dictionary-driven Chinese word segmentation, as
pylance's INVERTED index runs it (jieba in search mode).

A model is a folder ``$LANCE_LANGUAGE_MODEL_HOME/jieba/<name>`` (default home:
``~/.local/share/lance/language_models``) holding a main dictionary (``dict.txt``, or
the ``main`` entry of an optional ``config.json``) and the user dictionaries that
``config.json`` lists under ``users``; paths are relative to the folder. A dictionary
line is ``word [frequency [tag]]`` (frequency 0 when absent); a later entry of a word
replaces its frequency.

Segmentation of a text:

1. The text is cut into blocks: runs of CJK ideographs, ASCII letters, digits and
   ``+#&._%-`` are segmented; every other character is a token of its own (each
   whitespace character too).
2. In a block, every dictionary word starting at each character is an edge of a graph
   over character positions; the segmentation is the path of greatest total
   log-probability, a word scoring ``log(freq / total)`` (``log(1 / total)`` for a
   character that starts no dictionary word; a tie goes to the longer word).
3. Consecutive one-character steps are gathered; a gathered run that is itself a
   dictionary word is emitted character by character. A run of two or more characters
   that is not in the dictionary is where pylance's jieba applies its built-in hidden
   Markov model of unknown words; lancenb has no such model and emits the characters
   one by one (the one place the two segmenters can differ: documented in
   docs/parity.md).
4. Search mode adds, before each word longer than two characters, its two-character
   substrings that are dictionary words, and before a word longer than three its
   three-character ones; each token's position is the index of its first character.

Examples
--------
>>> m = JiebaModel({"我们": 98740, "都": 202780, "有": 423765, "光明": 1219})
>>> [w for w, _ in m.search_tokens("我们有光明")]
['我们', '有', '光明']
"""

from __future__ import annotations

import json
import math
import os
import re

from lancenb.errors import InvalidInputError, LanceIOError
from lancenb.io.pools import module_lock

__all__ = ["JiebaModel", "load_model", "model_folder"]

# the characters a segmented block is made of (CJK ideographs of the basic plane and
# its extensions, ASCII letters and digits, and a few joiners)
_BLOCK = re.compile(
    "([\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\U00020000-\U0002A6DF\U0002A700-\U0002B73F"
    "\U0002B740-\U0002B81F\U0002B820-\U0002CEAF\U0002CEB0-\U0002EBEF\U0002F800-\U0002FA1F"
    "a-zA-Z0-9+#&._%\\-]+)")

# inside an unknown run: ideographs, and letters/digits (with a decimal part and a %)
_HAN = re.compile("[\u4E00-\u9FD5]+")
_ALNUM = re.compile(r"[a-zA-Z0-9]+(?:.\d+)?%?")


def _split_other(text: str, out: list[str]) -> None:
    """Non-ideograph text of an unknown run: letter/digit words and what lies between
    them, each as one token."""
    pos = 0
    for m in _ALNUM.finditer(text):
        if m.start() > pos:
            out.append(text[pos:m.start()])
        out.append(m.group(0))
        pos = m.end()
    if pos < len(text):
        out.append(text[pos:])


class JiebaModel:
    """A jieba dictionary: word frequencies and the longest word's length."""

    def __init__(self, freq: dict[str, int]):
        self.freq = dict(freq)
        self.total = sum(self.freq.values())
        self.longest = max((len(w) for w in self.freq), default=1)
        self._log_total = math.log(self.total) if self.total > 0 else 0.0

    def _route(self, block: str) -> list[int]:
        """For each start position, the end of the word the best path takes."""
        n = len(block)
        score = [0.0] * (n + 1)
        nxt = [0] * (n + 1)
        freq, lt = self.freq, self._log_total
        for i in range(n - 1, -1, -1):
            best, best_end, found = -math.inf, i + 1, False
            for j in range(i + 1, min(n, i + self.longest) + 1):
                f = freq.get(block[i:j])
                if f is None:
                    continue
                # a word of frequency 0 can never win; on a tie the longer word wins
                s = (math.log(f) if f > 0 else -math.inf) - lt + score[j]
                if not found or s >= best:
                    best, best_end, found = s, j, True
            if not found:
                best = -lt + score[i + 1]
            score[i], nxt[i] = best, best_end
        return nxt

    def _cut_block(self, block: str, out: list[str]) -> None:
        nxt = self._route(block)
        i, run_start, n = 0, -1, len(block)
        while i < n:
            j = nxt[i]
            if j - i == 1:
                if run_start < 0:
                    run_start = i
            else:
                if run_start >= 0:
                    self._flush(block[run_start:i], out)
                    run_start = -1
                out.append(block[i:j])
            i = j
        if run_start >= 0:
            self._flush(block[run_start:], out)

    def _flush(self, run: str, out: list[str]) -> None:
        """Emit a run of one-character steps (step 3 of the module docstring)."""
        if len(run) == 1 or run in self.freq:
            out.extend(run)
            return
        # an unknown run: ideograph stretches would go through pylance's hidden Markov
        # model (lancenb: one token per character); letters and digits stay together
        pos = 0
        for m in _HAN.finditer(run):
            _split_other(run[pos:m.start()], out)
            out.extend(m.group(0))
            pos = m.end()
        _split_other(run[pos:], out)

    def cut(self, text: str) -> list[str]:
        """The words of ``text`` in order (the base segmentation, before search mode)."""
        out: list[str] = []
        pos = 0
        for m in _BLOCK.finditer(text):
            out.extend(text[pos:m.start()])
            self._cut_block(m.group(0), out)
            pos = m.end()
        out.extend(text[pos:])
        return out

    def search_tokens(self, text: str) -> list[tuple[str, int]]:
        """``(token, position)`` of ``text`` in search mode (see the module docstring)."""
        toks: list[tuple[str, int]] = []
        start = 0
        freq = self.freq
        for w in self.cut(text):
            width = len(w)
            if width > 2:
                toks.extend((w[i:i + 2], start + i) for i in range(width - 1)
                            if w[i:i + 2] in freq)
                if width > 3:
                    toks.extend((w[i:i + 3], start + i) for i in range(width - 2)
                                if w[i:i + 3] in freq)
            toks.append((w, start))
            start += width
        return toks


def model_folder(base: str) -> str:
    """The folder of the model ``jieba/<name>`` (``jieba`` alone is ``jieba/default``)."""
    name = base.split("/", 1)[1] if "/" in base else "default"
    home = os.environ.get("LANCE_LANGUAGE_MODEL_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share", "lance", "language_models")
    return os.path.join(home, "jieba", name)


def _read_dict(path: str, freq: dict[str, int]) -> None:
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise LanceIOError(f"jieba dictionary {path}: {e.strerror or e}") from e
    with f:
        for no, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            count = 0
            if len(parts) > 1:
                if not parts[1].isdigit():
                    raise InvalidInputError(f"jieba dictionary {path}, line {no}: frequency "
                                            f"{parts[1]!r} is not a whole number")
                count = int(parts[1])
            freq[parts[0]] = count


_CACHE: dict[tuple, JiebaModel] = {}
_LOCK = module_lock(globals(), "_LOCK")  # (replaced in a forked child)


def load_model(base: str) -> JiebaModel:
    """The model ``base`` names (``jieba/<name>``), read once per process and kept while
    its files are unchanged. A missing folder is an :class:`InvalidInputError`, a
    missing dictionary a :class:`LanceIOError` (an OSError), as pylance's."""
    folder = model_folder(base)
    if not os.path.isdir(folder):
        raise InvalidInputError(f"base tokenizer {base}: {folder} is not a valid directory")
    cfg: dict = {}
    config = os.path.join(folder, "config.json")
    if os.path.isfile(config):
        try:
            with open(config, encoding="utf-8") as f:
                cfg = json.load(f)
        except ValueError as e:
            raise InvalidInputError(f"base tokenizer {base}: {config}: {e}") from e
    paths = [os.path.join(folder, cfg.get("main") or "dict.txt")]
    paths += [os.path.join(folder, p) for p in cfg.get("users") or ()]
    stamp = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError as e:
            raise LanceIOError(f"base tokenizer {base}: dictionary {p}: "
                               f"{e.strerror or e}") from e
        stamp.append((p, st.st_mtime_ns, st.st_size))
    key = tuple(stamp)
    with _LOCK:
        got = _CACHE.get(key)
    if got is not None:
        return got
    freq: dict[str, int] = {}
    for p in paths:
        _read_dict(p, freq)
    model = JiebaModel(freq)
    with _LOCK:
        _CACHE[key] = model
    return model
