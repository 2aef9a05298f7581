"""The environment variables API keys are read from, made known to the redactor.

A vendor provider remembers its own variable when it is made (``remember_secret_variable``),
but a process can load the configuration for a run without making one: ``recordings verify``
replays under a registry of its own, and a provider registered for an api openprogram does
not ship may never say which variable it reads. So wherever the configuration is loaded for a
run — the provider runtime's start, ``verify`` — every ``[providers.<api>] api_key_env`` and
the built-in apis' default variables are remembered: a key read from ``GPU_BOX_KEY`` is then
removed from what is recorded, compared on replay and shown, like one from ``OPENAI_API_KEY``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.recording.redaction import remember_secret_variable

if TYPE_CHECKING:
    from openprogram.config.models import Settings

DEFAULT_API_KEY_VARIABLES: dict[str, str] = {
    "openai-completions": "OPENAI_API_KEY",
    "anthropic-messages": "ANTHROPIC_API_KEY",
}
"""Where each built-in vendor api reads its key unless ``api_key_env`` names another."""


def remember_key_variables(settings: Settings | None) -> None:
    """Remember the built-in apis' default key variables and every ``api_key_env`` the
    configuration names (none when it could not be read)."""
    for variable in DEFAULT_API_KEY_VARIABLES.values():
        remember_secret_variable(variable)
    for provider in settings.providers.values() if settings is not None else ():
        if provider.api_key_env:
            remember_secret_variable(provider.api_key_env)
