"""The determinism harness: sessions re-run under replay, above the recordings store.

    demo    ``run_demo``: a self-contained record → replay → verify round trip on the
            offline ``echo`` model, in a folder of its own

Nothing is imported here.
"""
