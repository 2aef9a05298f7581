"""``openprogram serve``: the recording proxy that records and replays programs in any
language by base URL, and ``openprogram exec`` for a program that is not Python.

    routes          where a request goes: its vendor (``/openai``, ``/anthropic``,
                    ``/gemini``, or ``/v1`` for OpenAI), its session, its upstream URL
    forwarding      the headers that cross the server each way, the upstreams' connections
    sessions        the recordings one server records and replays at once: its own, and one
                    per test (by a request header, or a session of the control API)
    replay_passes   a recording replayed again for each run of the program: a pass per run
    trust           whom the server answers: the token of a request that names a
                    recording or a session, its Host and Origin, the token file
    server          the aiohttp application: each request checked, then through its
                    session's HTTP boundary, the response relayed as it arrives
    control         the control API: sessions opened, listed and ended; bounded JSON bodies
    running         a server's life: listening, stopping without losing a recording, in
                    the foreground or in a thread
    proxied_exec    ``openprogram exec`` of any program: a Python one in-process, any other
                    through a server of its own
    exec_isolation  whether exec runs the program in a network namespace with loopback
                    only (by default under replay), and what it bridges into it

The server stands on aiohttp (the optional extra ``serve``): importing this package imports
nothing, its modules import aiohttp.
"""
