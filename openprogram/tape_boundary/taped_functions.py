"""``taped``: record a function's calls on a tape, and replay them without running it.

::

    from openprogram import taped

    @taped
    def fetch_weather(city: str) -> dict:
        return httpx.get(f"https://api.example.com/weather?city={city}").json()

    @taped(name="geo")
    async def locate(address: str) -> Location: ...  # a pydantic model, rebuilt on replay

    clock = taped(time.time, name="clock", nondeterministic=True)

Under record each call's arguments and result — or the exception it raised, its type and
message — are appended to the active recording as a ``tape`` row, on the tape of the
function's name, in call order. Under replay the function does not run: the call is served
by the entry whose arguments equal its own (the earliest unread one: concurrent callers of
one tape replay in any order), the recorded result is returned, or the recorded exception
raised again; arguments equal to no unread entry raise the replay mismatch report::

    replay mismatch at tape fetch_weather[1], field args.city:
    recorded 'Paris', incoming 'Lyon'

With neither record nor replay active the function just runs, at the cost of one lookup.
A taped call starts the provider runtime as a model call does, so the configured mode
applies from the first taped call. What arguments and results may be is in
:mod:`openprogram.tape_boundary.values`; redaction applies to both (arguments as configuration,
results and exception messages as content: credentials are removed, the rest is kept).

The tape's name defaults to the function's qualified name (``fetch_weather``, ``Client.fetch``);
give ``name=`` when two taped functions would share one, or to keep a tape when the function is
renamed. ``nondeterministic=True`` marks results that change from run to run by nature (a clock, a
random draw): the transcript hash and ``diff`` compare the calls, not those results. HTTP requests a
taped function sends while it runs under record are not recorded at the HTTP boundary; taped calls
and model calls it makes are recorded marked as within it (:mod:`openprogram.recording.tape_rows`),
and replay, which never runs it, does not ask for them.

The clock and randomness have taped helpers of their own, ``now()``, ``random()`` and
``seeded_random()``: code that reads the time or draws random numbers through these sees, under
replay, exactly what the recorded run saw; outside record and replay they are ``time.time()``,
``random.random()`` and a freshly seeded ``random.Random``. While recording with deterministic
sources (a seed, a clock: :mod:`openprogram.deterministic_sources`), they draw from those instead,
so two recordings of one session read the same times and numbers. Nothing is patched: code that
calls ``time.time()`` directly stays live, and a replay shows the drift it causes.

Their results are non-deterministic by nature, so the transcript hash and ``diff`` leave
them out (the calls still count): two recordings of one session made a day apart hash alike."""

from __future__ import annotations

import contextlib
import functools
import inspect
import random as _random
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast, get_type_hints, overload

from openprogram.deterministic_sources import check_seed
from openprogram.providers.registry import scope_binding
from openprogram.recording.format import TOOL_TAPE_PREFIX, TapeEntry
from openprogram.recording.tape_rows import enclosing_tape, enter_tape, leave_tape, tape_row
from openprogram.recording.writer import recorded_error
from openprogram.tape_boundary.deck import (
    DECKS,
    TAPE_DECK_BINDING,
    TapeDeck,
    TapeRecorder,
    TapeRedaction,
)
from openprogram.tape_boundary.values import (
    json_arguments,
    json_result,
    rebuilt_exception,
    rebuilt_result,
)

if TYPE_CHECKING:
    from openprogram.deterministic_sources import SourceDraws
    from openprogram.tape_boundary.deck import BlockedTapes, TapePlayer

__all__ = ["TapeSpec", "active_tape_deck", "now", "random", "seeded_random", "taped"]

F = TypeVar("F", bound=Callable[..., Any])

_MISSING: Any = object()


def active_tape_deck() -> TapeDeck | None:
    """The deck of the current scope (the provider runtime started first, unless the scope is
    isolated, so the configured mode applies from the very first taped call), or None when
    neither record nor replay is active."""
    deck = scope_binding(TAPE_DECK_BINDING)
    return deck if isinstance(deck, DECKS) else None


