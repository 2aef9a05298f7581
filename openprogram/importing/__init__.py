"""Recordings from other tools' files: vcrpy cassettes, read safely and made into recordings
that replay as openprogram's own.

    cassette_files  a cassette file read into plain values, within bounds: YAML with a
                    loader that builds only the tags vcrpy writes (PyYAML, the ``vcr``
                    extra), or JSON; only regular files, size, aliases and nesting bounded
    body_decoding   a body recorded compressed (gzip, deflate, brotli) decoded, never past
                    a size limit
    vcr_cassettes   a cassette's interactions made into HTTP calls by the recorder's own
                    code, redacted, with what was removed, skipped and repeated counted"""
