"""The English Snowball ("Porter2") stemmer, as tantivy's ``Stemmer(English)`` applies
it to lower-cased tokens.

Stemming works on the distinct tokens of a column (a vocabulary is small next to the
number of tokens), so this is plain Python over words, cached.

Examples
--------
>>> [stem(w) for w in ["running", "dogs", "lazy", "generously", "happily"]]
['run', 'dog', 'lazi', 'generous', 'happili']
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["stem"]

_VOWELS = frozenset("aeiouy")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_LI_ENDING = frozenset("cdeghkmnrt")
_EXCEPTIONS = {"skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
               "idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli",
               "only": "onli", "singly": "singl", "sky": "sky", "news": "news", "howe": "howe",
               "atlas": "atlas", "cosmos": "cosmos", "bias": "bias", "andes": "andes"}
# words whose R1 starts after this prefix (Snowball 2's list, as tantivy's stemmer:
# measured on pylance 14, e.g. "internal" and "universal" kept whole)
_R1_PREFIXES = ("gener", "commun", "arsen", "past", "univers", "later", "emerg", "organ",
                "inter")
_AFTER_1A = frozenset(["inning", "outing", "canning", "herring", "earring", "proceed",
                       "exceed", "succeed"])
_STEP2 = {"tional": "tion", "enci": "ence", "anci": "ance", "abli": "able", "entli": "ent",
          "izer": "ize", "ization": "ize", "ational": "ate", "ation": "ate", "ator": "ate",
          "alism": "al", "aliti": "al", "alli": "al", "fulness": "ful", "ousli": "ous",
          "ousness": "ous", "iveness": "ive", "iviti": "ive", "biliti": "ble", "bli": "ble",
          "ogi": "og", "fulli": "ful", "lessli": "less", "li": ""}
_STEP3 = {"tional": "tion", "ational": "ate", "alize": "al", "icate": "ic", "iciti": "ic",
          "ical": "ic", "ful": "", "ness": "", "ative": ""}
_STEP0 = ("'s'", "'s", "'")
_STEP1A = ("sses", "ied", "ies", "s", "us", "ss")
_STEP1B = ("eed", "eedly", "ed", "edly", "ing", "ingly")
_STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent",
          "ism", "ate", "iti", "ous", "ive", "ize", "ion")


_BY_LENGTH: dict = {}


def _longest(word: str, suffixes) -> str:
    """The longest of ``suffixes`` that ``word`` ends with, or ""."""
    key = id(suffixes)
    table = _BY_LENGTH.get(key)
    if table is None:
        lens: dict = {}
        for suffix in suffixes:
            lens.setdefault(len(suffix), set()).add(suffix)
        table = _BY_LENGTH[key] = sorted(lens.items(), reverse=True)
    n = len(word)
    for length, group in table:
        if length <= n and word[n - length:] in group:
            return word[n - length:]
    return ""


def _vowel(c: str) -> bool:
    return c in _VOWELS


def _region(word: str, start: int) -> int:
    """Where the region after the first non-vowel following a vowel begins (from
    ``start``), or ``len(word)``."""
    for i in range(start + 1, len(word)):
        if not _vowel(word[i]) and _vowel(word[i - 1]):
            return i + 1
    return len(word)


def _short_syllable_end(word: str) -> bool:
    n = len(word)
    if n == 2:
        return _vowel(word[0]) and not _vowel(word[1])
    if n >= 3:
        return (not _vowel(word[-3]) and _vowel(word[-2]) and not _vowel(word[-1])
                and word[-1] not in "wxY")
    return False


def _has_vowel(s: str) -> bool:
    return any(_vowel(c) for c in s)


@lru_cache(maxsize=1 << 18)
def stem(word: str) -> str:
    """The Porter2 stem of a lower-case ``word`` (unchanged when 2 letters or less)."""
    if len(word) <= 2:
        return word
    if word in _EXCEPTIONS:
        return _EXCEPTIONS[word]
    w = word[1:] if word.startswith("'") else word
    if w.startswith("y"):
        w = "Y" + w[1:]
    w = "".join("Y" if c == "y" and i and _vowel(w[i - 1]) else c for i, c in enumerate(w))
    for pre in _R1_PREFIXES:
        if w.startswith(pre):
            r1 = len(pre)
            break
    else:
        r1 = _region(w, 0)
    r2 = _region(w, r1) if r1 < len(w) else len(w)
    # step 0
    s = _longest(w, _STEP0)
    if s:
        w = w[:-len(s)]
    # step 1a
    s = _longest(w, _STEP1A)
    if s == "sses":
        w = w[:-2]
    elif s in ("ied", "ies"):
        w = w[:-3] + ("i" if len(w) > 4 else "ie")
    elif s == "s" and _has_vowel(w[:-2]):
        w = w[:-1]
    if w in _AFTER_1A:
        return w
    # step 1b
    s = _longest(w, _STEP1B)
    if s in ("eed", "eedly"):
        if len(w) - len(s) >= r1:
            w = w[:-len(s)] + "ee"
    elif s and _has_vowel(w[:-len(s)]):
        w = w[:-len(s)]
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif w.endswith(_DOUBLES) and not (len(w) == 3 and _vowel(w[0])):
            w = w[:-1]  # (not "add", "egg", "err": a vowel and a double, as pylance)
        elif r1 >= len(w) and _short_syllable_end(w):
            w += "e"
    # step 1c
    if len(w) > 2 and w[-1] in "yY" and not _vowel(w[-2]):
        w = w[:-1] + "i"
    # step 2
    s = _longest(w, _STEP2)
    if s and len(w) - len(s) >= r1:
        if s == "ogi":
            if w[:-3].endswith("l"):
                w = w[:-3] + "og"
        elif s == "li":
            if len(w) > 2 and w[-3] in _LI_ENDING:
                w = w[:-2]
        else:
            w = w[:-len(s)] + _STEP2[s]
    # step 3
    s = _longest(w, _STEP3)
    if s and len(w) - len(s) >= r1:
        if s == "ative":
            if len(w) - len(s) >= r2:
                w = w[:-5]
        else:
            w = w[:-len(s)] + _STEP3[s]
    # step 4
    s = _longest(w, _STEP4)
    if s and len(w) - len(s) >= r2:
        if s == "ion":
            if len(w) > 3 and w[-4] in "st":
                w = w[:-3]
        else:
            w = w[:-len(s)]
    # step 5
    if w.endswith("e"):
        at = len(w) - 1
        if at >= r2 or (at >= r1 and not _short_syllable_end(w[:-1])):
            w = w[:-1]
    elif w.endswith("l") and len(w) - 1 >= r2 and w[:-1].endswith("l"):
        w = w[:-1]
    return w.replace("Y", "y")
