"""The folder a path not made yet will be made in."""
import os


def existing_folder(path):
    """path, or the nearest folder above it that exists: where a folder not made yet (a run
    that writes its dataset, a replay's output) will be made, on the file system whose free
    space and O_DIRECT alignment it will have."""
    path = os.path.abspath(path)
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path
