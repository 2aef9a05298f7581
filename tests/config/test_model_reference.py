"""One parser of ``api:model-id``: what ``default_model`` accepts is exactly what
``resolve_model`` (``--model``) accepts, split the same way."""

from __future__ import annotations

import pytest

from openprogram.agent.session import resolve_model
from openprogram.config.models import build_settings, split_model_reference
from openprogram.errors import ModelReferenceError

REFERENCES = [
    ("openai-completions:llama3:8b", ("openai-completions", "llama3:8b")),
    ("echo:echo", ("echo", "echo")),
    ("a:b:", ("a", "b:")),
    ("  echo:echo\n", ("echo", "echo")),
    ("gpt-4o", None),
    (":gpt-4o", None),
    ("openai-completions:", None),
    (":", None),
    ("", None),
    ("   ", None),
    ("echo :echo", None),
    ("echo: echo", None),
]


@pytest.mark.parametrize(("reference", "parts"), REFERENCES)
def test_the_parser_splits_at_the_first_colon_or_names_the_reference(
    reference: str, parts: tuple[str, str] | None
) -> None:
    if parts is not None:
        assert split_model_reference(reference) == parts
        return
    with pytest.raises(ModelReferenceError) as raised:
        split_model_reference(reference)
    assert raised.value.reference == reference
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize(("reference", "parts"), REFERENCES)
def test_default_model_and_the_command_line_accept_the_same_references(
    reference: str, parts: tuple[str, str] | None
) -> None:
    from pydantic import ValidationError

    configured: tuple[str, str] | None = None
    if parts is None:
        with pytest.raises(ValidationError, match="must be api:model-id"):
            build_settings({"default_model": reference}, {})
    else:
        model = resolve_model(None, build_settings({"default_model": reference}, {}))
        configured = (model.api, model.id)
    try:
        model = resolve_model(reference, None)
    except ModelReferenceError:
        given = None
    else:
        given = (model.api, model.id)
    assert configured == given == parts
