"""Recordings from other tools' files: vcrpy cassettes, read safely and made into recordings
that replay as openprogram's own.

    cassette_files  a cassette file read into plain values: YAML with a loader that builds
                    only the tags vcrpy writes (PyYAML, the ``vcr`` extra), or JSON
    vcr_cassettes   a cassette's interactions made into HTTP calls by the recorder's own
                    code, redacted, with what was removed, skipped and repeated counted
"""
