"""The configuration's shape: pydantic models for the file's tables, and ``Settings``, the
pydantic-settings model that puts ``OPENPROGRAM_…`` variables over the file's values.

Precedence, highest first: arguments to ``Settings(...)``, environment variables, the file's
values, the defaults. :func:`build_settings` is how the loader supplies the last two."""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from openprogram.config.environment import ENV_PREFIX, NESTING, MappingEnvSource
from openprogram.config.hosts import check_host_entry
from openprogram.deterministic_sources import (
    DEFAULT_STEP_MS,
    RecordingSources,
    SteppingClock,
    check_seed,
    check_time_ms,
)
from openprogram.errors import ModelReferenceError, UserRedactionError

Mode = Literal["off", "record", "replay"]
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP header name (a token)."""
_NEVER_STORED_HEADERS = frozenset({"cookie", "set-cookie", "proxy-authorization"})


def split_model_reference(reference: str) -> tuple[str, str]:
    """``"openai-completions:llama3:8b"`` → ``("openai-completions", "llama3:8b")``.

    The one parser of model references (``--model`` and ``default_model``): white space
    around the reference is ignored; it is split at the first colon; both sides must be
    non-empty, with no white space beside the colon. Raises :class:`ModelReferenceError`
    (a ``ValueError``) otherwise."""
    api, colon, model_id = reference.strip().partition(":")
    if not colon or not api or not model_id or api != api.rstrip() or model_id != model_id.lstrip():
        raise ModelReferenceError(reference)
    return api, model_id


# Defaults are plain values, not default_factory=list/dict: pydantic inspects a factory's
# signature, and for a builtin that costs ~15 ms of tokenizer import at startup. pydantic copies
# mutable defaults for every instance.


class RecordReplaySettings(BaseModel):
    """``[record_replay]``: whether provider calls are recorded, replayed, or neither."""

    # ``model_hosts`` is a field of the file, not a pydantic method; older pydantic warns of
    # any field starting ``model_`` unless its protected namespace is cleared.
    model_config = ConfigDict(extra="forbid", frozen=True, protected_namespaces=())

    mode: Mode = Field("off", description="off, record or replay (from the next start)")
    file: str | None = Field(None, description="a recording id in the store, or a path")
    ignore_fields: list[str] = Field([], description="request fields replay does not compare")
    compare_loopback_ports: bool = Field(
        False,
        description="replay compares the port of a local server's URL (127.0.0.1, ::1, "
        "localhost); by default a local server restarted on another port still replays",
    )
    match: Literal["content", "order"] = Field(
        "content",
        description="how replay pairs requests with recorded calls: by content, or by order",
    )
    http_passthrough_hosts: list[str] = Field(
        [], description="hosts whose HTTP requests are always sent live, never recorded"
    )
    http_headers: list[str] = Field(
        [], description="HTTP request headers stored and compared besides the semantic ones"
    )
    allowed_hosts: list[str] = Field(
        [],
        description="hosts a replay may connect to live (a test database, a local tool "
        "server); every other connection is refused under replay",
    )
    children: Literal["isolate", "refuse"] = Field(
        "isolate",
        description="record_replay() and the pytest fixture under replay: a child process "
        "that cannot replay in-process (not Python, python -S) runs in a loopback-only "
        "network namespace (isolate; where none can be made, it runs and is named as "
        "unenforced), or is refused before it starts (refuse)",
    )
    allowed_commands: list[str] = Field(
        [],
        description="record_replay() and the pytest fixture: commands (the file name of "
        "argv[0], e.g. git) a child process runs as it is, never isolated nor refused",
    )
    model_hosts: list[str] = Field(
        [],
        description="hosts whose every request is model traffic (a model gateway, a local "
        "model server): the configured mode records or replays them",
    )
    redact_patterns: list[str] = Field(
        [], description="regular expressions whose matches are removed from recordings"
    )
    tools: dict[str, Literal["live", "replay", "check"]] = Field(
        {}, description='agent tools under replay, by name or "*": live, replay or check'
    )
    seed: int | None = Field(
        None,
        description="record: the seed openprogram.random() and seeded_random() draw from "
        "(`recordings record --seed`)",
    )
    clock_start: int | None = Field(
        None,
        description="record: the time openprogram.now() reads first, in milliseconds since "
        "the Unix epoch, UTC (`recordings record --clock-start`)",
    )
    clock_step: int | None = Field(
        None,
        description="record: how far that clock moves at each reading, in milliseconds "
        "(default 1000; needs clock_start)",
    )

    @field_validator("seed")
    @classmethod
    def _is_seed(cls, value: int | None) -> int | None:
        return None if value is None else check_seed(value)

    @field_validator("clock_start")
    @classmethod
    def _is_time(cls, value: int | None) -> int | None:
        return None if value is None else check_time_ms(value, "a time")

    @field_validator("clock_step")
    @classmethod
    def _is_step(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None:
            return None
        if info.data.get("clock_start") is None:  # unset, or itself invalid
            raise ValueError("needs clock_start: the time the clock reads first")
        return check_time_ms(value, "a step")

    def sources(self) -> RecordingSources | None:
        """The deterministic sources a recording made in the configured mode draws
        ``now()`` and ``random()`` from (None: the real clock and randomness)."""
        clock = None
        if self.clock_start is not None:
            step = DEFAULT_STEP_MS if self.clock_step is None else self.clock_step
            clock = SteppingClock(self.clock_start, step)
        return RecordingSources.of(self.seed, clock)

    @field_validator("file")
    @classmethod
    def _file_not_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("ignore_fields")
    @classmethod
    def _are_ignorable(cls, value: list[str]) -> list[str]:
        from openprogram.recording.url_comparison import check_http_ignore_fields

        check_http_ignore_fields(value)
        return value

    @field_validator("http_passthrough_hosts", "allowed_hosts", "model_hosts")
    @classmethod
    def _are_hosts(cls, value: list[str]) -> list[str]:
        # As the HTTP boundary compares them: lower case, an IPv6 address without brackets.
        return [check_host_entry(host) for host in value]

    @field_validator("allowed_commands")
    @classmethod
    def _are_command_names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or "/" in name or name != name.strip():
                raise ValueError(
                    f"{name!r} is not a command's file name (the basename of argv[0], e.g. git)"
                )
        return value

    @field_validator("redact_patterns")
    @classmethod
    def _are_redact_patterns(cls, value: list[str]) -> list[str]:
        from openprogram.recording.user_redaction import compile_redact_pattern

        for source in value:
            try:
                compile_redact_pattern(source)
            except UserRedactionError as error:
                raise ValueError(str(error)) from None
        return value

    @field_validator("http_headers")
    @classmethod
    def _are_storable_headers(cls, value: list[str]) -> list[str]:
        from openprogram.recording.redaction import is_secret_field_name

        for header in value:
            if not _HEADER_NAME.fullmatch(header):
                raise ValueError(f"{header!r} is not an HTTP header name")
            if is_secret_field_name(header) or header.lower() in _NEVER_STORED_HEADERS:
                raise ValueError(f"{header!r} may carry a credential, so it is never stored")
        return [header.lower() for header in value]


class ProviderSettings(BaseModel):
    """``[providers.<api>]``: how to reach one api. Never holds a key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str | None = Field(None, description="the server, e.g. http://localhost:11434/v1")
    api_key_env: str | None = Field(
        None, description="the NAME of the environment variable holding the API key"
    )
    timeout: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="seconds before a request gives up"
    )

    @field_validator("base_url")
    @classmethod
    def _url_is_http(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError(
                "must be the name of an environment variable (letters, digits, _), "
                "like OPENAI_API_KEY, never the key itself"
            )
        return value


class Settings(BaseSettings):
    """The whole configuration. Precedence: arguments, then ``OPENPROGRAM_…`` variables, then
    the file (see :func:`load_config`), then the defaults."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter=NESTING,
        case_sensitive=False,
        extra="forbid",
        frozen=True,
    )

    record_replay: RecordReplaySettings = RecordReplaySettings()
    default_model: str | None = Field(None, description="api:model-id, split at the first colon")
    providers: dict[str, ProviderSettings] = Field({}, description="per-api settings, by api name")

    @field_validator("default_model")
    @classmethod
    def _is_model_reference(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                split_model_reference(value)
            except ModelReferenceError:
                raise ValueError("must be api:model-id, like echo:echo") from None
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        inputs = _INPUTS.get()
        if inputs is None:
            return (init_settings, env_settings)
        environ, file_values = inputs  # the first source wins
        file_settings = InitSettingsSource(settings_cls, init_kwargs=dict(file_values))
        return (init_settings, MappingEnvSource(settings_cls, environ), file_settings)


FIELDS = tuple(Settings.model_fields)
NESTED_FIELDS = ("record_replay", "providers")
# What build_settings() hands to settings_customise_sources: (environment, file values).
_INPUTS: ContextVar[tuple[Mapping[str, str], Mapping[str, Any]] | None] = ContextVar(
    "openprogram_settings_inputs", default=None
)


def build_settings(file_values: Mapping[str, Any], environ: Mapping[str, str]) -> Settings:
    """``Settings`` from the file's values with ``environ``'s setting variables over them.
    Raises pydantic's ``ValidationError`` or pydantic-settings' ``SettingsError``."""
    token = _INPUTS.set((environ, file_values))
    try:
        return Settings()
    finally:
        _INPUTS.reset(token)


def known_keys(table: tuple[str | int, ...]) -> list[str] | None:
    """The keys allowed in the table at ``table`` (a dotted path as a tuple)."""
    if table == ():
        return list(FIELDS)
    if table == ("record_replay",):
        return list(RecordReplaySettings.model_fields)
    if len(table) == 2 and table[0] == "providers":
        return list(ProviderSettings.model_fields)
    return None
