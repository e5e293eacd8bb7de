"""`passkey inspect qr --image`: QR codes drawn by an independent encoder (segno) read back through libpng, the
hand-written PGM parser and zbar, then decoded as hybrid URLs."""

import json
import os
import random
import subprocess

import cbor2
import pytest
import segno
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import PASSKEY_BIN

VECTORS = os.path.join(os.path.dirname(__file__), "..", "HybridTests", "Vectors", "hybrid.json")
with open(VECTORS) as file:
    QR = json.load(file)["qr_urls"][0]

EXPECTED = {
    "publicKey": QR["fields"]["0"],
    "secret": QR["fields"]["1"],
    "knownDomains": QR["fields"]["2"],
    "timestamp": QR["fields"]["3"],
    "stateAssisted": QR["fields"]["4"],
    "requestType": QR["fields"]["5"],
}


def digit_encode(data):
    """Hybrid digit encoding: 7-byte little-endian chunks as 17 digits, a short last chunk as fewer."""
    digits = ""
    for start in range(0, len(data), 7):
        chunk = data[start : start + 7]
        digits += str(int.from_bytes(chunk, "little")).zfill([0, 3, 5, 8, 10, 13, 15, 17][len(chunk)])
    return digits


def random_url(rng):
    """A FIDO:/ URL for a fresh P-256 key, as a client would show it, with the fields it expects back."""
    key = ec.generate_private_key(ec.SECP256R1())
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint)
    secret = bytes(rng.randrange(256) for _ in range(16))
    timestamp = rng.randrange(1_600_000_000, 2_000_000_000)
    request_type = rng.choice(["ga", "mc"])
    linking = rng.choice([True, False])
    cbor = cbor2.dumps({0: point, 1: secret, 2: 2, 3: timestamp, 4: linking, 5: request_type}, canonical=True)
    expected = {
        "publicKey": point.hex(),
        "secret": secret.hex(),
        "knownDomains": 2,
        "timestamp": timestamp,
        "stateAssisted": linking,
        "requestType": request_type,
    }
    return "FIDO:/" + digit_encode(cbor), expected


def matrix_rows(qrcode, scale=4, border=4):
    """segno's modules as rows of gray pixels, 0 dark and 255 light."""
    return [bytes(0 if dark else 255 for dark in row) for row in qrcode.matrix_iter(scale=scale, border=border)]


