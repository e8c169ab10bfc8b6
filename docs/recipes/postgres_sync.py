#!/usr/bin/env python3
"""Sync a Postgres table into a memvault collection: the self-hosted recipe for the
`postgres` provider (memvault does not hold database credentials server-side).

Reads the rows changed since the stored cursor (a timestamp column), oldest first, in
batches: new rows go to the bulk endpoint, rows seen before are patched in place (the state
file maps each row id to its memory id), and the cursor moves only after a batch was stored,
so a crash re-sends at most one batch. Each memory has source "postgres" and metadata
naming the row (`table`, `row_id`, `updated_at`).

    pip install "psycopg[binary]>=3.1" httpx
    MEMVAULT_URL=http://127.0.0.1:8420 MEMVAULT_KEY=mv_... \\
    DATABASE_URL=postgresql://user:pass@db/app \\
    python3 postgres_sync.py --table notes --id-column id --text-column body \\
        --updated-column updated_at --collection notes [--container-tag crm]

Run it from cron (every few minutes); the cursor and the row-to-memory map are kept in
`--state` (default `.memvault-postgres-<table>.json`). Rows deleted in the database are
removed with `--full` (now and then): it lists the table's ids and deletes the memories of
vanished rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import httpx
import psycopg
from psycopg import sql

BATCH = 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", required=True)
    parser.add_argument("--id-column", default="id")
    parser.add_argument("--text-column", required=True)
    parser.add_argument("--updated-column", default="updated_at")
    parser.add_argument("--collection", required=True)
    parser.add_argument("--container-tag")
    parser.add_argument("--state")
    parser.add_argument("--full", action="store_true", help="also delete memories of rows that are gone")
    args = parser.parse_args()

    base = os.environ.get("MEMVAULT_URL", "http://127.0.0.1:8420").rstrip("/")
    key = os.environ["MEMVAULT_KEY"]
    state_path = Path(args.state or f".memvault-postgres-{args.table}.json")
    state = json.loads(state_path.read_text()) if state_path.exists() else {"cursor": None, "ids": {}}
    client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120)
    memories = f"/v1/memory/collections/{args.collection}/memories"

    def save() -> None:
        temporary = state_path.with_suffix(".tmp")
        temporary.write_text(json.dumps(state))
        temporary.replace(state_path)  # atomic: a crash keeps the old state

    columns = {"id": sql.Identifier(args.id_column), "text": sql.Identifier(args.text_column),
               "updated": sql.Identifier(args.updated_column), "table": sql.Identifier(args.table)}
    # Keyset pagination on (updated, id): rows sharing a timestamp are never skipped.
    since = sql.SQL("SELECT {id}::text, {text}, {updated} FROM {table} WHERE ({updated}, {id}::text) > (%s, %s) "
                    "ORDER BY {updated}, {id}::text LIMIT %s").format(**columns)
    everything = sql.SQL("SELECT {id}::text, {text}, {updated} FROM {table} "
                         "ORDER BY {updated}, {id}::text LIMIT %s").format(**columns)
    sent = 0
    with psycopg.connect(os.environ["DATABASE_URL"]) as db:
        while True:
            cursor = state["cursor"]
            rows = (db.execute(since, (cursor[0], cursor[1], BATCH)) if cursor else db.execute(everything, (BATCH,))).fetchall()
            if not rows:
                break
            fresh = []
            for row_id, text, updated in rows:
                if not text:
                    continue
                metadata = {"table": args.table, "row_id": row_id, "updated_at": updated.isoformat()}
                memory_id = state["ids"].get(row_id)
                if memory_id:  # an edited row: its memory is updated in place
                    patched = client.patch(f"{memories}/{memory_id}", json={"text": str(text), "metadata": metadata})
                    if patched.status_code != 404:
                        patched.raise_for_status()
                        continue
                fresh.append((row_id, {"text": str(text), "source": "postgres",
                                       "container_tag": args.container_tag, "metadata": metadata}))
            if fresh:
                created = client.post(f"{memories}/bulk", json=[item for _, item in fresh])
                created.raise_for_status()
                for (row_id, _), memory in zip(fresh, created.json()["memories"]):
                    state["ids"][row_id] = memory["id"]
            state["cursor"] = [rows[-1][2].isoformat(), rows[-1][0]]
            save()  # only after the batch was stored
            sent += len(rows)
            if len(rows) < BATCH:
                break
        if args.full:
            live = {row[0] for row in db.execute(sql.SQL("SELECT {id}::text FROM {table}").format(**columns))}
            for row_id in [row_id for row_id in state["ids"] if row_id not in live]:
                client.delete(f"{memories}/{state['ids'].pop(row_id)}")
            save()
    cursor = state["cursor"]
    print(f"sent {sent} rows; cursor {cursor}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
