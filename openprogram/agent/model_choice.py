"""Which model a session uses: ``api:model-id`` from the caller, else the configured
``default_model``, else the offline ``echo`` model.

A reference is split at its first colon only, so ``openai-completions:llama3:8b`` is the
model ``llama3:8b`` of the api ``openai-completions``; ``--model`` and ``default_model`` share
one parser (:func:`openprogram.config.models.split_model_reference`). The model's
``provider`` is the vendor's name for the apis openprogram ships (``openai``, ``anthropic``,
``echo``) and the api itself otherwise; its ``base_url`` is the one ``[providers.<api>]``
sets, if any.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.config.models import split_model_reference
from openprogram.providers.types import Model

if TYPE_CHECKING:
    from openprogram.config.models import Settings

ECHO_REFERENCE = "echo:echo"
"""What a session runs on when nothing names a model."""

__all__ = ["ECHO_REFERENCE", "VENDOR_OF_API", "resolve_model"]

VENDOR_OF_API: dict[str, str] = {
    "echo": "echo",
    "openai-completions": "openai",
    "anthropic-messages": "anthropic",
}


def resolve_model(reference: str | None, settings: Settings | None) -> Model:
    """The model ``reference`` names; without one, ``settings.default_model``; without that
    (or without settings: no configuration, or a broken one), the ``echo`` model. Raises
    :class:`ModelReferenceError` when the reference is not ``api:model-id``."""
    if reference is None and settings is not None:
        reference = settings.default_model
    api, model_id = split_model_reference(reference if reference is not None else ECHO_REFERENCE)
    provider_settings = settings.providers.get(api) if settings is not None else None
    base_url = provider_settings.base_url if provider_settings is not None else None
    return Model(id=model_id, api=api, provider=VENDOR_OF_API.get(api, api), base_url=base_url)
