"""Configuration: where the file lives, the typed read-only view, and in-place edits.

    paths        where ``config.toml`` and the recordings store live (``config_location``)
    models       the settings' pydantic models, defaults and checks (``Settings``, ``Mode``)
    environment  ``OPENPROGRAM_…`` variables read from any mapping, misspellings suggested
    settings     the typed view: the file, with ``OPENPROGRAM_…`` variables over it
                 (``load_config``, ``read_settings``, ``ConfigError``)
    problems     what is wrong with a file or a value, in one line naming the key and line
    hosts        the syntax of a host list (``allowed_hosts``, ``model_hosts``) and whether
                 one names a host
    editing      changes to ``record_replay`` that keep the rest of the file byte for byte,
                 and the repair ``off`` performs on a broken file (``set_record_replay``)
    startup_marker  what the configuration decided, kept beside it for the start-up hook

Nothing is imported here, so ``import openprogram.config.paths`` stays cheap.
"""
