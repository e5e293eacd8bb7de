#!/usr/bin/env python3
"""Makes Tests/PasskeyStoreIOTests/Fixtures/schema-v1.sqlite with a schema version 1 `passkey` binary.

Run once with the binary built from commit f50bce7 (the last commit before the CTAP 2.1 work, whose
stores are schema version 1). It starts `passkey serve --udp`, registers a discoverable passkey
(alice, example.com) and a server-side one (bob, example.org) through python-fido2's Ctap2, and stops.
The migration test opens the file with passphrase "fixture passphrase" and expects both passkeys.

Usage (from the repository root):
    PASSKEY_BIN=/path/to/old/passkey .venv/bin/python Tools/vectors/make_v1_store_fixture.py
"""

import hashlib
import os
import pathlib
import shutil
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "Tests/Interop"))
import conftest  # noqa: E402
from fido2.ctap2 import Ctap2  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parents[2] / "Tests/PasskeyStoreIOTests/Fixtures/schema-v1.sqlite"
conftest.PASSKEY_BIN = os.environ["PASSKEY_BIN"]
conftest.PASSPHRASE = "fixture passphrase"


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "passkeys.sqlite")
        server = conftest.Server(path)
        try:
            device = server.device()
            ctap = Ctap2(device)
            es256 = [{"type": "public-key", "alg": -7}]
            ctap.make_credential(
                hashlib.sha256(b"alice").digest(),
                {"id": "example.com", "name": "Example"},
                {"id": b"alice-id", "name": "alice", "displayName": "Alice"},
                es256,
                options={"rk": True, "uv": True},
            )
            ctap.make_credential(
                hashlib.sha256(b"bob").digest(),
                {"id": "example.org"},
                {"id": b"bob-id", "name": "bob"},
                es256,
            )
            device.close()
        finally:
            server.stop()
        for suffix in ("-wal", "-shm"):
            assert not os.path.exists(path + suffix) or os.path.getsize(path + suffix) == 0, suffix
        shutil.copyfile(path, OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
