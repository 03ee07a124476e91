"""Reading untrusted archives (zip, tar.gz) within limits, before anything they say is believed.

- the zip's end records (entry count, central directory size) are read before :mod:`zipfile` builds its listing;
- the tar.gz is read through a byte budget on its decompressed stream, and its extended headers (GNU long names,
  PAX records), which :mod:`tarfile` reads whole before anything sees them, are capped in size and in number;
- every member must be a file or folder with a plain relative name that Linux can create (no ``..``, no component
  over 255 bytes, no path over :data:`MAX_PATH_BYTES`), no two members may be the same file after normalising the
  path (the upload would check one copy and the worker run the other), and no file may stand where another member
  needs a folder;
- at most ``max_files`` files and as many folder entries, at most ``max_unpacked_bytes`` in total;
- files are read in bounded pieces at their declared sizes (zip CRCs checked).

What makes an archive a bundle (``policy.py`` and its checks, storage, unpacking) is :mod:`layersched.server.bundles`.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, TYPE_CHECKING, Literal

from layersched.server.errors import InvalidBundle

if TYPE_CHECKING:
    from typing_extensions import Self

ArchiveFormat = Literal["zip", "tar.gz"]

# Linux's NAME_MAX (ext4, tmpfs, overlayfs). The whole path must also fit PATH_MAX (4096) once the worker's and the
# sandbox's folders are put in front of it; 1024 bytes leaves them room and is far more than any policy needs.
MAX_COMPONENT_BYTES = 255
MAX_PATH_BYTES = 1024
# A PAX header carries a path (at most MAX_PATH_BYTES here), times, ids and the odd extended attribute; a GNU long
# name or link just a path. 64 KiB is many times what a real one holds and small enough to read into memory.
MAX_EXTENDED_HEADER_BYTES = 64 * 1024
# Before one member: a PAX global header, a PAX header, a GNU long name and a GNU long link. tarfile reads each
# chain by recursion, so an unbounded one would end in RecursionError rather than a refusal.
MAX_EXTENDED_IN_A_ROW = 4
# zip's fixed central directory entry (46 bytes), its name, and room for extra fields and a comment.
_MAX_CENTRAL_ENTRY_BYTES = 46 + MAX_PATH_BYTES + 1024
_ZIP_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
_OTHER_ZIP_METHODS = {9: "deflate64", zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "lzma", 93: "zstandard"}


@dataclass(frozen=True)
class Limits:
    """How much an archive may hold."""

    max_files: int
    max_unpacked_bytes: int

    @property
    def max_entries(self) -> int:
        """Files and folder entries together: a folder entry per file is more than any real tree has."""
        return 2 * self.max_files

    @property
    def tar_stream_bytes(self) -> int:
        """The most a tar stream within the limits decompresses to: the files' data, then per entry a header, the
        padding of its data and one extended header, then the end blocks and the padding of the last record."""
        per_entry = 2 * tarfile.BLOCKSIZE + MAX_EXTENDED_HEADER_BYTES
        return self.max_unpacked_bytes + self.max_entries * per_entry + tarfile.RECORDSIZE


@dataclass(frozen=True)
class Member:
    name: str
    kind: Literal["file", "dir", "link", "special"]
    size: int


# ------------------------------------------------------------------------------------------------------------ zip

# The end of central directory record, the ZIP64 locator and the ZIP64 record (APPNOTE 4.3.14-16).
_EOCD, _EOCD_SIGNATURE = struct.Struct("<4s4H2LH"), b"PK\x05\x06"
_ZIP64_LOCATOR, _ZIP64_LOCATOR_SIGNATURE = struct.Struct("<4sLQL"), b"PK\x06\x07"
_ZIP64_EOCD, _ZIP64_EOCD_SIGNATURE = struct.Struct("<4sQ2H2L4Q"), b"PK\x06\x06"


def _zip_end_records(data: bytes) -> list[tuple[int, int]]:
    """(entries, central directory bytes) as every end record zipfile might use declares them.

    zipfile takes the end record from the last 22 bytes if it has no comment, else the last signature within the
    64 KiB a comment may span; with a ZIP64 locator in front, the ZIP64 record before it (Python 3.11) or where the
    locator points (later versions). All of these candidates are checked, so no version of zipfile reads more.
    """
    ends = set()
    if data[-_EOCD.size : -_EOCD.size + 4] == _EOCD_SIGNATURE and data[-2:] == b"\0\0":
        ends.add(len(data) - _EOCD.size)
    last = data.rfind(_EOCD_SIGNATURE, max(len(data) - (1 << 16) - _EOCD.size, 0))
    if 0 <= last <= len(data) - _EOCD.size:
        ends.add(last)
    declared = []
    for end in ends:
        fields = _EOCD.unpack_from(data, end)
        zip64 = _zip64_end_records(data, end)
        declared += zip64
        if not zip64 or (fields[4], fields[5]) != (0xFFFF, 0xFFFFFFFF):  # all ones: "see the ZIP64 record"
            declared.append((max(fields[3], fields[4]), fields[5]))
    return declared


def _zip64_end_records(data: bytes, end: int) -> list[tuple[int, int]]:
    locator = end - _ZIP64_LOCATOR.size
    if locator < 0 or data[locator : locator + 4] != _ZIP64_LOCATOR_SIGNATURE:
        return []
    declared = []
    pointed = _ZIP64_LOCATOR.unpack_from(data, locator)[2]
    for record in {locator - _ZIP64_EOCD.size, pointed}:
        if 0 <= record <= len(data) - _ZIP64_EOCD.size and data[record : record + 4] == _ZIP64_EOCD_SIGNATURE:
            fields = _ZIP64_EOCD.unpack_from(data, record)
            declared.append((max(fields[6], fields[7]), fields[8]))
    return declared


def _open_zip(data: bytes, limits: Limits) -> zipfile.ZipFile:
    """The archive, opened only once its end records promise a listing within the limits.

    zipfile parses the whole central directory when it opens (a 45 MB one of 900,000 entries took 600 MB and
    10 s before the file count could be checked); its size and entry count are in the end record, read here first.
    """
    declared = _zip_end_records(data)
    if not declared:
        raise InvalidBundle("the zip archive cannot be read: File is not a zip file")
    entries, size = max(e for e, _ in declared), max(s for _, s in declared)
    if entries > limits.max_entries:
        raise InvalidBundle(
            f"the zip archive declares {entries} entries; bundles may hold at most {limits.max_files} files "
            f"and {limits.max_files} folders"
        )
    most_bytes = limits.max_entries * _MAX_CENTRAL_ENTRY_BYTES
    if size > most_bytes:
        raise InvalidBundle(
            f"the zip archive's central directory is {size} bytes, more than {most_bytes} for "
            f"{limits.max_entries} entries"
        )
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise InvalidBundle(f"the zip archive cannot be read: {exc}") from exc


def _zip_members(data: bytes, limits: Limits) -> list[Member]:
    with _open_zip(data, limits) as archive:
        infos = archive.infolist()
    members = []
    for info in infos:
        if info.compress_type not in _ZIP_METHODS:
            # bzip2 and lzma decompress a whole read at once, whatever the member's size says: a 576-byte member
            # took 1 GB. Zip tools write deflate; the CLI writes tar.gz.
            method = _OTHER_ZIP_METHODS.get(info.compress_type, "unknown")
            raise InvalidBundle(
                f"archive member {info.filename!r} is compressed with method {info.compress_type} ({method}); "
                "bundles may use only stored or deflate"
            )
        if info.flag_bits & 0x1:
            raise InvalidBundle(f"archive member {info.filename!r} is encrypted")
        mode = info.external_attr >> 16
        kind: Literal["file", "dir", "link", "special"]
        if stat.S_ISLNK(mode):
            kind = "link"
        elif info.is_dir():
            kind = "dir"
        elif stat.S_IFMT(mode) in (0, stat.S_IFREG):
            kind = "file"
        else:
            kind = "special"
        members.append(Member(info.filename, kind, info.file_size))
    return members


# ------------------------------------------------------------------------------------------------------------ tar

_EXTENDED_HEADERS = {
    tarfile.GNUTYPE_LONGNAME: "GNU long name",
    tarfile.GNUTYPE_LONGLINK: "GNU long link name",
    tarfile.XHDTYPE: "PAX header",
    tarfile.XGLTYPE: "PAX global header",
    tarfile.SOLARIS_XHDTYPE: "Solaris extended header",
}


class _BudgetedStream:
    """The decompressed tar stream, refused as soon as a read or a seek would pass ``budget`` bytes.

    tarfile seeks over member data and reads extended headers whole; below it, gzip decompresses whatever it is
    asked for. The budget is what an archive within the limits can decompress to, so any stream that would cost
    more is refused at that point, whatever tarfile happens to be reading.
    """

    def __init__(self, raw: IO[bytes], budget: int) -> None:
        self._raw, self._budget = raw, budget

    def _refuse(self) -> InvalidBundle:
        return InvalidBundle(f"the tar.gz archive decompresses to more than {self._budget} bytes")

    def read(self, size: int | None = -1) -> bytes:
        allowed = self._budget - self._raw.tell()
        data = self._raw.read(allowed + 1 if size is None or size < 0 else min(size, allowed + 1))
        if len(data) > allowed:
            raise self._refuse()
        return data

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence not in (io.SEEK_SET, io.SEEK_CUR):  # tarfile never seeks from the end of a stream
            raise ValueError(f"a tar stream is not seeked with whence={whence}")
        target = offset if whence == io.SEEK_SET else self._raw.tell() + offset
        if not 0 <= target <= self._budget:
            raise self._refuse()
        return self._raw.seek(target)

    def tell(self) -> int:
        return self._raw.tell()


class _CappedTarInfo(tarfile.TarInfo):
    """A header whose extended headers are capped before tarfile reads them whole into memory.

    ``frombuf`` and ``fromtarfile`` are tarfile's documented hooks: the first sees each raw header (the extended
    header's size is known before its data is read), the second is called again, from inside tarfile, for the
    header after each extended one, so its nesting counts the extended headers in a row.
    """

    @classmethod
    def frombuf(cls, buf: bytes | bytearray, encoding: str, errors: str) -> Self:
        info = super().frombuf(buf, encoding, errors)
        kind = _EXTENDED_HEADERS.get(info.type)
        if kind is not None and info.size > MAX_EXTENDED_HEADER_BYTES:
            raise InvalidBundle(
                f"the archive has a {kind} of {info.size} bytes; at most {MAX_EXTENDED_HEADER_BYTES} are allowed"
            )
        return info

    @classmethod
    def fromtarfile(cls, archive: tarfile.TarFile) -> Self:
        if not isinstance(archive, _CheckedTarFile):  # pragma: no cover - only _CheckedTarFile uses this class
            raise TypeError(f"{cls.__name__} reads only a _CheckedTarFile, got {type(archive).__name__}")
        archive.nesting += 1
        try:
            if archive.nesting > MAX_EXTENDED_IN_A_ROW + 1:
                raise InvalidBundle(f"the archive has more than {MAX_EXTENDED_IN_A_ROW} extended headers in a row")
            return super().fromtarfile(archive)
        finally:
            archive.nesting -= 1


class _CheckedTarFile(tarfile.TarFile):
    tarinfo = _CappedTarInfo
    nesting = 0  # extended headers being read in a row, plus one for the header after them


_TAR_ERRORS = (tarfile.TarError, OSError, EOFError, zlib.error)


@contextmanager
def _open_tar(data: bytes, limits: Limits) -> Iterator[_CheckedTarFile]:
    with (
        gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb") as raw,
        _CheckedTarFile(fileobj=_BudgetedStream(raw, limits.tar_stream_bytes), mode="r") as archive,  # type: ignore[arg-type]
    ):
        yield archive


def _tar_members(data: bytes, limits: Limits) -> Iterator[Member]:
    """The members one header at a time, so the checks stop the walk at the first refusal (a bomb is refused as
    soon as its declared sizes pass the limit, not after a full listing)."""
    try:
        with _open_tar(data, limits) as archive:
            while (info := archive.next()) is not None:
                kind: Literal["file", "dir", "link", "special"]
                if info.issym() or info.islnk():
                    kind = "link"
                elif info.isdir():
                    kind = "dir"
                elif info.isfile():
                    kind = "file"
                else:
                    kind = "special"
                yield Member(info.name, kind, info.size)
    except _TAR_ERRORS as exc:
        raise InvalidBundle(f"the tar.gz archive cannot be read: {exc}") from exc


# --------------------------------------------------------------------------------------------------- both formats


def check_members(members: Iterable[Member], limits: Limits) -> list[str]:
    """The normalised paths of the files, after every member's name, kind and the totals are checked."""
    tree = _Tree()
    total = 0
    for member in members:
        path = _check_member_name(member.name)
        if member.kind == "link":
            raise InvalidBundle(f"archive member {member.name!r} is a link; bundles may hold only files and folders")
        if member.kind == "special":
            raise InvalidBundle(f"archive member {member.name!r} is a device or fifo; bundles may hold only files")
        if member.kind == "dir":
            tree.folder_entries += 1
            if tree.folder_entries > limits.max_files:
                raise InvalidBundle(f"the archive holds more than {limits.max_files} folders")
            tree.add_folder(member.name, path)
            continue
        if len(tree.files) >= limits.max_files:
            raise InvalidBundle(f"the archive holds more than {limits.max_files} files")
        total += member.size
        if total > limits.max_unpacked_bytes:
            raise InvalidBundle(
                f"the archive unpacks to more than {limits.max_unpacked_bytes} bytes (at member {member.name!r})"
            )
        tree.add_file(member.name, path)
    if not tree.files:
        raise InvalidBundle("the archive holds no files")
    return list(tree.files)


