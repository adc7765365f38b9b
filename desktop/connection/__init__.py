"""What talks to the service: the data source the window reads (the API, or the bundled demo), the
event stream the tray and window follow, and the supervisor of the service the tray starts (with
its restart policy)."""
