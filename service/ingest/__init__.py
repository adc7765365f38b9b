"""Following live transcripts: filesystem watch, byte tails, one live session (engine + sinks) per transcript."""