def _check_member_name(name: str) -> str:
    """The member's path, normalised as the worker writes it (``a//./b`` is ``a/b``), if it is a plain relative one
    that Linux can create."""
    if not name or "\\" in name or "\x00" in name:
        raise InvalidBundle(f"archive member name {name!r} is not a plain relative path")
    path = PurePosixPath(name)
    if path.is_absolute() or (len(name) > 1 and name[1] == ":"):
        raise InvalidBundle(f"archive member {name!r} has an absolute path")
    if ".." in path.parts:
        raise InvalidBundle(f"archive member {name!r} climbs out of the bundle with '..'")
    try:
        encoded = os.fsencode(str(path))
    except UnicodeEncodeError as exc:
        raise InvalidBundle(f"archive member {name!r} cannot be a Linux file name: {exc.reason}") from exc
    if len(encoded) > MAX_PATH_BYTES:
        raise InvalidBundle(
            f"archive member {shorten(name)!r} has a path of {len(encoded)} bytes; at most {MAX_PATH_BYTES} are allowed"
        )
    longest = max(path.parts, key=lambda part: len(os.fsencode(part)), default="")
    if len(os.fsencode(longest)) > MAX_COMPONENT_BYTES:
        raise InvalidBundle(
            f"archive member {shorten(name)!r} has a name part of {len(os.fsencode(longest))} bytes; Linux allows "
            f"at most {MAX_COMPONENT_BYTES}"
        )
    return str(path)


