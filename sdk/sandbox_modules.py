"""What the sandbox image holds, as the SDK's local checks need it: which modules a policy can import there.

``layersched validate`` and ``submit`` refuse an unguarded import of anything else (the server would fail the
whole evaluation as ``import_error``, and the student loses a submission), and warn of a guarded one. The lists are
the image's: ``worker/sandbox/build_image.sh`` (and ``worker/sandbox/Dockerfile``, its registry twin) install
Debian's Python 3.11, the numpy and CPU torch wheels pinned below with the dependencies their wheels name, and
``layersched.sim``; ``tests/sdk/test_sandbox_modules.py`` checks these lists against a built image and the pins
against both build files, so a change of either shows as a failing test, not as a student's lost submission.
"""

from __future__ import annotations

PYTHON = "3.11"
# The wheels the image is built from (build_image.sh NUMPY_VERSION and TORCH_WHEEL, the Dockerfile's pip line).
PINNED = {"numpy": "2.4.6", "torch": "2.13.0"}
# The top-level modules of the image's site-packages: numpy, torch and what torch's wheel requires.
SITE_MODULES = frozenset(
    """_distutils_hack filelock fsspec functorch isympy jinja2 markupsafe mpmath networkx numpy setuptools sympy
    torch torchgen typing_extensions""".split()  # noqa: SIM905 - a word list, as the image's listing prints it
)
# Of layersched, the image holds the simulator (and the harness, which is not for policies).
LAYERSCHED_MODULES = ("layersched.sim",)
# The standard library as the image's Python has it (Debian leaves out tkinter, lib2to3, ensurepip, ...).
STDLIB_MODULES = frozenset(
    """__future__ _abc _aix_support _ast _asyncio _bisect _blake2 _bootsubprocess _bz2 _codecs _codecs_cn _codecs_hk
_codecs_iso2022 _codecs_jp _codecs_kr _codecs_tw _collections _collections_abc _compat_pickle _compression
_contextvars _crypt _csv _ctypes _curses _curses_panel _datetime _dbm _decimal _elementtree _frozen_importlib
_frozen_importlib_external _functools _hashlib _heapq _imp _io _json _locale _lsprof _lzma _markupbase _md5
_multibytecodec _multiprocessing _opcode _operator _osx_support _pickle _posixshmem _posixsubprocess _py_abc
_pydecimal _pyio _queue _random _sha1 _sha256 _sha3 _sha512 _signal _sitebuiltins _socket _sqlite3 _sre _ssl _stat
_statistics _string _strptime _struct _symtable _thread _threading_local _tokenize _tracemalloc _typing _uuid
_warnings _weakref _weakrefset _zoneinfo abc aifc antigravity argparse array ast asynchat asyncio asyncore atexit
audioop base64 bdb binascii bisect builtins bz2 cProfile calendar cgi cgitb chunk cmath cmd code codecs codeop
collections colorsys compileall concurrent configparser contextlib contextvars copy copyreg crypt csv ctypes curses
dataclasses datetime dbm decimal difflib dis distutils doctest email encodings enum errno faulthandler fcntl filecmp
fileinput fnmatch fractions ftplib functools gc genericpath getopt getpass gettext glob graphlib grp gzip hashlib
heapq hmac html http imaplib imghdr imp importlib inspect io ipaddress itertools json keyword linecache locale
logging lzma mailbox mailcap marshal math mimetypes mmap modulefinder multiprocessing netrc nis nntplib ntpath
nturl2path numbers opcode operator optparse os ossaudiodev pathlib pdb pickle pickletools pipes pkgutil platform
plistlib poplib posix posixpath pprint profile pstats pty pwd py_compile pyclbr pydoc pydoc_data pyexpat queue
quopri random re readline reprlib resource rlcompleter runpy sched secrets select selectors shelve shlex shutil
signal site smtpd smtplib sndhdr socket socketserver spwd sqlite3 sre_compile sre_constants sre_parse ssl stat
statistics string stringprep struct subprocess sunau symtable sys sysconfig syslog tabnanny tarfile telnetlib
tempfile termios textwrap this threading time timeit token tokenize tomllib trace traceback tracemalloc tty turtle
types typing unicodedata unittest urllib uu uuid venv warnings wave weakref webbrowser wsgiref xdrlib xml xmlrpc
zipapp zipfile zipimport zlib zoneinfo""".split()  # noqa: SIM905 - 289 names in 22 lines, not 289 lines
)


def sandbox_has(module: str, local: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether ``import module`` works in the sandbox, where ``local`` are the bundle's own top-level modules."""
    top = module.split(".", 1)[0]
    if top in STDLIB_MODULES or top in SITE_MODULES or top in local:
        return True
    return any(module == m or module.startswith(m + ".") for m in LAYERSCHED_MODULES)


def sandbox_holds() -> str:
    """The sandbox's modules in a phrase, for messages."""
    others = ", ".join(sorted(SITE_MODULES - set(PINNED) - {"_distutils_hack", "functorch", "torchgen", "isympy"}))
    return (
        f"the standard library of Python {PYTHON}, numpy {PINNED['numpy']}, torch {PINNED['torch']} (CPU; with "
        f"{others}), layersched.sim and the bundle's own modules"
    )
