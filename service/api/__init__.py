"""The local HTTP API: server and routes, server-sent events, the OpenAPI document, and the client the CLI and MCP server use."""
