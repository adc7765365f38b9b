"""One person's machines in one view, through a folder they already sync (docs/sync.md).

Each device writes its own figures (never prompts, file contents, paths or session ids) to one file
of its own in the shared folder, replaced atomically; every device reads the others' files and sums
them per device, a session seen on two devices counted once. The report and the Overview show the
sums; the team server (service/team/) is the other way to share figures, for a team.
"""
