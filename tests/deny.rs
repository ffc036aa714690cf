//! Destination deny rules (`upstream.deny`, `upstream.deny_private`): a refused destination is
//! a 403 naming the rule and the origin is never reached, for plain requests and CONNECT
//! alike; names are judged by the addresses they resolve to; an allowed request still reaches
//! its origin with its own Host.

use crate::common::*;

async fn hello_origin() -> RunningOrigin {
    Origin::new().route("/", |_| reply(&[("content-type", "text/plain")], "hello")).run().await
}

#[tokio::test]
async fn a_private_destination_is_403_naming_the_rule() {
    let origin = hello_origin().await;
    let pith = Pith::start("[upstream]\ndeny_private = true").await;
    for url in [origin.url("/"), format!("http://localhost:{}/", origin.addr.port())] {
        let resp = pith.client().get(&url).send().await.unwrap();
        assert_eq!(resp.status(), 403, "{url}");
        let text = resp.text().await.unwrap();
        assert!(text.contains("upstream.deny_private"), "{url}: the page names the rule:\n{text}");
    }
    assert_eq!(origin.connections(), 0, "a refused destination is never connected to");
}

#[tokio::test]
async fn a_listed_network_is_403_and_others_pass_with_their_host() {
    let origin = hello_origin().await;
    let refused = Pith::start("[upstream]\ndeny = [\"127.0.0.0/8\"]").await;
    let resp = refused.client().get(origin.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("upstream.deny (127.0.0.0/8)"));
    assert_eq!(origin.connections(), 0);

    // Checked and allowed: the request is pinned to the checked address, yet the origin still
    // sees the name the client asked for.
    let allowed = Pith::start("[upstream]\ndeny = [\"10.0.0.0/8\"]").await;
    let url = format!("http://localhost:{}/", origin.addr.port());
    let resp = allowed.client().get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "hello");
    assert_eq!(origin.last().header("host"), Some(format!("localhost:{}", origin.addr.port())));
}

#[tokio::test]
async fn a_connect_to_a_private_destination_is_403() {
    let origin = hello_origin().await;
    let pith = Pith::start("[upstream]\nconnect_ports = []\ndeny_private = true").await;
    for target in [origin.addr.to_string(), format!("localhost:{}", origin.addr.port())] {
        let mut raw = pith.raw().await;
        raw.send(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await;
        let resp = raw.read_response(false).await;
        assert_eq!(resp.status, 403, "{target}");
        assert!(resp.text().contains("upstream.deny_private"), "{target}: {}", resp.text());
    }
    assert_eq!(origin.connections(), 0, "no tunnel was opened");
}
