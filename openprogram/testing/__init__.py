"""Testing support: the pytest plugin that gives each test its own recording.

``openprogram.testing.pytest_plugin`` is registered under the ``pytest11`` entry point, so
pytest loads it whenever openprogram is installed; it does nothing for a test that does not
request the ``openprogram_recording`` fixture. See ``docs/testing.md``.

    pytest_plugin        the hooks: configure, the fixture, the wrappers around each test
    plugin_options       the plugin's options and markers, declared and read once per run
    recording_settings   a test's settings (record modes none, once, new_episodes, all,
                         rewrite, live, drift), combined from every place they can be set:
                         configuration, ini file, command line, fixture, markers
    recording_paths      where a test's recording lives; a collected test's recording, shown
                         path and command-line argument
    recording_session    opening one test's recording: recorded, replayed, merged or left alone
    session_lifecycle    that session installed while the test runs, judged, then finished
    saving               putting a new or merged recording in place, and what changed
    drift_mode           the drift mode's check: a passing test's calls sent live, the
                         answers compared with the recorded ones, the spending budget
    network_block        --openprogram-block-network: connections to other machines refused
    isolation            --openprogram-isolate: the whole session run again in a loopback-only
                         network namespace, the allowed hosts bridged in
    cassette_import      --openprogram-import-cassettes: a test's vcrpy cassette, named by
                         pytest-recording, made into its recording before it runs
    suite_summary        what one test did with its recording, as plain data; the summary's
                         lines and its JSON report
    suite_pages          the suite summary as a page to review, and as Markdown for a CI job
    summary_plugin       the hooks that gather the outcomes, also from pytest-xdist workers,
                         and the recordings no collected test uses
"""
