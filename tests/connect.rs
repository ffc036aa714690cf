//! CONNECT: tunnels to a local TLS origin through a real HTTPS client, a blind byte copy, and
//! the refusals (ports outside `connect_ports`, unreachable targets, pith itself).

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::*;

const SECURE_PAGE: &str = "<html><body><p>secure hello</p><script>kept()</script></body></html>";

#[tokio::test]
async fn https_through_a_connect_tunnel_reaches_a_tls_origin() {
    let (origin, cert) = Origin::new().route("/", |_| reply(&[("content-type", "text/html")], SECURE_PAGE)).run_tls().await;
    let pith = Pith::start("[upstream]\nconnect_ports = []").await;
    let client = pith
        .client_builder()
        .add_root_certificate(reqwest::Certificate::from_der(cert.as_ref()).expect("a DER certificate"))
        .build()
        .unwrap();

    let resp = client.get(format!("https://localhost:{}/", origin.addr.port())).send().await.expect("the TLS exchange succeeds through the tunnel");
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("x-pith").is_none(), "a tunnel is a blind copy: nothing is rewritten");
    assert_eq!(resp.text().await.unwrap(), SECURE_PAGE);
    assert_eq!(origin.received().len(), 1);
}

#[tokio::test]
async fn a_tunnel_copies_bytes_both_ways() {
    let echo = RawOrigin::start(|mut stream| async move {
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if stream.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }
        }
    })
    .await;
    let pith = Pith::start("[upstream]\nconnect_ports = []").await;
    let mut client = pith.raw().await;
    client.send(format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", echo.addr).as_bytes()).await;
    let resp = client.read_response(true).await;
    assert_eq!(resp.status, 200);

    let mut tunnel = client.into_inner();
    for message in [&b"ping through the tunnel"[..], &b"\x00\xffbinary\r\n\r\n"[..]] {
        tunnel.get_mut().write_all(message).await.unwrap();
        let mut back = vec![0; message.len()];
        tokio::time::timeout(crate::common::raw::GUARD, tunnel.read_exact(&mut back)).await.expect("the echo comes back").unwrap();
        assert_eq!(back, message);
    }
}

#[tokio::test]
async fn connect_to_a_port_outside_connect_ports_is_403() {
    let echo = RawOrigin::start(|_stream| async {}).await;
    // The default allows port 443 only.
    let pith = Pith::start("").await;
    let resp = exchange(pith.addr, format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", echo.addr).as_bytes()).await;
    assert_eq!(resp.status, 403);
    assert!(resp.text().contains(&echo.addr.port().to_string()), "the page names the refused port: {}", resp.text());
}

#[tokio::test]
async fn connect_to_a_closed_port_is_502() {
    let (_holder, closed) = closed_port();
    let pith = Pith::start("[upstream]\nconnect_ports = []").await;
    let resp = exchange(pith.addr, format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", closed).as_bytes()).await;
    assert_eq!(resp.status, 502);
    assert!(resp.text().contains("connection refused to 127.0.0.1"), "{}", resp.text());
}

#[tokio::test]
async fn connect_to_pith_itself_does_not_loop() {
    let pith = Pith::start("[upstream]\nconnect_ports = []").await;
    let resp = exchange(pith.addr, format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", pith.addr).as_bytes()).await;
    assert_eq!(resp.status, 508);
}
