"""Drift: re-send a recording's calls to the live provider, and say how its answers changed.

A recording is the provider's answers as they were on the day it was made. A drift check
re-sends each recorded request live, with the credentials of its vendor and only to an origin
trusted for that vendor, and compares each live answer with the recorded one by *shape*, path
by path and per stream event type, with a class — breaking, additive or content — so that a
team learns the provider moved on before its agent breaks. The recording is never changed.

    comparison   one live answer against the recorded one: status, body kind, shapes,
                 compared headers, tool calls against the offered tools' schemas
    response_shapes  the typed shape of a provider's answers per JSON path and event type,
                 and how a live answer drifted from a recorded one (breaking, additive,
                 content)
    origins      where a call is sent, and whether its vendor's credentials may go there:
                 the vendor's official API, or an origin the user named (``--base-url``,
                 the configured ``providers.<api>.base_url``); any other is not sent to
    credentials  which vendor a request went to, and its credential put back from the
                 environment (a Bedrock request signed again through botocore)
    sending      which calls are sent (server-side state, redacted values, transient
                 errors are not), and sending one: HTTP with httpx, a provider call through
                 openprogram's own provider
    check        ``check_drift``: a recording's calls sent a few at a time, the report per
                 call, the totals and whether the check failed
    snapshot     the live answers written as a drift snapshot, which show and diff read and
                 replay refuses"""
