"""Walk, measure, open and remove whatever tree an agent left, through directory descriptors.

An agent may leave names that are not UTF-8, directories nested deeper than PATH_MAX, files and
directories with mode 000, FIFOs, sockets and device nodes. Everything here:

- opens each directory relative to its parent's descriptor with O_NOFOLLOW, never by a whole
  path, so depth has no limit and no symlink is ever followed; a walk goes back up through
  ``..`` (checked to be the directory it came from), so it holds one descriptor at a time;
- kinds come from the directory entry (or lstat), so FIFOs, sockets and devices are never
  opened; files are opened O_NONBLOCK and checked regular after opening;
- when the mode of the trial's own copy forbids what is needed (reading, listing, removing),
  adds the owner's bits it needs with a chmod that does not follow symlinks, and tries again;
- is iterative, with no recursion.

It imports the standard library only: the file helper process (filework) runs its source.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from typing import NamedTuple

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CHUNK = 1 << 20

FILE, DIR, SYMLINK, FIFO, SOCKET = "file", "directory", "symlink", "fifo", "socket"
CHAR_DEVICE, BLOCK_DEVICE, OTHER = "character device", "block device", "special file"
UNREADABLE = "unreadable directory"  # a directory the harness could not open, even after chmod
_KINDS = {
    stat.S_IFREG: FILE,
    stat.S_IFDIR: DIR,
    stat.S_IFLNK: SYMLINK,
    stat.S_IFIFO: FIFO,
    stat.S_IFSOCK: SOCKET,
    stat.S_IFCHR: CHAR_DEVICE,
    stat.S_IFBLK: BLOCK_DEVICE,
}


class Found(NamedTuple):
    """One entry of a walk. dir_fd (its directory) is open only until the walk moves on."""

    rel: bytes  # path below the walk's root, "/"-separated
    name: str  # as os.scandir gives it (os.fsdecode of the name's bytes)
    kind: str
    dir_fd: int


def kind_of(entry: os.DirEntry[str]) -> str:
    """The entry's kind from its directory entry, or lstat when the file system gives none."""
    if entry.is_dir(follow_symlinks=False):
        return DIR
    if entry.is_file(follow_symlinks=False):
        return FILE
    if entry.is_symlink():
        return SYMLINK
    return _KINDS.get(stat.S_IFMT(entry.stat(follow_symlinks=False).st_mode), OTHER)