def write_pgm(path, rows, plain=False, maxval=255):
    height, width = len(rows), len(rows[0])
    header = f"{'P2' if plain else 'P5'}\n# segno {segno.__version__}\n{width} {height}\n{maxval}\n".encode()
    with open(path, "wb") as file:
        file.write(header)
        for row in rows:
            samples = [value * maxval // 255 for value in row]
            if plain:
                file.write((" ".join(map(str, samples)) + "\n").encode())
            elif maxval > 255:
                file.write(b"".join(sample.to_bytes(2, "big") for sample in samples))
            else:
                file.write(bytes(samples))


def side_by_side(*qrcodes):
    """One image holding several QR codes next to each other."""
    blocks = [matrix_rows(code) for code in qrcodes]
    height = max(len(block) for block in blocks)
    rows = []
    for index in range(height):
        row = b""
        for block in blocks:
            row += block[index] if index < len(block) else b"\xff" * len(block[0])
        rows.append(row)
    return rows


def inspect(*args):
    return subprocess.run(
        [PASSKEY_BIN, "inspect", "qr", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
    )


def inspect_json(path):
    result = inspect("--image", str(path), "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# segno's own encoder with its own mode choice (alphanumeric for a FIDO:/ URL) and forced byte mode, as
# PNGs of several kinds (1-bit gray, palette with transparency, colour) and as PGMs of each flavour.
IMAGE_KINDS = {
    "png": lambda code, path: code.save(str(path), kind="png", scale=4, border=4),
    "png scale 2": lambda code, path: code.save(str(path), kind="png", scale=2, border=4),
    "png dark blue on transparent": lambda code, path: code.save(
        str(path), kind="png", scale=4, border=4, dark="darkblue", light=None
    ),
    "png colour": lambda code, path: code.save(
        str(path), kind="png", scale=5, border=4, dark="#102040", light="#ffffe0", finder_dark="#400000"
    ),
    "pgm P5": lambda code, path: write_pgm(path, matrix_rows(code)),
    "pgm P5 16-bit": lambda code, path: write_pgm(path, matrix_rows(code), maxval=65535),
    "pgm P2": lambda code, path: write_pgm(path, matrix_rows(code), plain=True),
    "pgm P2 maxval 1": lambda code, path: write_pgm(path, matrix_rows(code), plain=True, maxval=1),
}


@pytest.mark.parametrize("kind", IMAGE_KINDS)
@pytest.mark.parametrize("mode", [None, "byte"])
def test_vector_url_from_segno_image(tmp_path, kind, mode):
    code = segno.make_qr(QR["url"], error="l", mode=mode)
    path = tmp_path / ("qr.png" if kind.startswith("png") else "qr.pgm")
    IMAGE_KINDS[kind](code, path)
    assert inspect_json(path) == EXPECTED


def test_random_urls_from_segno_images(tmp_path):
    rng = random.Random(0x51A6E)
    for index in range(8):
        url, expected = random_url(rng)
        code = segno.make_qr(url, error=rng.choice("lmqh"))
        path = tmp_path / f"{index}.png"
        code.save(str(path), kind="png", scale=3, border=4)
        assert inspect_json(path) == expected
        # The image gives what the URL itself gives.
        direct = inspect(url, "--json")
        assert direct.returncode == 0, direct.stderr
        assert json.loads(direct.stdout) == expected


def test_text_output_from_image(tmp_path):
    path = tmp_path / "qr.png"
    segno.make_qr(QR["url"], error="m").save(str(path), kind="png", scale=4)
    result = inspect("--image", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == inspect(QR["url"]).stdout
    assert "mc (makeCredential)" in result.stdout


def test_lower_case_prefix_survives_the_image(tmp_path):
    path = tmp_path / "qr.pgm"
    write_pgm(path, matrix_rows(segno.make_qr("fido:/" + QR["url"][6:], mode="byte")))
    assert inspect_json(path) == EXPECTED


def test_one_fido_code_among_others_is_used(tmp_path):
    path = tmp_path / "two.pgm"
    write_pgm(path, side_by_side(segno.make_qr("https://example.com/"), segno.make_qr(QR["url"])))
    assert inspect_json(path) == EXPECTED


@pytest.mark.parametrize(
    "contents, message",
    [
        ("not fido", "is not a FIDO:/ URL: \"https://example.com/login\""),
        ("two fido", "holds 2 FIDO:/ QR codes; crop the image to one"),
        ("two others", "none of the 2 QR codes in"),
        ("blank", "no QR code found in "),
        ("text", "is not a PNG or PGM image"),
        ("truncated png", "is not a valid PNG image"),
        ("truncated pgm", "is not a valid PGM image: truncated raster"),
        ("huge pgm", "exceeds the limit of 67108864 pixels"),
        ("zero pgm", "image of 0×10 pixels is empty"),
        ("bad fido", "digits are invalid"),
    ],
)
def test_images_that_give_no_single_hybrid_url(tmp_path, contents, message):
    path = tmp_path / "image"
    if contents == "not fido":
        write_pgm(path, matrix_rows(segno.make_qr("https://example.com/login")))
    elif contents == "two fido":
        rng = random.Random(2)
        write_pgm(path, side_by_side(segno.make_qr(QR["url"]), segno.make_qr(random_url(rng)[0])))
    elif contents == "two others":
        write_pgm(path, side_by_side(segno.make_qr("hello"), segno.make_qr("world")))
    elif contents == "blank":
        write_pgm(path, [b"\xff" * 100] * 80)
    elif contents == "text":
        path.write_text("FIDO:/123\n")
    elif contents == "truncated png":
        segno.make_qr(QR["url"]).save(str(path), kind="png", scale=4)
        path.write_bytes(path.read_bytes()[:-40])
    elif contents == "truncated pgm":
        write_pgm(path, matrix_rows(segno.make_qr(QR["url"])))
        path.write_bytes(path.read_bytes()[:-1])
    elif contents == "huge pgm":
        path.write_bytes(b"P5\n100000 100000\n255\n" + b"\0" * 100)
    elif contents == "zero pgm":
        path.write_bytes(b"P5\n0 10\n255\n")
    elif contents == "bad fido":
        write_pgm(path, matrix_rows(segno.make_qr("FIDO:/1234")))
    result = inspect("--image", str(path), "--json")
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("args", [[], ["--image", "x.png", QR["url"]]])
def test_exactly_one_of_url_and_image(args):
    result = inspect(*args)
    assert result.returncode == 64
    assert result.stderr == "passkey: give exactly one of a URL and --image (see `passkey inspect qr --help`)\n"


def test_missing_image_file(tmp_path):
    result = inspect("--image", str(tmp_path / "missing.png"))
    assert result.returncode != 0
    assert "cannot read" in result.stderr and "No such file or directory" in result.stderr
