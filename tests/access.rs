//! Admission: the allow list and Basic proxy authentication.

use crate::common::*;

async fn hello_origin() -> RunningOrigin {
    Origin::new().route("/", |_| reply(&[("content-type", "text/plain")], "hello")).run().await
}

#[tokio::test]
async fn a_client_outside_the_allow_list_gets_403() {
    let origin = hello_origin().await;
    let pith = Pith::start("allow = [\"10.0.0.0/8\"]").await;
    let resp = pith.client().get(origin.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("127.0.0.1"), "the page names the refused client");
    assert!(origin.received().is_empty(), "a refused request must not reach the origin");

    // Own pages are refused too: the allow list guards the whole listener.
    let resp = exchange(pith.addr, format!("GET / HTTP/1.1\r\nHost: {}\r\n\r\n", pith.addr).as_bytes()).await;
    assert_eq!(resp.status, 403);
}

#[tokio::test]
async fn a_client_in_the_allow_list_is_served() {
    let origin = hello_origin().await;
    let pith = Pith::start("allow = [\"10.0.0.0/8\", \"127.0.0.1\"]").await;
    let resp = pith.client().get(origin.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "hello");
}

#[tokio::test]
async fn proxy_authentication_is_required_and_checked() {
    let origin = hello_origin().await;
    let pith = Pith::start("auth = { user = \"reader\", password = \"s3cret pass\" }").await;

    let resp = pith.client().get(origin.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 407);
    let challenge = resp.headers().get("proxy-authenticate").map(|v| v.to_str().unwrap().to_string());
    assert!(challenge.as_deref().is_some_and(|c| c.starts_with("Basic")), "Proxy-Authenticate: {challenge:?}");

    let wrong = client_builder(pith.proxy().basic_auth("reader", "guess")).build().unwrap();
    assert_eq!(wrong.get(origin.url("/")).send().await.unwrap().status(), 407);
    assert!(origin.received().is_empty(), "unauthenticated requests must not reach the origin");

    let connect = exchange(pith.addr, b"CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n").await;
    assert_eq!(connect.status, 407, "CONNECT needs credentials too");

    let right = client_builder(pith.proxy().basic_auth("reader", "s3cret pass")).build().unwrap();
    let resp = right.get(origin.url("/")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "hello");
    assert!(origin.last().header("proxy-authorization").is_none(), "pith's credentials must not reach the origin");
}
