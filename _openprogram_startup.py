"""openprogram's start-up hook: the configured record/replay mode, in every Python process.

``openprogram_startup.pth``, installed beside this module in ``site-packages`` with
openprogram (a wheel and an editable install alike), imports it while Python starts, before
the program's first line, in every Python process of that environment: ``-I`` and ``-E`` do
not skip it (``site`` still reads ``site-packages``), ``-S`` does (no ``site`` at all).

It decides cheaply whether there may be anything to do, and only then imports openprogram
(:func:`openprogram.activation.startup.start`, which decides for good):

* ``openprogram exec``'s plan in the environment (:data:`PLAN_VARIABLE`): always handed on;
* ``OPENPROGRAM_RECORD_REPLAY__MODE=off``: off, for this process;
* no configuration file and no ``OPENPROGRAM_…`` setting variable: off (the defaults);
* a *start-up marker* beside the configuration (:func:`marker_path`) saying ``off`` for this
  very file — its ``st_mtime_ns``, ``st_size`` and ``st_ino`` — and these very
  ``OPENPROGRAM_…`` variables (their digest): off;
* ``openprogram``'s own commands (the console script, ``python -m openprogram``): never;
* anything else — a mode that is on, a file edited by hand, variables the marker was not
  written for: openprogram reads the configuration in full, as ``openprogram recordings
  status`` does, and decides.

The commands that switch the mode write the marker (:func:`marker_line` is its one line),
and a process that read the configuration in full and found the mode off writes it again,
so the next process decides in a few system calls. Reading the configuration file itself
(TOML) is never done here: it costs more than Python's whole start.

PYTEST_DONT_REWRITE: pytest marks the modules of a plugin's distribution for assertion
rewriting, and this one was imported before pytest started.

Only ``os`` and ``sys`` are imported (both are loaded before ``site`` runs); nothing raises
into the program: a failure of openprogram's own start is its to turn into a refusal of
model calls (it fails closed), and an openprogram that cannot be imported at all is said in
one line on stderr.
"""

import os
import sys

TYPE_CHECKING = False  # typing itself is not loaded this early
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "EXCHANGE_VARIABLE",
    "MODE_VARIABLE",
    "PLAN_VARIABLE",
    "config_path",
    "configured_off",
    "is_openprogram_command",
    "marker_line",
    "marker_path",
    "setting_digest",
]

PLAN_VARIABLE = "_OPENPROGRAM_EXEC_PLAN"
"""``openprogram exec``'s plan, as JSON, for every Python process of its command."""

EXCHANGE_VARIABLE = "_OPENPROGRAM_EXEC_DIR"
"""``openprogram exec``'s private folder, shared with the processes of its command."""

MODE_VARIABLE = "OPENPROGRAM_RECORD_REPLAY__MODE"
"""Set to ``off``, record/replay is off for the process, whatever the configuration says."""

LOCATION_VARIABLES = ("OPENPROGRAM_CONFIG", "OPENPROGRAM_HOME")
"""The variables that say where the configuration is (not settings of it)."""

MARKER_HEADER = "openprogram-startup 1"
"""The first word of a marker's line: what it is, and the version of its form."""

_COMMAND_NAMES = frozenset({"openprogram", "openprogram.exe", "openprogram-script.py"})
_COMMAND_MODULES = frozenset({"openprogram", "openprogram.__main__", "openprogram.cli"})


def config_path(environ: "Mapping[str, str]") -> str | None:
    """The configuration file, as ``openprogram.config.paths.config_location`` finds it:
    ``OPENPROGRAM_CONFIG``, else ``OPENPROGRAM_HOME/config.toml``, else ``config.toml`` in
    the user's configuration folder. None only where that folder cannot be told."""
    named = environ.get("OPENPROGRAM_CONFIG")
    if named:
        return _expanded(named, environ)
    home = environ.get("OPENPROGRAM_HOME")
    if home:
        return os.path.join(_expanded(home, environ), "config.toml")
    folder = _user_config_folder(environ)
    return None if folder is None else os.path.join(folder, "openprogram", "config.toml")


