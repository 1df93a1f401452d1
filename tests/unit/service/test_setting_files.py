"""The files the settings name are read at start-up, as the hook reads them: a token file that
holds no token, a TLS certificate that is not PEM, a key that is not the certificate's or is
encrypted, each stop `serve` with one line naming its variable and exit 2, never a traceback."""

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from app.service.errors import SettingsError
from app.service.settings import Settings, from_env
from tests.support import REPO
from tests.support.servers import Tls, self_signed


def der(tls: Tls, folder: Path) -> dict[str, Path]:
    path = folder / "tls.der"
    certificate = x509.load_pem_x509_certificate(tls.cert.read_bytes())
    path.write_bytes(certificate.public_bytes(serialization.Encoding.DER))
    return {"MXJOB_TLS_CERT_FILE": path, "MXJOB_TLS_KEY_FILE": tls.key}


def written(text: str, variable: str) -> Callable[[Tls, Path], dict[str, Path]]:
    """`variable` set to a file holding `text`, beside the good other half of a TLS pair."""

    def files(tls: Tls, folder: Path) -> dict[str, Path]:
        path = folder / "written"
        path.write_text(text)
        good = {"MXJOB_TLS_CERT_FILE": tls.cert, "MXJOB_TLS_KEY_FILE": tls.key}
        pair = good if variable in good else {}
        return pair | {variable: path}

    return files


def other_key(tls: Tls, folder: Path) -> dict[str, Path]:
    (folder / "other").mkdir()
    return {
        "MXJOB_TLS_CERT_FILE": tls.cert,
        "MXJOB_TLS_KEY_FILE": self_signed(folder / "other").key,
    }


def encrypted_key(tls: Tls, folder: Path) -> dict[str, Path]:
    key = serialization.load_pem_private_key(tls.key.read_bytes(), None)
    path = folder / "encrypted.key"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"pass phrase"),
        )
    )
    return {"MXJOB_TLS_CERT_FILE": tls.cert, "MXJOB_TLS_KEY_FILE": path}


def binary_token(tls: Tls, folder: Path) -> dict[str, Path]:
    path = folder / "token"
    path.write_bytes(b"\xff\xfe\x00token")
    return {"MXJOB_AUTH_TOKEN_FILE": path}


# Each bad file (made in a folder beside a real certificate and key) and the rule its line says.
BAD_FILES = [
    pytest.param(written("", "MXJOB_AUTH_TOKEN_FILE"), "MXJOB_AUTH_TOKEN_FILE",
                 "is empty: write the token in it, or unset it to turn authentication off", id="token-empty"),
    pytest.param(written(" \n\t\n", "MXJOB_AUTH_TOKEN_FILE"), "MXJOB_AUTH_TOKEN_FILE",
                 "is empty: write the token in it, or unset it to turn authentication off", id="token-blank"),
    pytest.param(binary_token, "MXJOB_AUTH_TOKEN_FILE",
                 "is not text: it must hold the token alone", id="token-binary"),
    pytest.param(written("not a certificate\n", "MXJOB_TLS_CERT_FILE"), "MXJOB_TLS_CERT_FILE",
                 "holds no PEM certificate (-----BEGIN CERTIFICATE-----) that ssl can read", id="cert-text"),
    pytest.param(written("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n",
                         "MXJOB_TLS_CERT_FILE"), "MXJOB_TLS_CERT_FILE",
                 "holds no PEM certificate (-----BEGIN CERTIFICATE-----) that ssl can read", id="cert-garbled"),
    pytest.param(der, "MXJOB_TLS_CERT_FILE",
                 "is not PEM (a binary file, DER perhaps: `openssl x509 -inform der` converts it)", id="cert-der"),
    pytest.param(written("not a key\n", "MXJOB_TLS_KEY_FILE"), "MXJOB_TLS_KEY_FILE",
                 "holds no PEM private key that ssl can read", id="key-text"),
    pytest.param(other_key, "MXJOB_TLS_KEY_FILE",
                 "is not the key of MXJOB_TLS_CERT_FILE's certificate", id="key-of-another"),
    pytest.param(encrypted_key, "MXJOB_TLS_KEY_FILE",
                 "is encrypted: the hook takes an unencrypted key (`openssl pkey` decrypts it)", id="key-encrypted"),
]  # fmt: skip


def bad_files(make: Callable[[Tls, Path], dict[str, Path]], folder: Path) -> dict[str, str]:
    tls = self_signed(folder)
    return {name: str(path) for name, path in make(tls, folder).items()}


@pytest.mark.parametrize(("make", "variable", "rule"), BAD_FILES)
def test_a_bad_file_is_one_line_naming_its_variable(
    make: Callable[[Tls, Path], dict[str, Path]], variable: str, rule: str, tmp_path: Path
) -> None:
    env = bad_files(make, tmp_path)
    with pytest.raises(SettingsError) as raised:
        from_env(env)
    assert str(raised.value) == f"{variable}={env[variable]!r}: {rule}"


def test_a_real_certificate_key_and_token_are_taken(tmp_path: Path) -> None:
    tls = self_signed(tmp_path)
    (tmp_path / "token").write_text("s3cret\n")
    env = {"MXJOB_TLS_CERT_FILE": tls.cert, "MXJOB_TLS_KEY_FILE": tls.key}
    env["MXJOB_AUTH_TOKEN_FILE"] = tmp_path / "token"
    taken = from_env({name: str(path) for name, path in env.items()})
    assert taken == Settings(
        tls_cert_file=tls.cert, tls_key_file=tls.key, auth_token_file=tmp_path / "token"
    )


def serve(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MXJOB_")}
    return subprocess.run(
        [sys.executable, "-m", "app", "serve", "--port", "0"],
        cwd=REPO, env=clean | env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.slow  # the real command in a process of its own: half a second or more
@pytest.mark.parametrize(
    ("make", "variable", "rule"),
    [
        case
        for case in BAD_FILES
        if case.id in {"token-empty", "cert-der", "key-of-another", "key-encrypted"}
    ],
)
def test_serve_stops_on_a_bad_file_with_one_line_and_exit_2(
    make: Callable[[Tls, Path], dict[str, Path]], variable: str, rule: str, tmp_path: Path
) -> None:
    """The real command: nothing on stdout, one line on stderr, no prompt for a pass phrase."""
    env = bad_files(make, tmp_path)
    done = serve(env)
    line = f"python -m app serve: {variable}={env[variable]!r}: {rule}\n"
    assert (done.returncode, done.stdout, done.stderr) == (2, "", line)


@pytest.mark.slow  # the real command in a process of its own: half a second or more
def test_serve_stops_on_a_missing_file_with_one_line_and_exit_2(tmp_path: Path) -> None:
    tls = self_signed(tmp_path)
    done = serve(
        {"MXJOB_TLS_CERT_FILE": str(tls.cert), "MXJOB_TLS_KEY_FILE": str(tmp_path / "gone")}
    )
    line = (
        f"python -m app serve: MXJOB_TLS_KEY_FILE='{tmp_path / 'gone'}': must be a readable file\n"
    )
    assert (done.returncode, done.stderr) == (2, line)
