"""What differs per system, each behind a small named seam: start at login (`autostart`) and the
tray host (`tray_host`); docs/platforms.md says what each does where."""
