"""File format versions and the strings users name them by.

Version strings resolve as pylance 14 resolves ``data_storage_version``: case does
not matter, nothing else is forgiven (``" 2.1"`` and ``"v2.1"`` are errors).

- ``legacy``/``0.1``: 0.1, footer (0, 2) (lancenb also reads (0, 0) and (0, 1));
  written for datasets of 0.1 files, as pylance 14 does.
- ``2.0``: footer (0, 3), but (2, 0) in a dataset's DataFile entries.
- ``2.1``: (2, 1).
- ``2.2``/``stable``: (2, 2); the default for writing, as in pylance 14 (new datasets
  and ``LanceFileWriter``).
- ``2.3``/``next``: unstable in pylance 14; lancenb raises NotSupportedError.
"""

from __future__ import annotations

import enum

from lancenb.errors import InvalidInputError, NotSupportedError

__all__ = ["FileVersion", "version_from_footer", "DEFAULT_WRITE_VERSION"]


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
        """The version numbers in the file's footer."""
        return self.value[1], self.value[2]

    @property
    def data_file(self) -> tuple[int, int]:
        """The version numbers a dataset manifest records for a data file
        (``DataFile.file_major_version``/``file_minor_version``): 2.0 files say (0, 3)
        in their footer but (2, 0) in the manifest."""
        if self is FileVersion.V2_0:
            return 2, 0
        return self.footer

    @property
    def writable(self) -> bool:
        """Whether lancenb writes files of this version (all: 0.1 with the types
        :mod:`lancenb.file.formats.v0_1_write` lists)."""
        return True

    @classmethod
    def resolve(cls, name: "str | FileVersion | None") -> "FileVersion":
        """Resolve a user's version string (see the module docstring).

        ``None`` means the default for writing, 2.2 (pylance 14's).
        """
        if isinstance(name, FileVersion):
            return name
        if name is None:
            return DEFAULT_WRITE_VERSION
        if not isinstance(name, str):
            raise InvalidInputError(f"a file version must be a string, not {type(name).__name__}")
        key = name.lower()
        if key in _ALIASES:
            return _ALIASES[key]
        if key in ("next", "2.3"):
            raise NotSupportedError(
                f"file version {name!r} (2.3, unstable in pylance 14) is not supported by "
                f"lancenb; it reads and writes 2.0, 2.1 and 2.2 and reads 0.1")
        raise InvalidInputError(
            f"unknown file version {name!r}; expected one of {', '.join(_NAMES)}")

    @classmethod
    def for_data_file(cls, major: int, minor: int, where: str = "") -> "FileVersion":
        """The version of a dataset's data file from the manifest's numbers."""
        if (major, minor) == (2, 0):
            return cls.V2_0
        return version_from_footer(major, minor, where)


_ALIASES = {"legacy": FileVersion.LEGACY, "0.1": FileVersion.LEGACY,
            "2.0": FileVersion.V2_0, "2.1": FileVersion.V2_1, "2.2": FileVersion.V2_2,
            "stable": FileVersion.V2_2}
_NAMES = ("legacy", "0.1", "2.0", "2.1", "2.2", "stable")
DEFAULT_WRITE_VERSION = FileVersion.V2_2  # pylance 14 writes 2.2 unless told otherwise


def version_from_footer(major: int, minor: int, path: str = "") -> FileVersion:
    """Map the footer's version numbers to a :class:`FileVersion`.

    An unknown pair raises :class:`NotSupportedError` naming both numbers."""
    if major == 0 and minor in (0, 1, 2):
        return FileVersion.LEGACY
    if (major, minor) in ((0, 3), (2, 0)):
        return FileVersion.V2_0
    if (major, minor) == (2, 1):
        return FileVersion.V2_1
    if (major, minor) == (2, 2):
        return FileVersion.V2_2
    where = f"file {path!r} has" if path else "found"
    raise NotSupportedError(
        f"{where} Lance format version {major}.{minor}, which lancenb cannot read "
        f"(it reads 0.0-0.2 (legacy), 0.3/2.0, 2.1 and 2.2)")
