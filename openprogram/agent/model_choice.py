"""Which model a session uses: ``api:model-id`` from the caller, else the configured
``default_model``, else the offline ``echo`` model.

A reference is split at its first colon only, so ``openai-completions:llama3:8b`` is the
model ``llama3:8b`` of the api ``openai-completions``. The model's ``provider`` is the
vendor's name for the apis openprogram ships (``openai``, ``anthropic``, ``echo``) and the
api itself otherwise; its ``base_url`` is the one ``[providers.<api>]`` sets, if any.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.errors import OpenProgramError
from openprogram.providers.types import Model

if TYPE_CHECKING:
    from openprogram.config.models import Settings

ECHO_REFERENCE = "echo:echo"
"""What a session runs on when nothing names a model."""

VENDOR_OF_API: dict[str, str] = {
    "echo": "echo",
    "openai-completions": "openai",
    "anthropic-messages": "anthropic",
}


class ModelReferenceError(OpenProgramError, ValueError):
    """A model reference is not ``api:model-id``."""

    def __init__(self, reference: str) -> None:
        self.reference = reference
        super().__init__(
            f"model {reference!r} is not api:model-id; write it like echo:echo or "
            "openai-completions:gpt-4o-mini (split at the first colon)"
        )


def split_reference(reference: str) -> tuple[str, str]:
    """``(api, model_id)``, split at the first colon; raises :class:`ModelReferenceError`."""
    api, colon, model_id = reference.strip().partition(":")
    if not colon or not api or not model_id or api != api.strip() or model_id != model_id.strip():
        raise ModelReferenceError(reference)
    return api, model_id


def resolve_model(reference: str | None, settings: Settings | None) -> Model:
    """The model ``reference`` names; without one, ``settings.default_model``; without that
    (or without settings: no configuration, or a broken one), the ``echo`` model."""
    if reference is None and settings is not None:
        reference = settings.default_model
    api, model_id = split_reference(reference if reference is not None else ECHO_REFERENCE)
    provider_settings = settings.providers.get(api) if settings is not None else None
    base_url = provider_settings.base_url if provider_settings is not None else None
    return Model(id=model_id, api=api, provider=VENDOR_OF_API.get(api, api), base_url=base_url)
