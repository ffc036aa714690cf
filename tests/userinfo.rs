//! Userinfo in a request URL (`http://user:pw@host/`): removed before anything else sees the
//! target, so the origin never gets it (in `Host` or the request line) and the access log never
//! holds it, for plain requests, CONNECT and requests inside an intercepted tunnel; a target
//! whose userinfo cannot be cut off is refused. Run through the `pith` binary, whose log is what
//! an operator reads.

use std::sync::Arc;

use base64::Engine;
use tokio::io::{AsyncWriteExt, BufReader};

use crate::common::binary::Served;
use crate::common::raw::{read_response, GUARD};
use crate::common::origin::Received;
use crate::common::*;

const SECRET: &str = "s3cretpw";

/// Asserts that nothing the origin received carries the userinfo.
fn assert_clean(received: &[Received]) {
    assert!(!received.is_empty(), "the origin was reached");
    for r in received {
        assert!(!r.uri.to_string().contains('@') && !r.uri.to_string().contains(SECRET), "request line: {}", r.uri);
        for (name, value) in &r.headers {
            let value = String::from_utf8_lossy(value.as_bytes());
            assert!(!value.contains(SECRET) && !value.contains("user@") && !value.contains("user:"), "{name}: {value}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn userinfo_is_stripped_never_forwarded_and_never_logged() {
    let plain = Origin::new().route("/", |_| reply(&[("content-type", "text/plain")], "hello")).run().await;
    let (tls_origin, cert) = Origin::new().route("/", |_| reply(&[("content-type", "text/plain")], "hello tls")).run_tls().await;
    let dir = tempfile::tempdir().unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
    std::fs::write(dir.path().join("root.pem"), format!("-----BEGIN CERTIFICATE-----\n{b64}\n-----END CERTIFICATE-----\n")).unwrap();
    let config = dir.path().join("proxy.toml");
    std::fs::write(
        &config,
        "[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"pass\"\n[upstream]\nconnect_ports = []\nextra_root_certificates = [\"root.pem\"]\n[intercept]\nalways = [\"localhost\"]\nca_dir = \"ca\"\n",
    )
    .unwrap();
    let mut served = Served::start(&config, &[]);
    let pith = served.addrs[0];
    let port = plain.addr.port();

    // Absolute-form, with the userinfo in the Host header too.
    let target = format!("user:{SECRET}@127.0.0.1:{port}");
    let resp = exchange(pith, format!("GET http://{target}/ HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello"));
    assert_eq!(plain.last().header("host"), Some(format!("127.0.0.1:{port}")));

    // An `@` whose remainder is no authority (found by the `head` fuzz target): refused, and
    // the log names no part of the authority.
    for malformed in [format!("http://[{SECRET}@:]:{port}/"), format!("http://[user@:]:{port}/")] {
        let resp = exchange(pith, format!("GET {malformed} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes()).await;
        assert_eq!(resp.status, 400, "{malformed}");
    }
    served.wait_for("url=(malformed authority)");

    // A blind tunnel named with userinfo; the tunnel closes when the client does.
    let mut tunnel = RawClient::connect(pith).await;
    tunnel.send(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await;
    assert_eq!(tunnel.read_response(true).await.status, 200);
    let mut tunnel = tunnel.into_inner();
    tunnel.get_mut().write_all(format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").as_bytes()).await.unwrap();
    assert_eq!(tokio::time::timeout(GUARD, read_response(&mut tunnel, false)).await.unwrap().status, 200);
    drop(tunnel);
    assert_clean(&plain.received());

    // An intercepted tunnel, and an absolute-form request with userinfo inside it.
    let tls_port = tls_origin.addr.port();
    let inner = format!("user:{SECRET}@localhost:{tls_port}");
    let mut raw = RawClient::connect(pith).await;
    raw.send(format!("CONNECT {inner} HTTP/1.1\r\nHost: {inner}\r\n\r\n").as_bytes()).await;
    assert_eq!(raw.read_response(true).await.status, 200);
    let ca = std::fs::read(dir.path().join("ca/ca.pem")).expect("pith created its CA");
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&ca) {
        roots.add(cert.unwrap()).unwrap();
    }
    let tls_config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(tls_config)).connect(name, raw.into_inner().into_inner()).await.expect("pith's leaf for localhost");
    let mut tls = BufReader::new(tls);
    tls.get_mut().write_all(format!("GET https://{inner}/ HTTP/1.1\r\nHost: {inner}\r\nConnection: close\r\n\r\n").as_bytes()).await.unwrap();
    let resp = tokio::time::timeout(GUARD, read_response(&mut tls, false)).await.unwrap();
    assert_eq!((resp.status, resp.text().as_str()), (200, "hello tls"));
    drop(tls);
    assert_clean(&tls_origin.received());
    assert_eq!(tls_origin.last().header("host"), Some(format!("localhost:{tls_port}")));

    served.wait_for(&format!("url=http://127.0.0.1:{port}/"));
    served.wait_for(&format!("url=127.0.0.1:{port}"));
    served.wait_for(&format!("url=https://localhost:{tls_port}/"));
    let log = served.log.join("\n");
    assert!(!log.contains(SECRET) && !log.contains("user:") && !log.contains("user@"), "the log holds no userinfo:\n{log}");
}