def _expanded(value: str, environ: "Mapping[str, str]") -> str:
    """``~`` as ``environ``'s ``HOME`` when it has one; a relative path made absolute."""
    home = environ.get("HOME")
    if home and (value == "~" or value.startswith("~/")):
        path = os.path.join(home, value[2:])
    else:
        path = os.path.expanduser(value)
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def _user_config_folder(environ: "Mapping[str, str]") -> str | None:
    """``platformdirs.user_config_dir()`` without importing platformdirs (several
    milliseconds) where its answer is plain: Linux, an absolute ``XDG_CONFIG_HOME`` or none
    and an absolute ``HOME``. Anywhere else platformdirs itself is asked."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    home = environ.get("HOME", "")
    plain = (
        sys.platform == "linux"
        and not hasattr(sys, "getandroidapilevel")
        and "ANDROID_ROOT" not in environ
        and (os.path.isabs(xdg) and xdg == xdg.strip() if xdg else os.path.isabs(home))
    )
    if plain:
        return xdg or os.path.join(home, ".config")
    try:
        import platformdirs  # only where the folder is not plain

        return platformdirs.user_config_dir()
    except Exception:
        return None


def marker_path(config: str) -> str:
    """The start-up marker of the configuration file ``config``: beside it, hidden."""
    folder, name = os.path.split(config)
    return os.path.join(folder, f".{name}.startup")


def setting_digest(environ: "Mapping[str, str]") -> str:
    """A digest of every ``OPENPROGRAM_…`` variable but the two that locate the file (names
    and values; ``-`` when there is none): a marker holds for these variables only. Values
    may be secrets, so only their digest is ever written."""
    found = sorted(
        f"{name}={value}"
        for name, value in environ.items()
        if name[:12].upper() == "OPENPROGRAM_" and name.upper() not in LOCATION_VARIABLES
    )
    if not found:
        return "-"
    from hashlib import sha256  # only when such variables are set

    return sha256("\0".join(found).encode("utf-8", "surrogateescape")).hexdigest()


def marker_line(mode: str, stat: os.stat_result | None, digest: str) -> str:
    """The marker's one line: the ``mode`` decided for the file whose ``stat`` it is (None:
    no file) and the variables whose digest is ``digest``."""
    file = "absent" if stat is None else f"{stat.st_mtime_ns} {stat.st_size} {stat.st_ino}"
    return f"{MARKER_HEADER} {mode} {file} {digest}\n"


def configured_off(environ: "Mapping[str, str]") -> bool:
    """Whether the configured mode is surely off for a process starting with ``environ``
    (False: openprogram must read the configuration to tell)."""
    if environ.get(MODE_VARIABLE) == "off":
        return True
    path = config_path(environ)
    if path is None:
        return False
    digest = setting_digest(environ)
    try:
        stat: os.stat_result | None = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        if digest == "-":
            return True  # no file, no variable: the defaults, off
        stat = None
    except OSError:
        return False
    try:
        with open(marker_path(path), encoding="utf-8") as marker:
            written = marker.read(4096)
    except (OSError, ValueError):
        return False
    return marker_line("off", stat, digest) in written.splitlines(keepends=True)


def is_openprogram_command(argv: "Sequence[str]") -> bool:
    """Whether ``argv`` (``sys.orig_argv``: the interpreter, its options, then the script or
    ``-m MODULE`` or ``-c CODE``) runs one of openprogram's own commands."""
    words = iter(argv[1:])
    for word in words:
        if word == "-" or not word.startswith("-"):
            return os.path.basename(word) in _COMMAND_NAMES
        if word.startswith("--"):
            if word == "--check-hash-based-pycs":
                next(words, None)
            continue
        cluster = word[1:]
        for position, letter in enumerate(cluster):
            rest = cluster[position + 1 :]
            if letter == "c":
                return False
            if letter == "m":
                return (rest or next(words, "")) in _COMMAND_MODULES
            if letter in "WX":
                if not rest:
                    next(words, None)
                break
    return False


def _start() -> None:
    environ = os.environ
    exec_plan = environ.get(PLAN_VARIABLE) is not None
    if not exec_plan and (configured_off(environ) or is_openprogram_command(sys.orig_argv)):
        return
    try:
        from openprogram.activation.startup import start  # only when it may be on
    except Exception as error:
        sys.stderr.write(
            "openprogram: record/replay may be on, but this Python cannot import openprogram "
            f"({type(error).__name__}: {error}), so it runs without it\n"
        )
        return
    start()


try:
    _start()
except Exception as _error:  # never into the program; openprogram's start fails closed itself
    sys.stderr.write(f"openprogram: the start-up hook failed ({type(_error).__name__}: {_error})\n")
