"""docs/scale-out.md's TLS example, run: a Redis that speaks TLS only, with a certificate
signed by a CA of our own and client certificates required (mutual TLS), reached with
`rediss://USER:PASSWORD@HOST:PORT/DB?ssl_ca_certs=...&ssl_certfile=...&ssl_keyfile=...`
as an ACL user allowed rerankit's keys only; and what the errors say when the CA or the
client certificate is missing (an SRE had to guess redis-py's query parameters)."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from redis_server import free_port, redis_binary
from rerankit.cache import AnswerCache, JudgmentCache
from rerankit.cli import main


def _openssl(*args: str, cwd) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory):
    """(port, folder of ca.crt, client.crt, client.key): a TLS-only Redis with an ACL user
    ``rerankit`` (password ``pw``) that may touch ``rerankit:*`` keys only."""
    pytest.importorskip("redis", reason="the Redis cache needs the 'redis' extra")
    if redis_binary() is None or shutil.which("openssl") is None:
        pytest.skip("needs redis-server (or valkey-server) and openssl")
    d = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.crt", "-days", "2", "-subj", "/CN=test-ca", cwd=d)  # fmt: skip
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, extra in (("server", ["-extfile", "san.ext"]), ("client", [])):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
                 f"{name}.csr", "-subj", f"/CN={name}", cwd=d)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", *extra, cwd=d)  # fmt: skip
    port = free_port()
    proc = subprocess.Popen(
        [redis_binary(), "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", "server.crt", "--tls-key-file", "server.key",
         "--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "yes",
         "--save", "", "--appendonly", "no", "--dir", str(d)],
        cwd=d, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    import redis

    admin = redis.Redis.from_url(f"rediss://127.0.0.1:{port}/0?{_certs(d)}", socket_timeout=5)
    deadline = time.monotonic() + 30
    while True:
        try:
            admin.ping()
            break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise
            time.sleep(0.05)
    # the ACL of docs/scale-out.md: rerankit's keys, and the commands it sends
    acl = "~rerankit:* +@read +@write +@keyspace +@scripting +@connection +info"
    admin.execute_command("ACL", "SETUSER", "rerankit", "on", ">pw", *acl.split())
    yield port, d
    proc.terminate()
    proc.wait(timeout=30)


def _certs(d) -> str:
    return f"ssl_ca_certs={d}/ca.crt&ssl_certfile={d}/client.crt&ssl_keyfile={d}/client.key"


def test_tls_with_our_own_ca_a_client_certificate_and_an_acl_user(tls_redis, capsys):
    port, d = tls_redis
    url = f"rediss://rerankit:pw@127.0.0.1:{port}/0?{_certs(d)}"
    judgments = JudgmentCache(url=url)
    judgments.put("k", {"score": 7})
    assert judgments.get("k") == {"score": 7}
    answers = AnswerCache(url=url)
    token = answers.claim("fp:-:q", 5)
    assert token  # claimed (SET NX PX), then released (EVAL): the ACL allows both
    answers.put("fp:-:q", b"answer")
    answers.release("fp:-:q", token)
    assert answers.get("fp:-:q") == b"answer" and not answers.claimed("fp:-:q")
    assert main(["cache", "info", "--url", url]) == 0
    out = capsys.readouterr().out
    assert "judgments: rediss://rerankit:***@127.0.0.1" in out and "1 entry" in out
    assert main(["cache", "clear", "--url", url]) == 0
    assert "cleared answers" in capsys.readouterr().out


def test_a_missing_ca_or_client_certificate_says_which_url_option_to_add(tls_redis, capsys):
    port, d = tls_redis
    bare = f"rediss://rerankit:pw@127.0.0.1:{port}/0"
    assert main(["cache", "info", "judgments", "--url", bare]) == 1
    said = capsys.readouterr().err
    assert "CERTIFICATE_VERIFY_FAILED" in said and "add ?ssl_ca_certs=/path/to/ca.crt" in said
    assert main(["cache", "info", "judgments", "--url", f"{bare}?ssl_ca_certs={d}/ca.crt"]) == 1
    said = capsys.readouterr().err
    assert "&ssl_certfile=/path/to/client.crt&ssl_keyfile=/path/to/client.key" in said, said
