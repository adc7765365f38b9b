"""The team view: each member's figures pushed to a shared PostgreSQL database, and read back as one report.

settings (the `[team]` config), server (connections and their failures),
migrations + schema (tables, row-level security, member roles), figures (what is
shared, from the same scan as `ctxlamp report`), outbox (what the server has not
confirmed), push, report, job (the service's scheduled push). docs/team.md tells
the whole story.
"""
