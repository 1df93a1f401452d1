"""The files the settings name, read at start-up as the hook will read them: the token file, and
the TLS certificate chain and its key as ssl loads them. Each check says what is wrong, or None."""

import ssl
from pathlib import Path


class _Encrypted(Exception):
    """OpenSSL asked for the key's pass phrase: the hook has none to give."""


def token_problem(path: Path) -> str | None:
    """What keeps the file at `path` from holding a bearer token (app/service/auth.py)."""
    try:
        token = path.read_text().strip()
    except UnicodeDecodeError:
        return "is not text: it must hold the token alone"
    except OSError as err:
        return f"cannot be read: {err.strerror}"
    if not token:
        return "is empty: write the token in it, or unset it to turn authentication off"
    return None


def certificate_problem(path: Path) -> str | None:
    """What keeps the file at `path` from being a PEM certificate chain."""
    try:
        text = path.read_text(encoding="ascii")
    except UnicodeDecodeError:
        return "is not PEM (a binary file, DER perhaps: `openssl x509 -inform der` converts it)"
    except OSError as err:
        return f"cannot be read: {err.strerror}"
    try:
        ssl.create_default_context().load_verify_locations(cadata=text)
    except ssl.SSLError:
        return "holds no PEM certificate (-----BEGIN CERTIFICATE-----) that ssl can read"
    return None


def key_problem(cert: Path, key: Path) -> str | None:
    """What keeps the file at `key` from being the private key of the certificate at `cert`
    (itself a PEM certificate chain), loaded as uvicorn loads them."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key, password=_no_pass_phrase)
    except _Encrypted:
        return "is encrypted: the hook takes an unencrypted key (`openssl pkey` decrypts it)"
    except ssl.SSLError as err:
        if err.reason == "KEY_VALUES_MISMATCH":
            return "is not the key of MXJOB_TLS_CERT_FILE's certificate"
        return "holds no PEM private key that ssl can read"
    except OSError as err:
        return f"cannot be read: {err.strerror}"
    return None


def _no_pass_phrase() -> str:
    # Without this, OpenSSL would prompt for the pass phrase on the terminal.
    raise _Encrypted
