"""The recordings store: naming, creating, listing, showing, comparing, deleting and pruning
recordings, and the record/replay settings that point at one.

Every function takes the store folder explicitly; the CLI passes the configured one. These
modules import only the standard library, orjson, the configuration and the recording format
reader, never a provider, httpx or the agent loop, so ``openprogram recordings …`` starts
fast; re-running a recorded session (``verify``) lives above them, in
:mod:`openprogram.harness`.

    names          what a recording may be called, and where a NAME or PATH argument points
    summary        one line of ``list`` per recording, read fast
    summary_cache  every recording in a store summarized, through a cache in the store
    store          create, delete and prune recordings in the store
    show           each recorded call as a person wants to read it
    html_pages     a recording, and two compared, as one self-contained page to review
    scan           the secrets a recording still holds, found by the rules replay applies
    hashing        the transcript hash (and canonical JSON)
    comparison     how two recordings differ, calls paired by content (``diff``)
    status         what record/replay is configured to do, and whether the next start works,
                   and switching the configured mode
"""
