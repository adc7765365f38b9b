"""Following live transcripts: filesystem watch, byte tails, one live session (engine + sinks) per transcript,
and the one safe way every reader opens a transcript (transcript_file)."""
