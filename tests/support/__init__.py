"""What the tests share: the project's transcript corpus and the counts expected of it, transcripts made
in code, processes started and stopped (ctxlamp serve, PostgreSQL), helpers of the channel and team tests.
Test modules import from here, never from tests.conftest (fixtures only) nor from one another."""
