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

/// Requests for `target` in each way a client can ask pith to connect: an absolute-form GET,
/// a CONNECT, and a protocol switch (Upgrade).
fn every_way_to(target: &str) -> [(&'static str, String); 3] {
    [
        ("GET", format!("GET http://{target}/ HTTP/1.1\r\nHost: {target}\r\n\r\n")),
        ("CONNECT", format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n")),
        (
            "Upgrade",
            format!("GET http://{target}/ HTTP/1.1\r\nHost: {target}\r\nConnection: upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"),
        ),
    ]
}

#[tokio::test]
async fn every_spelling_of_the_gateway_itself_is_refused() {
    let v6 = Origin::new().route("/", |_| reply(&[("content-type", "text/plain")], "hello")).run_at("[::1]:0").await;
    let v4 = hello_origin().await;
    let (p6, p4) = (v6.addr.port(), v4.addr.port());
    // Without the rule, the unspecified address reaches the service on ::1: what is refused
    // below is a real way in.
    let open = Pith::start("profile = \"pass\"").await;
    let reached = exchange(open.addr, format!("GET http://[::]:{p6}/ HTTP/1.1\r\nHost: [::]:{p6}\r\n\r\n").as_bytes()).await;
    assert_eq!((reached.status, reached.text().as_str()), (200, "hello"), "[::] connects to the local host");
    assert_eq!(v6.connections(), 1);

    let pith = Pith::start("profile = \"pass\"\n[upstream]\nconnect_ports = []\ndeny_private = true").await;
    let targets = [
        format!("[::]:{p6}"),
        format!("[0:0:0:0:0:0:0:0]:{p6}"),
        format!("[::1]:{p6}"),
        format!("[::0.0.0.0]:{p6}"),
        format!("0.0.0.0:{p4}"),
        format!("0:{p4}"),
        format!("[::ffff:127.0.0.1]:{p4}"),
        format!("[::ffff:0.0.0.0]:{p4}"),
        format!("[::127.0.0.1]:{p4}"),
        format!("[64:ff9b::127.0.0.1]:{p4}"),
        format!("[2002:7f00:1::1]:{p4}"),
    ];
    for target in &targets {
        for (how, request) in every_way_to(target) {
            let resp = exchange(pith.addr, request.as_bytes()).await;
            assert_eq!(resp.status, 403, "{how} {target}: {}", resp.text());
            assert!(resp.text().contains("upstream.deny_private"), "{how} {target}: the page names the rule: {}", resp.text());
        }
    }
    assert_eq!(v6.connections(), 1, "nothing more reached the service on ::1");
    assert_eq!(v4.connections(), 0, "nothing reached the service on 127.0.0.1");
}

#[tokio::test]
async fn an_intercepted_connect_to_the_unspecified_address_is_refused_inside() {
    let v6 = Origin::new().route("/", |_| reply(&[("content-type", "text/plain")], "hello")).run_at("[::1]:0").await;
    let v4 = hello_origin().await;
    let dir = tempfile::tempdir().unwrap();
    let ca_dir = dir.path().join("ca").display().to_string();
    let pith = Pith::start(&format!("[upstream]\nconnect_ports = []\ndeny_private = true\n[intercept]\nenabled = true\nca_dir = {ca_dir:?}")).await;
    let ca = std::fs::read(dir.path().join("ca/ca.pem")).expect("pith created its CA");
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&ca) {
        roots.add(cert.expect("a PEM certificate")).expect("a usable root");
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    for (ip, port) in [("::", v6.addr.port()), ("0.0.0.0", v4.addr.port())] {
        let ip: std::net::IpAddr = ip.parse().unwrap();
        let target = std::net::SocketAddr::new(ip, port).to_string();
        let mut raw = pith.raw().await;
        raw.send(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await;
        assert_eq!(raw.read_response(true).await.status, 200, "an intercepted CONNECT is answered at once");
        let name = rustls::pki_types::ServerName::IpAddress(ip.into());
        let tls = connector.connect(name, raw.into_inner().into_inner()).await.expect("pith's leaf for the address");
        let mut tls = tokio::io::BufReader::new(tls);
        tokio::io::AsyncWriteExt::write_all(&mut tls, format!("GET / HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes()).await.unwrap();
        let resp = crate::common::raw::read_response(&mut tls, false).await;
        assert_eq!(resp.status, 403, "{target}: {}", resp.text());
        assert!(resp.text().contains("upstream.deny_private"), "{target}: {}", resp.text());
    }
    assert_eq!((v6.connections(), v4.connections()), (0, 0), "never connected to");
}

/// The proxy address of a listener bound to the wildcard address, as a client on this machine
/// reaches it.
fn on_loopback(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    std::net::SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), addr.port())
}

/// A listener off loopback (here the wildcard address, with one client allowed) refuses
/// private destinations unless it says `deny_private = false`, through the proxy, CONNECT and
/// the `/read` gateway alike; `upstream.allow_private` lets listed intranet networks through.
#[tokio::test]
async fn a_lan_listener_refuses_private_destinations_by_default() {
    let origin = hello_origin().await;
    let url = origin.url("/");
    let lan = |extra: &str| format!("[[listener]]\naddress = \"0.0.0.0:0\"\nallow = [\"127.0.0.1/32\"]\n{extra}\n[upstream]\nconnect_ports = []\n");
    let gateway = |pith: &Pith| format!("http://{}/read?url={}", on_loopback(pith.addr), url::form_urlencoded::byte_serialize(url.as_bytes()).collect::<String>());
    let direct = reqwest::Client::builder().no_proxy().build().unwrap();

    let pith = Pith::from_config(&lan("")).await;
    let proxied = client_builder(reqwest::Proxy::all(format!("http://{}", on_loopback(pith.addr))).unwrap()).build().unwrap();
    let resp = proxied.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 403);
    assert!(resp.text().await.unwrap().contains("upstream.deny_private"));
    let tunnel = exchange(on_loopback(pith.addr), format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n\r\n", origin.addr).as_bytes()).await;
    assert_eq!(tunnel.status, 403, "{}", tunnel.text());
    assert_eq!(direct.get(gateway(&pith)).send().await.unwrap().status(), 403, "the gateway too");
    assert_eq!(origin.connections(), 0, "the gateway machine's own loopback was never reached");

    // Said in so many words, the listener may reach them; so may a listed intranet network.
    for extra in ["deny_private = false", ""] {
        let config = if extra.is_empty() { format!("{}allow_private = [\"127.0.0.0/8\"]\n", lan("")) } else { lan(extra) };
        let pith = Pith::from_config(&config).await;
        let proxied = client_builder(reqwest::Proxy::all(format!("http://{}", on_loopback(pith.addr))).unwrap()).build().unwrap();
        let resp = proxied.get(&url).send().await.unwrap();
        assert_eq!((resp.status(), resp.text().await.unwrap().as_str()), (reqwest::StatusCode::OK, "hello"), "{config}");
        assert_eq!(direct.get(gateway(&pith)).send().await.unwrap().status(), 200, "{config}");
    }
}

/// Two listeners, one that may reach private addresses (loopback, the default there) and one
/// that may not: neither a pooled connection nor a kept page opened for the first serves the
/// second.
#[tokio::test]
async fn a_page_or_connection_opened_for_one_listener_does_not_serve_another() {
    let origin = Origin::new().route("/", |_| reply(&[("content-type", "text/plain"), ("cache-control", "max-age=600")], "hello")).run().await;
    let pith = Pith::from_config(
        "[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"pass\"\n[[listener]]\naddress = \"0.0.0.0:0\"\nprofile = \"pass\"\nallow = [\"127.0.0.1/32\"]\n",
    )
    .await;
    let url = format!("http://localhost:{}/", origin.addr.port());
    let near = client_builder(reqwest::Proxy::all(format!("http://{}", pith.addrs[0])).unwrap()).build().unwrap();
    let resp = near.get(&url).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.text().await.unwrap(), "hello");
    let lan = client_builder(reqwest::Proxy::all(format!("http://{}", on_loopback(pith.addrs[1]))).unwrap()).build().unwrap();
    for _ in 0..2 {
        let resp = lan.get(&url).send().await.unwrap();
        assert_eq!(resp.status(), 403, "neither the kept page nor the pooled connection");
    }
    assert_eq!(origin.count("/"), 1);
}

#[test]
fn the_startup_line_says_which_listeners_reach_private_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxy.toml");
    std::fs::write(&file, "[[listener]]\naddress = \"127.0.0.1:0\"\n[[listener]]\naddress = \"0.0.0.0:0\"\nallow = [\"192.168.0.0/16\"]\n").unwrap();
    let mut pith = crate::common::binary::Served::start(&file, &[]);
    let near = pith.wait_for("listening address=127.0.0.1");
    let far = pith.wait_for("listening address=0.0.0.0");
    assert!(near.contains("127.0.0.1") && near.contains("private_destinations=reachable"), "{near}");
    assert!(far.contains("0.0.0.0") && far.contains("private_destinations=refused"), "{far}");
}

#[test]
fn a_wildcard_listener_admitting_loopback_only_warns_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proxy.toml");
    std::fs::write(&file, "[[listener]]\naddress = \"0.0.0.0:0\"\n").unwrap();
    let mut pith = crate::common::binary::Served::start(&file, &[]);
    let line = pith.wait_for("admits loopback clients only");
    assert!(line.contains("WARN") && line.contains("0.0.0.0"), "{line}");
}
