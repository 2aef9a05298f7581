"""Configuration: where the file lives, the typed read-only view, and in-place edits.

    paths      where ``config.toml`` and the recordings store live (``config_location``)
    settings   the typed view: the file, with ``OPENPROGRAM_…`` variables over it
               (``load_config``, ``read_settings``, ``Settings``, ``ConfigError``)
    editing    changes to ``record_replay`` that keep the rest of the file byte for byte,
               and the repair ``off`` performs on a broken file (``set_record_replay``)

Nothing is imported here, so ``import openprogram.config.paths`` stays cheap.
"""
