"""Qt building blocks the tabs and the tray share: charts, the lamp icons, the theme, the fallback
reminder popup."""
