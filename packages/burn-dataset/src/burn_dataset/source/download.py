"""Checksummed, atomic downloads into the dataset cache directory."""

from __future__ import annotations

import hashlib
import os
import urllib.request
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from burn_dataset.errors import ChecksumMismatchError, DatasetUnavailableError

OFFLINE_ENV = "BURN_DATASET_OFFLINE"
DEFAULT_TIMEOUT = 5.0


def offline() -> bool:
    """Whether ``$BURN_DATASET_OFFLINE`` forbids downloads (set to anything but ``""``, ``0``,
    ``false``, ``no`` or ``off``)."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("", "0", "false", "no", "off")


def cache_dir() -> Path:
    """The cache root: ``$BURN_DATASET_CACHE``, else ``~/.cache/burn-dataset``."""
    env = os.environ.get("BURN_DATASET_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "burn-dataset"


@dataclass(frozen=True)
class RemoteFile:
    """A file to fetch: its name, and its expected digest.

    Args:
        name: the file name (appended to each mirror URL).
        digest: expected hex digest.
        algorithm: ``"sha256"`` or ``"md5"``.
    """

    name: str
    digest: str
    algorithm: str = "sha256"


def _download(url: str, remote: RemoteFile, dest: Path, timeout: float) -> None:
    """Stream ``url`` into a temporary file beside ``dest``, check it, rename it to ``dest``."""
    tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
    digest = hashlib.new(remote.algorithm)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as out:
            while chunk := resp.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != remote.digest.lower():
            raise ChecksumMismatchError(
                f"{url}: {remote.algorithm} is {digest.hexdigest()}, expected {remote.digest}"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def fetch_files(
    files: Sequence[RemoteFile],
    directory: Path,
    mirrors: Sequence[str],
    download: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Path]:
    """Make sure every file of ``files`` is in ``directory``, downloading the missing ones.

    A file already present (under its name, or its name without ``.gz``) is used as is;
    downloads are checked against their digest and written atomically.

    Args:
        files: the files needed.
        directory: where they live.
        mirrors: base URLs tried in order.
        download: whether missing files may be downloaded (never while `offline`).
        timeout: socket timeout, seconds: for connecting, and for each read that stalls (an
            unreachable mirror costs this much, not a whole download).

    Returns:
        The local path of each file, in order.

    Raises:
        DatasetUnavailableError: some files are missing and could not be downloaded; the message
            names them, the directory to put them in, and each failure.
    """
    paths: list[Path | None] = [_present(directory, f.name) for f in files]
    errors: list[str] = []
    if not download:
        blocked = " (downloads disabled)"
    elif offline():
        blocked = f" (downloads disabled: ${OFFLINE_ENV} is set)"
    else:
        blocked = ""
        directory.mkdir(parents=True, exist_ok=True)
    for k, remote in enumerate(files):
        if paths[k] is not None or blocked:
            continue
        for base in mirrors:
            url = base.rstrip("/") + "/" + remote.name
            try:
                _download(url, remote, directory / remote.name, timeout)
            except (OSError, ChecksumMismatchError) as e:
                errors.append(f"{url}: {e}")
                continue
            paths[k] = directory / remote.name
            break
    missing = [f.name for f, p in zip(files, paths, strict=True) if p is None]
    if missing:
        detail = blocked or "; download failures: " + " | ".join(errors)
        raise DatasetUnavailableError(
            f"missing files {missing}: put them (gzipped or not) in {directory}{detail}"
        )
    return [p for p in paths if p is not None]


def _present(directory: Path, name: str) -> Path | None:
    """The local copy of ``name`` (or of its un-gzipped form) in ``directory``, if any."""
    for candidate in (name, name.removesuffix(".gz")):
        if (directory / candidate).is_file():
            return directory / candidate
    return None
