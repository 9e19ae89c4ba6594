"""Outputs that appear whole or not at all, as the CLI writes them (client/io/atomic_output.h):
each is written under a temporary name beside it and renamed into place once complete, so an
error never leaves a partial file or series under the output's name, and a rerun never meets
one."""
import contextlib
import itertools
import os
import shutil

_counter = itertools.count()


def _temp_sibling(path):
    """A name beside `path` that keeps its extensions (writers dispatch on them)."""
    head, name = os.path.split(os.path.normpath(path))
    return os.path.join(head, f".cuimg-tmp-{os.getpid()}-{next(_counter)}-{name}")


@contextlib.contextmanager
def staged_file(path):
    """Yields a temporary path to write `path`'s content to; it replaces `path` when the block
    ends normally and is removed when it raises."""
    temp = _temp_sibling(path)
    try:
        yield temp
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(temp)
        raise


@contextlib.contextmanager
def staged_folder(path):
    """Yields a new empty folder beside `path` to write a series into; it becomes `path` when the
    block ends normally and is removed when it raises. `path` must not exist or be an empty folder
    (FileExistsError otherwise, before anything is written: two series never mix)."""
    path = os.path.normpath(path)
    if os.path.exists(path) and (not os.path.isdir(path) or os.listdir(path)):
        raise FileExistsError(f"{path}: not empty (a new series needs a directory of its own)")
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temp = _temp_sibling(path)
    os.mkdir(temp)
    try:
        yield temp
        os.replace(temp, path)  # rename(2) replaces an empty folder
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise
