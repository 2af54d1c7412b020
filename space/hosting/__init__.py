"""The hosting concerns at the bottom of the Space: who is admitted (API keys, per-client rate limits), the limits
on every request and the messages that name them, and the server's log lines.  Imports nothing of the Space."""