def add_mode(dir_fd: int, name: str, bits: int) -> None:
    """Add the owner's permission bits to dir_fd/name, a directory or regular file, without
    following a symlink there (the kernel refuses to chmod a symlink itself)."""
    mode = stat.S_IMODE(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    try:
        os.chmod(name, mode | bits, dir_fd=dir_fd, follow_symlinks=False)
    except (NotImplementedError, OSError) as error:
        if isinstance(error, OSError) and error.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:  # a descriptor of the entry itself: /proc resolves it to that inode
            if stat.S_ISLNK(os.fstat(fd).st_mode):
                raise
            os.chmod(f"/proc/self/fd/{fd}", mode | bits)
        finally:
            os.close(fd)


def open_dir(dir_fd: int | None, name: str | bytes) -> int:
    """A descriptor of the directory dir_fd/name (never through a symlink), adding the
    owner's rwx when its mode forbids listing it."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        add_mode(_at(dir_fd), os.fsdecode(name), stat.S_IRWXU)
        return os.open(name, DIR_FLAGS, dir_fd=dir_fd)


def open_file(dir_fd: int, name: str | bytes) -> int:
    """A descriptor of the regular file dir_fd/name (never a symlink, FIFO or device), adding
    the owner's read bit when its mode forbids reading; OSError for anything else."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        add_mode(dir_fd, os.fsdecode(name), stat.S_IRUSR)
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", os.fsdecode(name))
    return fd


def _at(dir_fd: int | None) -> int:
    return dir_fd if dir_fd is not None else _CWD


_CWD = getattr(os, "AT_FDCWD", -100)


def open_beneath(root: str | bytes, rel: bytes) -> int:
    """A descriptor of the regular file rel below the directory root, opened one component
    at a time (any depth, no symlink followed at any level)."""
    *dirs, name = rel.split(b"/")
    fd = open_dir(None, root)
    try:
        for part in dirs:
            child = open_dir(fd, part)
            os.close(fd)
            fd = child
        return open_file(fd, name)
    finally:
        os.close(fd)


def read_prefix(fd: int, limit: int) -> tuple[bytes, int]:
    """At most limit bytes from the start of an open file, and the file's size."""
    size = os.fstat(fd).st_size
    blocks = []
    left = min(size, limit)
    while left > 0 and (block := os.read(fd, min(left, CHUNK))):
        blocks.append(block)
        left -= len(block)
    return b"".join(blocks), size


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _up(fd: int, parent: tuple[int, int]) -> int:
    """The parent of the directory fd, checked to be the one the walk came from."""
    up = os.open("..", DIR_FLAGS, dir_fd=fd)
    if _identity(up) != parent:
        os.close(up)
        raise OSError(errno.ESTALE, "the tree changed while it was walked")
    return up


class _Frame(NamedTuple):
    identity: tuple[int, int]
    prefix: bytes
    pending: list[str]  # subdirectories not entered yet


def walk(root: str | bytes) -> Iterator[Found]:
    """Every entry below root, depth first, never following symlinks, entering every
    directory (a directory that cannot be opened even after chmod is reported again as
    UNREADABLE). The caller may use ``found.dir_fd`` until it asks for the next entry."""
    fd = open_dir(None, root)
    frames: list[_Frame] = []
    prefix = b""
    try:
        while True:
            subdirs = []
            with os.scandir(fd) as entries:
                listing = list(entries)
            for entry in listing:
                kind = kind_of(entry)
                rel = prefix + os.fsencode(entry.name)
                if kind == DIR:
                    subdirs.append(entry.name)
                yield Found(rel, entry.name, kind, fd)
            subdirs.reverse()
            frames.append(_Frame(_identity(fd), prefix, subdirs))
            while frames:  # the next directory to list, or back up
                frame = frames[-1]
                if frame.pending:
                    name = frame.pending.pop()
                    try:
                        child = open_dir(fd, name)
                    except OSError:
                        yield Found(frame.prefix + os.fsencode(name), name, UNREADABLE, fd)
                        continue
                    os.close(fd)
                    fd, prefix = child, frame.prefix + os.fsencode(name) + b"/"
                    break
                frames.pop()
                if not frames:
                    return
                up = _up(fd, frames[-1].identity)
                os.close(fd)
                fd = up
    finally:
        os.close(fd)


def copy_tree(source: str, dest: str) -> list[bytes]:
    """Copy source's directories, regular files (with their modes, plus the owner's rw) and
    symlinks (not followed) into dest, which must not exist; returns the entries it left out:
    FIFOs, sockets, devices and unreadable directories, which are never opened."""
    os.mkdir(dest, 0o700)
    fd = open_dir(None, dest)
    here: list[bytes] = []  # the directory fd is, below dest
    left_out = []
    try:
        for found in walk(source):
            *parents, name = found.rel.split(b"/")
            common = 0
            while common < min(len(here), len(parents)) and here[common] == parents[common]:
                common += 1
            while len(here) > common:  # our own new tree: no one else changes it
                up = os.open("..", DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = up
                here.pop()
            for part in parents[len(here) :]:
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
                here.append(part)
            if found.kind == DIR:
                os.mkdir(name, 0o700, dir_fd=fd)
            elif found.kind == FILE:
                _copy_file(found, fd, name)
            elif found.kind == SYMLINK:
                os.symlink(os.readlink(found.name, dir_fd=found.dir_fd), name, dir_fd=fd)
            else:
                left_out.append(found.rel)
    finally:
        os.close(fd)
    return left_out


def _copy_file(found: Found, dest_fd: int, name: bytes) -> None:
    source = open_file(found.dir_fd, found.name)
    try:
        mode = stat.S_IMODE(os.fstat(source).st_mode) | stat.S_IRUSR | stat.S_IWUSR
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        target = os.open(name, flags, 0o600, dir_fd=dest_fd)
        try:
            os.fchmod(target, mode)
            while os.sendfile(target, source, None, CHUNK):
                pass
        finally:
            os.close(target)
    finally:
        os.close(source)


def disk_usage(roots: list[str]) -> int:
    """Bytes the trees take: per entry (roots included) the larger of its apparent size and
    its allocated blocks, so a sparse file counts at its full length. A root that is gone (an
    agent may delete its own workspace) takes nothing."""
    total = 0
    for root in roots:
        try:
            info = os.lstat(root)
        except FileNotFoundError:
            continue
        total += max(info.st_size, info.st_blocks * 512)
        for found in walk(root):
            if found.kind != UNREADABLE:
                info = os.stat(found.name, dir_fd=found.dir_fd, follow_symlinks=False)
                total += max(info.st_size, info.st_blocks * 512)
    return total


def remove_tree(path: str) -> list[str]:
    """Remove path and everything below it, whatever modes, depth and names it holds; never
    follows a symlink. Returns a message per entry it could not remove (none: all gone)."""
    parent, _, name = path.rstrip("/").rpartition("/")
    problems: list[str] = []
    try:
        parent_fd = open_dir(None, parent or "/")
        try:
            _remove_at(parent_fd, name, problems)
        finally:
            os.close(parent_fd)
    except FileNotFoundError:
        pass
    except OSError as error:
        problems.append(f"{error.strerror or error}")
    return [f"{path}: {problem}" for problem in problems]


def _printable(rel: bytes) -> str:
    """rel for a message: undecodable bytes and control characters escaped."""
    return repr(rel.decode("utf-8", "backslashreplace"))[1:-1]


def _unlink(dir_fd: int, name: str, is_dir: bool) -> None:
    """Remove dir_fd/name, adding the owner's rwx to dir_fd once if the kernel refuses."""
    remove = os.rmdir if is_dir else os.unlink
    try:
        remove(name, dir_fd=dir_fd)
    except PermissionError:
        os.fchmod(dir_fd, stat.S_IMODE(os.fstat(dir_fd).st_mode) | stat.S_IRWXU)
        remove(name, dir_fd=dir_fd)


def _clear(fd: int, prefix: bytes, problems: list[str]) -> list[str]:
    """Remove every entry of the directory fd but its subdirectories; their names."""
    subdirs = []
    with os.scandir(fd) as entries:
        listing = list(entries)
    for entry in listing:
        if kind_of(entry) == DIR:
            subdirs.append(entry.name)
            continue
        try:
            _unlink(fd, entry.name, False)
        except FileNotFoundError:
            pass
        except OSError as error:
            problems.append(f"{_printable(prefix + os.fsencode(entry.name))}: {error.strerror}")
    return subdirs


class _Level(NamedTuple):
    identity: tuple[int, int]
    name: str  # in its parent
    prefix: bytes  # its path below the tree's parent, with a trailing "/"
    pending: list[str]  # subdirectories not emptied yet


def _remove_at(parent_fd: int, name: str, problems: list[str]) -> None:
    """Empty and remove parent_fd/name, one directory descriptor open at a time."""
    if not stat.S_ISDIR(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode):
        _unlink(parent_fd, name, False)
        return
    fd = open_dir(parent_fd, name)
    prefix = os.fsencode(name) + b"/"
    levels = [_Level(_identity(fd), name, prefix, _clear(fd, prefix, problems))]
    try:
        while levels:
            level = levels[-1]
            if level.pending:  # down into the next subdirectory
                child = level.pending.pop()
                prefix = level.prefix + os.fsencode(child) + b"/"
                try:
                    below = open_dir(fd, child)
                except OSError as error:
                    problems.append(f"{_printable(prefix)}: {error.strerror}")
                    continue
                os.close(fd)
                fd = below
                levels.append(_Level(_identity(fd), child, prefix, _clear(fd, prefix, problems)))
                continue
            levels.pop()  # emptied: up, then remove it
            if levels:
                up = _up(fd, levels[-1].identity)
                os.close(fd)
                fd = up
            try:
                _unlink(fd if levels else parent_fd, level.name, True)
            except OSError as error:
                if error.errno != errno.ENOTEMPTY or not problems:  # else: reported below it
                    problems.append(f"{_printable(level.prefix)}: {error.strerror}")
    finally:
        os.close(fd)
