"""The recordings store: naming, creating, listing, showing, deleting and pruning recordings.

Every function takes the store folder explicitly; the CLI passes the configured one. These
modules import only the standard library, orjson and the recording format reader, never a
provider, httpx or the pydantic event models, so ``openprogram recordings …`` starts fast.

    names     what a recording may be called, and where a NAME or PATH argument points
    summary   one line of ``list`` per recording, read fast, with a cache in the store
    store     create, delete and prune recordings in the store
    show      each recorded call as a person wants to read it
"""
