"""The background service process: its loop, persistence to the store, checkpoints, the one-per-user lock."""
