"""Testing support: the pytest plugin that gives each test its own recording.

``openprogram.testing.pytest_plugin`` is registered under the ``pytest11`` entry point, so
pytest loads it whenever openprogram is installed; it does nothing for a test that does not
request the ``openprogram_recording`` fixture. See ``docs/testing.md``.

    pytest_plugin        the hooks: configure, the fixture, the wrappers around each test
    plugin_options       the plugin's options and markers, declared and read once per run
    record_modes         none, once, new_episodes, all, rewrite, live
    recording_settings   a test's settings, combined from every place they can be set
    settings_sources     those places: configuration, ini file, command line, fixture, markers
    recording_paths      where a test's recording lives
    item_paths           a collected test's recording, shown path and command-line argument
    recording_session    opening one test's recording: recorded, replayed, merged or left alone
    session_lifecycle    that session installed while the test runs, judged, then finished
    saving               putting a new or merged recording in place, and what changed
    network_block        --openprogram-block-network: connections to other machines refused
    outcome              what one test did with its recording, as plain data
    summary_plugin       the hooks that gather the outcomes, also from pytest-xdist workers
    suite_summary        the summary's lines and its JSON report
    orphan_recordings    recordings no collected test uses
"""
