"""Entry point of the frozen (PyInstaller) build: the same CLI as the console script."""
import multiprocessing

from service.cli import entry

if __name__ == "__main__":
    multiprocessing.freeze_support()  # the report scanner uses worker processes
    entry()
