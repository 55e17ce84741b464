"""Fixtures shared by the real-client tests: the running gateway run.sh started, and the CLI."""

import json
import os
import subprocess
from decimal import Decimal

import pytest


def cli(*args: str) -> str:
    """Runs the tollgate CLI against the suite's database and returns its stdout."""
    out = subprocess.run(
        [os.environ["TOLLGATE_BIN"], *args, "--database-url", os.environ["TOLLGATE_DATABASE_URL"]],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


def new_key(name: str, balance: str) -> str:
    """Creates an account with its own key."""
    return cli("keys", "create", "--name", name, "--balance", balance).strip()


def account(name: str) -> dict:
    """`keys show --json`: balance, held, available, open holds, usage by model, ..."""
    return json.loads(cli("keys", "show", name, "--json"))


def balance(name: str) -> Decimal:
    return Decimal(account(name)["balance"])


@pytest.fixture
def base_url() -> str:
    return os.environ["TOLLGATE_BASE_URL"]


@pytest.fixture
def key() -> str:
    return os.environ["TOLLGATE_KEY"]
