"""Throwaway certificates and keys for a loopback API server: a CA, a serving cert, an SA key."""

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=2)
SERVING_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    service_account_key: Path
    service_account_pub: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: str,
    issuer: str,
    public_key: ec.EllipticCurvePublicKey | rsa.RSAPublicKey,
    validity: datetime.timedelta = VALIDITY,
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + validity)
    )


def _ca(key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    return (
        _builder("mxjob-test-ca", "mxjob-test-ca", key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .sign(key, hashes.SHA256())
    )


def _serving(
    key: ec.EllipticCurvePrivateKey, ca_key: ec.EllipticCurvePrivateKey
) -> x509.Certificate:
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in SERVING_NAMES]
    names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    return (
        _builder("kube-apiserver", "mxjob-test-ca", key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)
    return path


def _write_cert(path: Path, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def make_pki(directory: Path) -> Pki:
    """Write a fresh CA, a serving cert for 127.0.0.1 and a service-account key pair."""
    ca_key, serving_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sa_pub = sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (directory / "sa.pub").write_bytes(sa_pub)
    return Pki(
        ca_cert=_write_cert(directory / "ca.crt", _ca(ca_key)),
        serving_cert=_write_cert(directory / "apiserver.crt", _serving(serving_key, ca_key)),
        serving_key=_write_key(directory / "apiserver.key", serving_key),
        service_account_key=_write_key(directory / "sa.key", sa_key),
        service_account_pub=directory / "sa.pub",
    )


@dataclass(frozen=True)
class WebhookPki:
    """A webhook server's CA and serving pair, PEM-encoded (as a Secret of `kubernetes.io/tls`
    type holds them: ca.crt, ca.key, tls.crt, tls.key)."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes


def _pem_rsa_key(key: rsa.RSAPrivateKey) -> bytes:
    """PKCS#1 (`RSA PRIVATE KEY`), the one form a cert-controller rotator reads a CA key in."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def webhook_pki(
    ca_name: str, dns_names: tuple[str, ...], validity: datetime.timedelta
) -> WebhookPki:
    """A CA named `ca_name` (its subject and its one DNS name) and a serving cert it signs for
    `dns_names` and 127.0.0.1, both valid for `validity`, RSA keys in PKCS#1."""
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(ca_name)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in dns_names]
    names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    serving = (
        _builder(dns_names[0], ca_name, key.public_key(), validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return WebhookPki(
        ca.public_bytes(pem), _pem_rsa_key(ca_key), serving.public_bytes(pem), _pem_rsa_key(key)
    )