class _Tree:
    """The paths an archive's members take once unpacked, refusing any two that Linux cannot hold together."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}  # normalised path -> the member's own name
        self.needed: dict[str, str] = {}  # folder -> the first member inside it
        self.folders: set[str] = set()  # folders the archive has an entry for
        self.folder_entries = 0

    def add_file(self, name: str, path: str) -> None:
        if path == ".":
            raise InvalidBundle(f"archive member {name!r} names the bundle folder itself, not a file")
        if path in self.files:
            raise InvalidBundle(
                f"archive members {self.files[path]!r} and {name!r} are the same file; the upload would check one "
                "and the worker run the other"
            )
        if path in self.folders:
            raise InvalidBundle(f"archive member {name!r} is both a file and a folder")
        if path in self.needed:
            raise InvalidBundle(
                f"archive member {name!r} is a file, but {self.needed[path]!r} needs a folder of that name"
            )
        self._add_parents(name, path)
        self.files[path] = name

    def add_folder(self, name: str, path: str) -> None:
        if path == ".":
            return  # "./", as `tar -C dir .` writes it: the bundle folder itself
        if path in self.files:
            raise InvalidBundle(f"archive member {self.files[path]!r} is both a file and a folder")
        self._add_parents(name, path)
        self.folders.add(path)  # a folder named twice is harmless: unpacking writes only files

    def _add_parents(self, name: str, path: str) -> None:
        parents = [str(parent) for parent in PurePosixPath(path).parents][:-1]  # without "."
        for parent in parents:
            if parent in self.files:
                raise InvalidBundle(
                    f"archive member {self.files[parent]!r} is a file, but {name!r} needs a folder of that name"
                )
        for parent in parents:
            self.needed.setdefault(parent, name)


def shorten(name: str, keep: int = 80) -> str:
    return name if len(name) <= keep else f"{name[:keep]}..."


def file_contents(data: bytes, fmt: ArchiveFormat, limits: Limits) -> Iterator[tuple[str, bytes]]:
    """(normalised path, content) of every file of an archive that passed :func:`_check_members`, in order."""
    if fmt == "zip":
        with _open_zip(data, limits) as archive:
            for zinfo in archive.infolist():
                if not zinfo.is_dir():
                    yield str(PurePosixPath(zinfo.filename)), _read_zip(archive, zinfo)
        return
    try:
        with _open_tar(data, limits) as tar:
            for member in tar:
                if member.isfile():
                    handle = tar.extractfile(member)
                    if handle is not None:
                        yield str(PurePosixPath(member.name)), _read_exactly(handle, member.size, member.name)
    except _TAR_ERRORS as exc:
        raise InvalidBundle(f"the tar.gz archive cannot be read: {exc}") from exc


def _read_zip(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    # The listing only reads the central directory; the member's own data can still be corrupt or disagree with it
    # (a size that lies, a bad CRC): that is the uploader's error, not the server's.
    try:
        with archive.open(info) as handle:
            return _read_exactly(handle, info.file_size, info.filename)
    except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError, ValueError, RuntimeError, zlib.error) as exc:
        raise InvalidBundle(f"archive member {info.filename!r} cannot be read: {exc}") from exc


def _read_exactly(handle: IO[bytes], size: int, name: str) -> bytes:
    # read(size), never read(): zipfile's read() asks the decompressor for up to 2 GiB at once whatever the member's
    # declared size, and keeps only that size afterwards (a 510 kB zip took 1 GB). Reading the declared size also
    # makes zipfile check the CRC.
    content = handle.read(size)
    if len(content) != size:
        raise InvalidBundle(f"archive member {name!r} ends after {len(content)} of the {size} bytes its header says")
    return content


def members(data: bytes, fmt: ArchiveFormat, limits: Limits) -> Iterable[Member]:
    """The archive's members as its headers declare them.

    A tar.gz is walked one member at a time, so that a refusal stops the walk.
    """
    return _zip_members(data, limits) if fmt == "zip" else _tar_members(data, limits)
