"""Entry point of the frozen (PyInstaller) build: the same CLI as the console script."""
import multiprocessing
import sys

from service.cli import main

if __name__ == "__main__":
    multiprocessing.freeze_support()  # the report scanner uses worker processes
    sys.exit(main())
