"""Testing support: the pytest plugin that gives each test its own recording.

``openprogram.testing.pytest_plugin`` is registered under the ``pytest11`` entry point, so
pytest loads it whenever openprogram is installed; it does nothing for a test that does not
request the ``openprogram_recording`` fixture. See ``docs/testing.md``.
"""
