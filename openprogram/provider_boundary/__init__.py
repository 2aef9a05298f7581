"""Record and replay at the provider registry: providers that wrap a registered provider
or answer in its place, installed on a registry scope.

    codec             provider requests and events as recording rows, and back
    recorder          ``RecordingProvider``: records each call of the provider it wraps
    replay            ``ReplayProvider``: answers each call from a recording, comparing each
                      request dumped only as far as needed
    replay_or_record  ``ReplayOrRecordProvider``: replays what the recording holds and
                      records what it does not
    transforms        the registry transforms that switch record, replay or a refusal on"""
