"""A throwaway PostgreSQL on 127.0.0.1 on a free port: the tests' server and ``synapse-nb team dev-server``.

As root ``initdb`` refuses to run, so ``initdb`` and ``pg_ctl`` run as the ``postgres`` user through
``runuser -u postgres --`` on a folder under ``/tmp`` that user owns; as any other user they run directly.
Authentication is ``trust`` on loopback TCP and on a Unix socket inside the folder only: a development and test
server, never a shared one. The server binaries come from ``$PG_BINDIR``, ``PATH`` or
``/usr/lib/postgresql/*/bin`` (Debian's ``postgresql`` package).

>>> srv = PgServer.launch()          # doctest: +SKIP
>>> srv.url                           # doctest: +SKIP
'postgresql://postgres@127.0.0.1:54123/postgres'
>>> srv.destroy()                     # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from synapse_nb.errors import StoreError

__all__ = ["PgServer", "ServerUnavailable", "find_bindir"]


#: No PostgreSQL server binaries, or the server could not be started (the message says why).
ServerUnavailable = StoreError


def find_bindir() -> Path:
    """The folder holding initdb/pg_ctl: $PG_BINDIR, then PATH, then the newest /usr/lib/postgresql/*/bin."""
    env = os.environ.get("PG_BINDIR")
    if env and (Path(env) / "pg_ctl").exists():
        return Path(env)
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(os.path.realpath(on_path)).parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    raise ServerUnavailable(
        "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin; "
        "install them with `apt-get install -y postgresql` (Debian/Ubuntu) or set PG_BINDIR")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _is_root() -> bool:
    return os.geteuid() == 0


def _closed_to(base: Path, uid: int) -> Path | None:
    """The first folder above ``base`` that user ``uid`` may not pass through (no search permission), or None."""
    for parent in base.resolve().parents:
        if not parent.exists():
            continue  # made below, by root, with the default mode
        st = parent.stat()
        mode = st.st_mode & (0o100 if st.st_uid == uid else 0o001)
        if not mode:
            return parent
    return None


@dataclass
class PgServer:
    """One throwaway cluster: ``base`` holds ``data/`` (the cluster), the Unix socket and ``server.log``."""

    base: Path
    port: int
    bindir: Path
    durable: bool = False
    start_seconds: float = 0.0
    initdb_seconds: float = 0.0
    _owned: bool = field(default=True, repr=False)

    # -- paths / url ---------------------------------------------------------------------------------------
    @property
    def data(self) -> Path:
        return self.base / "data"

    @property
    def log(self) -> Path:
        return self.base / "server.log"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    # -- running commands as the right user -----------------------------------------------------------------
    def _run(self, args: list[str], *, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if _is_root():
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd="/")
        if check and proc.returncode != 0:
            tail = ""
            with contextlib.suppress(OSError):
                tail = self.log.read_text()[-2000:]
            raise ServerUnavailable(f"{' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()} "
                                    f"{proc.stdout.strip()}\n{tail}")
        return proc

    # -- lifecycle ------------------------------------------------------------------------------------------
    @classmethod
    def create(cls, base: str | Path | None = None, *, durable: bool = False) -> PgServer:
        """initdb a new cluster in ``base`` (a new temporary folder by default); does not start it."""
        bindir = find_bindir()
        if base is None:
            # as root the postgres user must reach the folder: $TMPDIR may be under /root (mode 700)
            base = Path(tempfile.mkdtemp(prefix="synapse-pg-", dir="/tmp" if _is_root() else None))
        base = Path(base)
        owner = None  # as root, the postgres user owns the cluster (initdb refuses root)
        if _is_root():
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise ServerUnavailable("running as root needs a 'postgres' system user to own the cluster "
                                        "(initdb refuses root); Debian's postgresql package creates it") from None
            closed = _closed_to(base, owner.pw_uid)  # initdb runs as that user: every folder above must let it pass
            if closed is not None:
                raise ServerUnavailable(
                    f"the 'postgres' user cannot reach {base}: {closed} is closed to other users (mode "
                    f"{closed.stat().st_mode & 0o777:o}); choose a folder under an open one (e.g. --dir "
                    f"/tmp/synapse-dev) or open it (chmod o+x {closed})")
        base.mkdir(parents=True, exist_ok=True)
        if owner is not None:
            os.chown(base, owner.pw_uid, owner.pw_gid)
        os.chmod(base, 0o700)
        srv = cls(base=base, port=0, bindir=bindir, durable=durable)
        t0 = time.perf_counter()
        srv._run(["initdb", "-D", str(srv.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
                  "--locale=C", "--no-instructions", *([] if durable else ["--no-sync"])])
        srv.initdb_seconds = time.perf_counter() - t0
        return srv

    def start(self, port: int | None = None, *, attempts: int = 5) -> PgServer:
        """pg_ctl start on ``port`` (a free one by default, retried if another process grabs it)."""
        opts = ["-c listen_addresses=127.0.0.1", f"-k {self.base}", "-c max_connections=60",
                "-c shared_buffers=64MB"]
        if not self.durable:
            # a throwaway test server: no fsync (an OS crash loses it). synchronous_commit stays on: a commit
            # is written to the kernel before it returns, so killing the server (-m immediate, kill -9)
            # loses no committed transaction -- the fault tests rely on that.
            opts += ["-c fsync=off", "-c full_page_writes=off"]
        last: Exception | None = None
        for _ in range(attempts):
            self.port = port or free_port()
            t0 = time.perf_counter()
            try:
                self._run(["pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60",
                           "-o", " ".join([f"-p {self.port}", *opts]), "start"])
            except ServerUnavailable as exc:
                last = exc
                if port is not None:
                    break
                continue
            self.start_seconds = time.perf_counter() - t0
            return self
        raise ServerUnavailable(f"could not start PostgreSQL: {last}")

    def stop(self, mode: str = "immediate") -> None:
        self._run(["pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop"], check=False)

    def destroy(self) -> None:
        self.stop()
        if self._owned:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    @classmethod
    def launch(cls, base: str | Path | None = None, *, durable: bool = False) -> PgServer:
        """create() + start()."""
        srv = cls.create(base, durable=durable)
        try:
            return srv.start()
        except BaseException:
            shutil.rmtree(srv.base, ignore_errors=True)
            raise
