"""What the tests share, one module an idea; every test imports it as ``tests.support.<module>``
(``tests`` is a package, so pytest puts the repository root on ``sys.path``).

- ``recording_rows``: recording rows built by hand (header, request, event, call_end) and
  written to a file, for tests that state the exact lines a reader sees.
- ``http_call_rows``: the rows of calls recorded at the HTTP boundary.
- ``vendor_http_rows``: HTTP calls as the vendors' servers answer them (OpenAI Chat
  Completions and Responses in ``openai_http_rows``, Anthropic Messages in
  ``anthropic_http_rows``, built from ``http_exchange_rows``; errors), and odd shapes no
  vendor sends.
- ``tool_sessions``: the two-call echo tool session (``lookup``), run and recorded; any agent
  session recorded.
- ``scripted_provider``: a provider that answers from a script, and its variants.
- ``provider_events``: reading what a provider streamed.
- ``cli_runner``: ``openprogram ...`` in this process, its error lines, the next start.
- ``config_files``: the configuration file the tests write.
- ``offline`` and ``child_processes``: no sockets, in this process or in a child process
  that runs ``openprogram`` as a user would.
- ``import_rules``: what a module imports, read from its source.
- ``loopback_server``: the plumbing of a test HTTP server on 127.0.0.1 (serving, stopping,
  the request log, writing, cutting and holding an answer), which ``sse_server`` and
  ``sdk_server`` stand on.
- ``sse_server``, ``vendor_wire`` and ``vendors``: the loopback server the vendor providers
  talk to, the bytes each vendor sends, and the one table of vendors.
- ``sdk_server``: the loopback server that answers the official SDKs as the vendors do.
- ``models_sdk_server``: the SDK server, also answering ``GET /v1/models`` and refusing a
  ``temperature`` above 2 as OpenAI does, for the vcrpy suite's migration test.
- ``drift_server``: the loopback server that answers with a recording's responses, as
  recorded or drifted (a field renamed, another type or kind, a new field or event type, an
  error body, other chunking, other values), for the drift check's tests.
- ``recording_mutations``, ``http_fuzz_session`` and ``read_commands``: damaged recordings
  (of provider calls, and of SDK traffic), and what each read command must do with one.
- ``inner_project``: an inner pytest project for the pytest plugin's tests.
- ``attacker_server``: a listener on 127.0.0.2 that counts every connection made to it, for
  the tests that prove nothing (no key, no byte) reaches another origin.
- ``chromium``: Debian's Chromium launched through Playwright, in a home folder of its own
  under the test's temporary folder, and a page served from another origin (127.0.0.2), for
  the HTML pages' and the proxy's browser tests.
- ``exec_replays``: a recording of one call, and a program replayed against it under
  ``openprogram exec --replay`` in a new process.
- ``seeded_session``: a session whose output carries the time (shown in the local zone) and
  random draws, in this process and as a program, and the time zones it is recorded in.
"""