class TapeSpec:
    """One taped function: its tape's name and how its calls become rows and back."""

    __slots__ = (
        "_annotation",
        "_positional",
        "_signature",
        "function",
        "name",
        "nondeterministic",
        "skip_first",
    )

    def __init__(self, function: Callable[..., Any], name: str, *, nondeterministic: bool) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a tape needs a name, not {name!r}")
        if name.startswith(TOOL_TAPE_PREFIX):
            raise ValueError(
                f"tape {name!r}: names starting with {TOOL_TAPE_PREFIX!r} are the agent tools' "
                "tapes; choose another name"
            )
        self.function = function
        self.name = name
        self.nondeterministic = nondeterministic
        try:
            signature: inspect.Signature | None = inspect.signature(function)
        except (TypeError, ValueError):  # some built-ins have none
            signature = None
        self._signature = signature
        parameters = list(signature.parameters.values()) if signature is not None else []
        self.skip_first = bool(parameters) and parameters[0].name in ("self", "cls")
        plain = all(parameter.kind is parameter.POSITIONAL_OR_KEYWORD for parameter in parameters)
        self._positional: tuple[str, ...] | None = (
            tuple(parameter.name for parameter in parameters) if plain else None
        )
        """The parameter names, when every one may be passed by position or keyword: a
        call passing them by position alone is bound without ``Signature.bind``."""
        self._annotation: Any = _MISSING

    def arguments(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], redaction: TapeRedaction
    ) -> dict[str, Any]:
        """The call's arguments by parameter name, as JSON, redacted."""
        names = self._positional
        if names is not None and not kwargs and len(args) <= len(names):
            named: dict[str, Any] = dict(zip(names, args, strict=False))
        elif self._signature is None:
            named = dict(kwargs)
            if args:
                named["args"] = list(args)
        else:
            named = dict(self._signature.bind(*args, **kwargs).arguments)  # TypeError, as a call
        if self.skip_first and named:
            named.pop(next(iter(named)))
        return redaction.arguments(json_arguments(self.name, named))

    def result_row(
        self, args: dict[str, Any], value: Any, within: str | None, redaction: TapeRedaction
    ) -> dict[str, Any]:
        stored, typed = json_result(self.name, value, self.annotation)
        return tape_row(
            self.name,
            args,
            result=redaction.content(stored),
            typed=typed,
            nondeterministic=self.nondeterministic,
            within=within,
        )

    def error_row(
        self,
        args: dict[str, Any],
        error: BaseException,
        within: str | None,
        redaction: TapeRedaction,
    ) -> dict[str, Any]:

        recorded = recorded_error(error, redaction.redactor)
        return tape_row(
            self.name, args, error=recorded, nondeterministic=self.nondeterministic, within=within
        )

    def replayed(self, entry: TapeEntry) -> Any:
        """The recorded result (rebuilt if typed), or the recorded exception raised."""
        if entry.error is not None:
            raise rebuilt_exception(entry.error)
        if entry.typed:
            return rebuilt_result(self.name, entry.label, entry.result, self.annotation())
        return entry.result

    def annotation(self) -> Any | None:
        """The function's return annotation, resolved (None: it has none)."""
        if self._annotation is _MISSING:
            try:
                hints = get_type_hints(self.function)
            except Exception:
                hints = {}
            found = hints.get("return")
            self._annotation = (
                None if found in (None, type(None), inspect.Signature.empty) else found
            )
        return self._annotation

    def __repr__(self) -> str:
        return f"<TapeSpec {self.name}>"


class _RecordedCall:
    """One taped call being recorded: ``with`` it around the function's own call, the tape
    covers the code the function runs (the HTTP requests and model calls it makes are marked
    within it), and an exception it raises is recorded; :meth:`returned` records a result."""

    __slots__ = ("arguments", "recorder", "redaction", "spec", "token", "within")

    def __init__(
        self,
        spec: TapeSpec,
        recorder: TapeRecorder,
        arguments: dict[str, Any],
        redaction: TapeRedaction,
    ) -> None:
        self.spec = spec
        self.recorder = recorder
        self.arguments = arguments
        self.redaction = redaction
        self.within = enclosing_tape()
        self.token = enter_tape(spec.name, covers_http=True)

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        try:
            if isinstance(error, Exception):  # not a cancellation or an interrupt
                self.recorder.record(
                    self.spec.error_row(self.arguments, error, self.within, self.redaction)
                )
        finally:
            leave_tape(self.token)

    def returned(self, value: Any) -> Any:
        """Record the result the function returned (after the ``with`` block) and pass it on."""
        self.recorder.record(
            self.spec.result_row(self.arguments, value, self.within, self.redaction)
        )
        return value


_NOT_TAPED: Final = object()
"""What :func:`_begin` says when neither record nor replay is active: the function just runs."""


