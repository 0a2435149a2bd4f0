"""The run store: every fine-tuning run in one SQLite file under the data directory
(`<PTX_DATA_DIR or .ptx-data>/finetune_runs.sqlite`), so runs survive a restart.

A row holds the run's config, model (title, id, where its weights came from), device,
timings, the loss/accuracy history and the held-out result. A run is written when it
starts (status "running"), every few seconds while it trains, and when it ends ("done",
"cancelled", "diverged", "failed"). A row still "running" whose process is gone (the
server stopped mid-run) is marked "interrupted" the next time the store is opened, and a
clean interpreter exit marks its own unfinished runs the same way.

Disk problems (read-only folder, disk full, a corrupt file) raise `RunStoreError` with a
message that says what to do; they never crash the app.
"""

from __future__ import annotations

import atexit
import csv
import datetime as dt
import json
import os
import socket
import sqlite3
import threading
from pathlib import Path
from typing import Any

from engine import paths

FILENAME = "finetune_runs.sqlite"
SCHEMA_VERSION = 1

COLUMNS: dict[str, str] = {
    "run_id": "TEXT PRIMARY KEY",
    "created_at": "TEXT NOT NULL",
    "updated_at": "TEXT",
    "finished_at": "TEXT",
    "status": "TEXT NOT NULL",
    "task": "TEXT NOT NULL",
    "mode": "TEXT NOT NULL",
    "model": "TEXT",
    "model_id": "TEXT",
    "source": "TEXT",
    "device": "TEXT",
    "steps": "INTEGER",  # steps done
    "steps_requested": "INTEGER",
    "lr": "REAL",
    "seed": "INTEGER",
    "freeze_layers": "INTEGER",
    "eval_accuracy": "REAL",
    "eval_n": "INTEGER",
    "seconds": "REAL",
    "train_seconds": "REAL",
    "eval_seconds": "REAL",
    "load_seconds": "REAL",
    "message": "TEXT",
    "config": "TEXT",  # JSON
    "history": "TEXT",  # JSON list of {step, loss, accuracy, seconds}
    "val_history": "TEXT",  # JSON list of {step, accuracy}
    "pid": "INTEGER",
    "host": "TEXT",
}
JSON_FIELDS = ("config", "history", "val_history")
SUMMARY_FIELDS = ("run_id", "task", "mode", "steps", "eval_accuracy", "created_at", "status", "model", "source",
                  "device", "lr", "seed", "freeze_layers", "seconds", "eval_n", "message")


class RunStoreError(RuntimeError):
    """The run database cannot be read or written; the message says why and what to do."""


