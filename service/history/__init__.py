"""History search: turn records built from transcripts (pure), the sink that stores them, the answers the API gives."""