def _begin(spec: TapeSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """How a call of ``spec`` goes, decided before the function would run: :data:`_NOT_TAPED`,
    a :class:`_RecordedCall` to run the function inside, or (under replay) the recorded
    result itself. Blocked record/replay raises; a recorded exception is raised again."""
    __tracebackhide__ = True
    deck = active_tape_deck()
    if deck is None:
        return _NOT_TAPED
    if deck.mode == "blocked":
        cast("BlockedTapes", deck).refuse()
    redaction = TapeRedaction(deck.user_redaction)
    arguments = spec.arguments(args, kwargs, redaction)
    if deck.mode == "replay":
        return _Served(spec.replayed(cast("TapePlayer", deck).take(spec.name, arguments)))
    return _RecordedCall(spec, cast("TapeRecorder", deck), arguments, redaction)


class _Served:
    """A result replay serves in place of running the function."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _call(spec: TapeSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    __tracebackhide__ = True
    call = _begin(spec, args, kwargs)
    if isinstance(call, _Served):
        return call.value
    if call is _NOT_TAPED:
        return spec.function(*args, **kwargs)
    with call:
        value = spec.function(*args, **kwargs)
    return call.returned(value)


async def _call_async(spec: TapeSpec, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    __tracebackhide__ = True
    call = _begin(spec, args, kwargs)  # the same decision, then the function awaited
    if isinstance(call, _Served):
        return call.value
    if call is _NOT_TAPED:
        return await spec.function(*args, **kwargs)
    with call:
        value = await spec.function(*args, **kwargs)
    return call.returned(value)


def _wrap(function: Callable[..., Any], name: str | None, nondeterministic: bool) -> Any:
    if not callable(function):
        raise TypeError(f"taped() needs a function, not {function!r}")
    if inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function):
        raise TypeError(
            f"taped(): {getattr(function, '__qualname__', function)!r} is a generator, whose "
            "values come after the call returns; tape a function that returns them (a list)"
        )
    spec = TapeSpec(
        function,
        name if name is not None else _default_name(function),
        nondeterministic=nondeterministic,
    )
    if inspect.iscoroutinefunction(function):

        async def taped_async(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return await _call_async(spec, args, kwargs)

        wrapper: Any = taped_async
    else:

        def taped_sync(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            return _call(spec, args, kwargs)

        wrapper = taped_sync
    with contextlib.suppress(AttributeError, TypeError):  # a callable object without a name
        functools.update_wrapper(wrapper, function)
    wrapper.__openprogram_tape__ = spec
    return wrapper


def _default_name(function: Callable[..., Any]) -> str:
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"taped(): {function!r} has no name; pass name=")
    return name


@overload
def taped(function: F, /, *, name: str | None = None, nondeterministic: bool = False) -> F: ...


@overload
def taped(*, name: str | None = None, nondeterministic: bool = False) -> Callable[[F], F]: ...


def taped(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    nondeterministic: bool = False,
) -> Any:
    """Tape a function (see the module's docstring): ``@taped``, ``@taped(name=...)``, or
    ``taped(time.time, name="clock")``. Sync and async functions alike."""
    if function is None:
        return lambda target: _wrap(target, name, nondeterministic)
    return _wrap(function, name, nondeterministic)


def _recording_draws() -> SourceDraws | None:
    """The draws of the recording the current scope records into, if it was given
    deterministic sources (:mod:`openprogram.deterministic_sources`); else None."""
    deck = active_tape_deck()
    return deck.draws if isinstance(deck, TapeRecorder) else None


@taped(name="openprogram.now", nondeterministic=True)
def now() -> float:
    """The current time in seconds since the epoch, as ``time.time()`` — while recording
    with a clock (``record_replay(clock=...)``, ``--clock-start``), the clock's next reading;
    under replay, the time the recorded run read at this point (tape ``openprogram.now``)."""
    draws = _recording_draws()
    seconds = None if draws is None else draws.seconds()
    return time.time() if seconds is None else seconds


@taped(name="openprogram.random", nondeterministic=True)
def random() -> float:
    """A random float in [0, 1), as ``random.random()`` — while recording with a seed, the seeded
    generator's next draw; under replay, the recorded draw (tape ``openprogram.random``)."""
    draws = _recording_draws()
    drawn = None if draws is None else draws.random()
    return _random.random() if drawn is None else drawn


@taped(name="openprogram.seed", nondeterministic=True)
def _seed() -> int:
    draws = _recording_draws()
    drawn = None if draws is None else draws.seed_bits()
    return secrets.randbits(63) if drawn is None else drawn


def seeded_random(seed: int | None = None) -> _random.Random:
    """A ``random.Random`` seeded with ``seed``: the same seed gives the same numbers, on
    any machine and in any Python version (nothing is taped: the seed says it all).

    Without a seed, one seeded with a fresh seed — drawn from the recording's seed while recording
    with one, and under replay the seed the recorded run drew (tape ``openprogram.seed``), so every
    draw from it repeats. One entry per generator, however many numbers it gives. ``ValueError`` for
    a seed that is not a whole number from 0 to 2**63 - 1."""
    if seed is not None:
        return _random.Random(check_seed(seed))
    return _random.Random(_seed())