def now() -> str:
    """UTC time as ISO 8601 with seconds ("2026-11-30T05:12:03Z")."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _explain(exc: BaseException, path: Path) -> str:
    text = str(exc).lower()
    if "readonly" in text or "read-only" in text or isinstance(exc, PermissionError):
        why = "the folder or file is read-only"
    elif "disk is full" in text or "no space" in text or getattr(exc, "errno", None) == 28:
        why = "the disk is full"
    elif "not a database" in text or "malformed" in text:
        why = "the file is not a valid SQLite database (corrupt?)"
    elif "unable to open" in text:
        why = "the file cannot be opened there"
    else:
        why = str(exc)
    return (f"could not save or read fine-tuning runs in {path}: {why}. Free some space, or point "
            f"PTX_DATA_DIR at a writable folder and restart; training itself still works.")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunStore:
    """Runs in one SQLite file. Safe to use from several threads (one connection per call)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self._path = Path(path) if path else None
        self._ready_for: Path | None = None  # the file whose table exists (PTX_DATA_DIR may move)
        self._lock = threading.Lock()
        self._active: set[str] = set()

    @property
    def path(self) -> Path:
        if self._path is None:
            try:
                return paths.data_dir() / FILENAME
            except OSError as exc:
                raise RunStoreError(_explain(exc, Path(os.environ.get("PTX_DATA_DIR", ".ptx-data")))) from None
        return self._path

    # ------------------------------------------------------------------ plumbing
    def _connect(self) -> sqlite3.Connection:
        path = self.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(path, timeout=10)
            con.row_factory = sqlite3.Row
        except (sqlite3.Error, OSError) as exc:
            raise RunStoreError(_explain(exc, path)) from None
        return con

    def _execute(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        self._ensure()
        return self._run(sql, args)

    def _run(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        con = self._connect()
        try:
            with con:
                rows = con.execute(sql, args).fetchall()
            return rows
        except (sqlite3.Error, OSError) as exc:
            raise RunStoreError(_explain(exc, self.path)) from None
        finally:
            con.close()

    def _ensure(self) -> None:
        """Create the table on first use and mark runs whose process is gone as interrupted."""
        path = self.path
        if self._ready_for == path:
            return
        with self._lock:
            if self._ready_for == path:
                return
            cols = ", ".join(f"{name} {kind}" for name, kind in COLUMNS.items())
            self._run(f"CREATE TABLE IF NOT EXISTS runs ({cols})")
            have = {r["name"] for r in self._run("PRAGMA table_info(runs)")}
            for name, kind in COLUMNS.items():  # a newer schema adds columns to an old file
                if name not in have:
                    self._run(f"ALTER TABLE runs ADD COLUMN {name} {kind.replace('PRIMARY KEY', '')}")
            self._run(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._ready_for = path
        self.recover()

    # ------------------------------------------------------------------ writing
    def create(self, row: dict[str, Any]) -> None:
        """Insert a new run (status "running" unless given); marks it active in this process."""
        data = {"status": "running", "created_at": now(), "pid": os.getpid(), "host": socket.gethostname(), **row}
        data["updated_at"] = data["created_at"]
        self._write_row(data, insert=True)
        self._active.add(data["run_id"])

    def update(self, run_id: str, **fields: Any) -> None:
        """Change some fields of a run (JSON fields are encoded here)."""
        fields["updated_at"] = now()
        if fields.get("status") not in (None, "running"):
            fields.setdefault("finished_at", fields["updated_at"])
            self._active.discard(run_id)
        self._write_row({"run_id": run_id, **fields}, insert=False)

    def _write_row(self, data: dict[str, Any], insert: bool) -> None:
        data = {k: (json.dumps(v) if k in JSON_FIELDS and not isinstance(v, str) else v)
                for k, v in data.items() if k in COLUMNS}
        if insert:
            names = ", ".join(data)
            marks = ", ".join("?" for _ in data)
            self._execute(f"INSERT INTO runs ({names}) VALUES ({marks})", tuple(data.values()))
        else:
            run_id = data.pop("run_id")
            sets = ", ".join(f"{k} = ?" for k in data)
            self._execute(f"UPDATE runs SET {sets} WHERE run_id = ?", (*data.values(), run_id))

    def recover(self) -> int:
        """Mark "running" rows whose process is gone (or is this one, but no longer runs them)
        as "interrupted"; returns how many."""
        host, me = socket.gethostname(), os.getpid()
        changed = 0
        for row in self._execute("SELECT run_id, pid, host FROM runs WHERE status = 'running'"):
            if row["host"] != host:
                continue  # another machine's run: cannot tell
            pid = row["pid"] or -1
            gone = (pid == me and row["run_id"] not in self._active) or (pid != me and not _pid_alive(pid))
            if gone:
                self.update(row["run_id"], status="interrupted",
                            message="interrupted: the server stopped while this run was training; "
                                    "its history up to the last save is kept")
                changed += 1
        return changed

    def interrupt_active(self) -> None:
        """Mark this process's unfinished runs as interrupted (called at interpreter exit)."""
        for run_id in list(self._active):
            try:
                self.update(run_id, status="interrupted",
                            message="interrupted: the server stopped while this run was training")
            except RunStoreError:
                pass

    # ------------------------------------------------------------------ reading
    def get(self, run_id: str) -> dict[str, Any] | None:
        rows = self._execute("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        return _decode(rows[0]) if rows else None

    def list(self, task: str | None = None, limit: int = 500, full: bool = False) -> list[dict[str, Any]]:
        """Runs newest first (summary fields, or every field with full=True)."""
        sql = "SELECT * FROM runs" + (" WHERE task = ?" if task else "") + " ORDER BY created_at DESC, rowid DESC LIMIT ?"
        rows = self._execute(sql, ((task,) if task else ()) + (int(limit),))
        out = [_decode(r) for r in rows]
        return out if full else [{k: r.get(k) for k in SUMMARY_FIELDS} for r in out]

    def export_csv(self, target: Path) -> Path:
        """Every run (summary fields plus config) as CSV; returns the file written."""
        runs = self.list(full=True, limit=100_000)
        fields = [*SUMMARY_FIELDS, "steps_requested", "model_id", "train_seconds", "eval_seconds", "load_seconds",
                  "finished_at", "config"]
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("w", newline="", encoding="utf-8") as fh:
                writer = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
                writer.writeheader()
                for run in runs:
                    writer.writerow({**run, "config": json.dumps(run.get("config"))})
        except OSError as exc:
            raise RunStoreError(_explain(exc, target)) from None
        return target


def _decode(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    for key in JSON_FIELDS:
        try:
            out[key] = json.loads(out[key]) if out.get(key) else ([] if key != "config" else {})
        except (TypeError, ValueError):
            out[key] = [] if key != "config" else {}
    return out


_default: RunStore | None = None
_default_lock = threading.Lock()


def default_store() -> RunStore:
    """The process's store at `paths.data_dir()/finetune_runs.sqlite` (path read each call
    so PTX_DATA_DIR set by tests is honoured before first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = RunStore()
            atexit.register(_default.interrupt_active)
        return _default
