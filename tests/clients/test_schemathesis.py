"""The schemathesis OpenAPI fuzzer against /openapi.json of a fresh memvault: every check,
a bounded number of examples per operation, and 0 failures.

The fuzz tenant's tier gets a limit far above what the run sends, so no 429 interrupts it
(the 429 response is still documented and checked by the integration tests). Webhook
private targets stay forbidden, so every fuzzed webhook URL is refused with 422 (and the
machine has no outside network: a fuzzed hostname does not resolve, also 422) rather than
posted to.

Tuning: ``MEMVAULT_SCHEMATHESIS_EXAMPLES`` (default 25) examples per operation and phase;
``MEMVAULT_SCHEMATHESIS_SEED`` to replay a run. The JUnit report and the server log are
kept under the module's temp dir and printed on failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import new_tenant

MAX_EXAMPLES = int(os.environ.get("MEMVAULT_SCHEMATHESIS_EXAMPLES", "25"))
RUN_TIMEOUT_S = 1800

# The per-operation exceptions (rotate-key is not fuzzed: it would revoke the run's own
# key), each with its reason.
CONFIG = Path(__file__).parent / "schemathesis.toml"


def schemathesis_binary() -> Path:
    bin_dir = Path(sys.executable).parent
    for name in ("st", "schemathesis"):
        candidate = bin_dir / name
        if candidate.exists():
            return candidate
    pytest.fail(f"schemathesis is not installed next to {sys.executable}")


@pytest.fixture(scope="module")
def fuzz_server(start_server):
    return start_server(
        {
            # A TOML inline table: the tier new_tenant() gives the fuzz tenant.
            "MEMVAULT__RATE_LIMIT__TIERS": "{pro = 1000000}",
            "MEMVAULT__WEBHOOKS__ALLOW_PRIVATE_TARGETS": "false",
            # With a secret the internal embed answers 401 to the fuzzer (which never has
            # it) rather than 503 (off), which schemathesis counts as a server error.
            "MEMVAULT__INTERNAL__EMBED_SECRET": "schemathesis-never-sends-this-secret",
            "MEMVAULT__EMAIL__INBOUND_SECRET": "schemathesis-never-sends-this-one-either",
        }
    )


def test_schemathesis_finds_no_failures(fuzz_server, tmp_path):
    key = new_tenant(fuzz_server, tier="pro")
    junit = tmp_path / "schemathesis-junit.xml"
    command = [
        str(schemathesis_binary()),
        "--config-file",
        str(CONFIG),
        "run",
        f"{fuzz_server.base_url}/openapi.json",
        "--url",
        fuzz_server.base_url,
        "--max-examples",
        str(MAX_EXAMPLES),
        "--workers",
        "1",
        "--header",
        f"Authorization: Bearer {key}",
        "--suppress-health-check",
        "all",
        "--request-timeout",
        "60",
        "--no-color",
        "--report",
        "junit",
        "--report-junit-path",
        str(junit),
        "--generation-database",
        "none",
    ]
    if seed := os.environ.get("MEMVAULT_SCHEMATHESIS_SEED"):
        command += ["--seed", seed]
    printable = " ".join(
        part if "Bearer" not in part else "'Authorization: Bearer <tenant key>'" for part in command
    )
    print(f"\n$ {printable}")
    started = time.monotonic()
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        cwd=tmp_path,  # whatever schemathesis writes stays out of the repository
        env={**os.environ, "NO_COLOR": "1"},
    )
    elapsed = time.monotonic() - started
    output = result.stdout + result.stderr
    summary = [
        line
        for line in output.splitlines()
        if re.search(r"(API operations|test cases|failures|errors|passed|Seed|Test Phase)", line, re.I)
    ]
    print("\n".join(summary[-30:]))
    print(f"schemathesis finished in {elapsed:.0f} s with exit code {result.returncode}")
    if result.returncode != 0:
        log = Path(fuzz_server.data_dir.name) / "server.log"
        server_log = log.read_text(errors="replace")[-4000:] if log.exists() else ""
        pytest.fail(
            f"schemathesis exited {result.returncode}:\n{output[-30000:]}\n"
            f"--- server log (tail) ---\n{server_log}"
        )
