"""The determinism harness: sessions re-run under replay, above the recordings store.

    verification  ``verify_recording``: rebuild a recorded session from call 0's request and
                  re-run it through the current agent loop under replay (``recordings verify``)
    demo          ``Demo``: a self-contained record → replay → verify round trip on the
                  offline ``echo`` model, in a folder of its own

The recordings store (:mod:`openprogram.store`) reads recordings only; whatever runs an
agent session lives here. Nothing is imported here.
"""
