"""The status-line command as a script: `python -S .../service/statusline/fast.py [--wrap CMD]`.

What `ctxlamp install` puts in Claude Code's settings. Run as a file, under -S, Python skips the
site machinery (an editable install's path finder alone costs about 20 ms) and runpy; the script
puts the folder holding `service` on sys.path itself. `ctxlamp statusline` runs the same code.
"""
if __name__ == "__main__":
    import os
    import sys

    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from service.statusline.run import main

    sys.exit(main(sys.argv[1:]))
