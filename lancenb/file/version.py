"""File format versions and the strings users name them by."""

from __future__ import annotations

import enum

from lancenb.errors import InvalidInputError, NotSupportedError

__all__ = ["FileVersion", "version_from_footer"]


class FileVersion(enum.Enum):
    """A Lance file format version: ``(name, footer major, footer minor)``."""

    LEGACY = ("0.1", 0, 2)
    V2_0 = ("2.0", 0, 3)
    V2_1 = ("2.1", 2, 1)
    V2_2 = ("2.2", 2, 2)

    @property
    def label(self) -> str:
        return self.value[0]

    @property
    def footer(self) -> tuple[int, int]:
        return self.value[1], self.value[2]

    @classmethod
    def resolve(cls, name: "str | FileVersion | None") -> "FileVersion":
        """Resolve a user's version string.

        ``None`` means lancenb's default for writing (2.1: the newest version whose
        every page lancenb can write). ``stable``/``next`` name what they name in
        pylance 14 (2.2 and 2.3); lancenb does not write those yet and says so.
        """
        if isinstance(name, FileVersion):
            return name
        if name is None:
            return cls.V2_1
        key = str(name).strip().lower()
        aliases = {"legacy": cls.LEGACY, "0.1": cls.LEGACY, "2.0": cls.V2_0,
                   "2.1": cls.V2_1, "2.2": cls.V2_2, "stable": cls.V2_2}
        if key in aliases:
            return aliases[key]
        if key in ("next", "2.3"):
            raise NotSupportedError(f"file version {name!r} (2.3) is not supported by lancenb")
        raise InvalidInputError(
            f"unknown file version {name!r}; expected one of legacy, 0.1, 2.0, 2.1, 2.2, stable")


def version_from_footer(major: int, minor: int, path: str = "") -> FileVersion:
    """Map the footer's version numbers to a :class:`FileVersion`."""
    if major == 0 and minor in (0, 1, 2):
        return FileVersion.LEGACY
    if (major, minor) in ((0, 3), (2, 0)):
        return FileVersion.V2_0
    if (major, minor) == (2, 1):
        return FileVersion.V2_1
    if (major, minor) == (2, 2):
        return FileVersion.V2_2
    raise NotSupportedError(
        f"file {path!r} has format version {major}.{minor}, which lancenb cannot read "
        f"(it reads 2.1 and 2.2)")
