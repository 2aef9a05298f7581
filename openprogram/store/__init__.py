"""The recordings store: naming, creating, listing, showing, comparing, deleting and pruning
recordings, and the record/replay settings that point at one.

Every function takes the store folder explicitly; the CLI passes the configured one. These
modules import only the standard library, orjson, the configuration and the recording format
reader, never a provider, httpx or the agent loop, so ``openprogram recordings …`` starts
fast; re-running a recorded session (``verify``) lives above them, in
:mod:`openprogram.harness`.

    names                 what a recording may be called, and where a NAME or PATH argument points
    configured            the recording ``record_replay.file`` names, worked out in one place
    summary               one line of ``list`` per recording, read fast
    digest_summary        a summary from the digests the writer stored, its events unparsed
    summary_cache         every recording in a store summarized, through a cache in the store
    store                 create, delete and prune recordings in the store
    show                  each recorded call as a person wants to read it
    http_views            an HTTP call's exchange, and the model API it was made to
    http_reply            a reply put back together from a vendor's stream or body
    http_openai_views     OpenAI Chat Completions and Responses, read from HTTP calls
    http_anthropic_views  Anthropic Messages, read from HTTP calls
    call_usage            the tokens a recorded call's usage counts
    hashing               the transcript hash (and canonical JSON)
    comparison            how two recordings differ, calls paired by content (``diff``)
    status                what record/replay is configured to do, and whether the next start works
    switch                ``record``, ``replay`` and ``off``: switching the configured mode
"""
