//! The rewrite memory budget (`limits.rewrite_memory_bytes`): a page that does not fit waits
//! briefly, then passes through unrewritten with `x-pith` saying so; the budget comes back when
//! a page is done, and when its client goes away before reading it.
//!
//! The pages are plain paragraphs through a stage-1 profile (`preset = "none"`): cheap to
//! rewrite even unoptimised, and each costs about five times its size in the estimate, so a
//! budget of 22 MiB fits one 4 MiB page being rewritten and not two.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;

use crate::common::raw::{read_response, request, RawResponse, GUARD};
use crate::common::*;

const PAGE_BYTES: usize = 4 << 20;
const CONFIG: &str = "[[listener]]\naddress = \"127.0.0.1:0\"\nprofile = \"light\"\n\
    [profiles.light]\nrules = \"declutter\"\npreset = \"none\"\n\
    [limits]\nrewrite_memory_bytes = 23068672\nrewrite_memory_wait_ms = 100\n";

fn page() -> Bytes {
    let mut doc = b"<!DOCTYPE html><html><head><title>big</title><script>var x = 1;</script></head><body>".to_vec();
    while doc.len() < PAGE_BYTES - 200 {
        doc.extend_from_slice(b"<p>Paragraph text that a reader keeps, long enough to be a page of prose.</p>\n");
    }
    doc.extend_from_slice(b"</body></html>");
    Bytes::from(doc)
}

/// An origin serving [`page`] at `/page`, and at `/held` the same page whose second half waits
/// for a permit of `gate`.
async fn origin(gate: Arc<Semaphore>) -> RunningOrigin {
    let body = page();
    let (whole, held) = (body.clone(), body.clone());
    Origin::new()
        .route("/page", move |_| reply(&[("content-type", "text/html")], whole.clone()))
        .route("/held", move |_| {
            let (first, rest) = (held.slice(..1 << 20), held.slice(1 << 20..));
            let gate = gate.clone();
            let chunks = futures_util::stream::unfold(0u8, move |step| {
                let (first, rest, gate) = (first.clone(), rest.clone(), gate.clone());
                async move {
                    match step {
                        0 => Some((first, 1)),
                        1 => {
                            gate.acquire().await.expect("the gate is never closed").forget();
                            Some((rest, 2))
                        }
                        _ => None,
                    }
                }
            });
            reply_stream(&[("content-type", "text/html"), ("content-length", &held.len().to_string())], chunks)
        })
        .run()
        .await
}

fn rewritten(resp: &RawResponse) -> bool {
    resp.status == 200 && resp.header("x-pith").is_some_and(|v| v.starts_with("profile=light; removed-elements=")) && !resp.text().contains("<script")
}

fn over_budget(resp: &RawResponse, page: &[u8]) -> bool {
    resp.status == 200 && resp.header("x-pith") == Some("profile=light; not-rewritten=over-budget") && resp.body == page
}

#[tokio::test]
async fn a_page_past_the_budget_passes_through_and_the_budget_comes_back() {
    let gate = Arc::new(Semaphore::new(0));
    let origin = origin(gate.clone()).await;
    let pith = Pith::from_config(CONFIG).await;
    let expected = page();

    // The first page is read up to its gate: it holds most of the budget meanwhile.
    let (addr, held) = (pith.addr, request("GET", &origin.url("/held"), ""));
    let first = tokio::spawn(async move { exchange(addr, &held).await });
    while origin.count("/held") == 0 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = exchange(pith.addr, &request("GET", &origin.url("/page"), "")).await;
    assert!(over_budget(&second, &expected), "passed through as the origin sent it: {:?} ({} bytes)", second.header("x-pith"), second.body.len());
    assert_eq!(second.header("content-length"), Some(expected.len().to_string().as_str()), "with the origin's framing");

    gate.add_permits(1);
    let first = tokio::time::timeout(GUARD, first).await.expect("the first page completes").unwrap();
    assert!(rewritten(&first), "the page within the budget is rewritten: {:?}", first.header("x-pith"));

    let third = exchange(pith.addr, &request("GET", &origin.url("/page"), "")).await;
    assert!(rewritten(&third), "the budget came back: {:?}", third.header("x-pith"));
}

/// A client that asks for a page and reads nothing: a tiny receive buffer, so pith cannot hand
/// the rewritten page over.
async fn non_reader(proxy: std::net::SocketAddr, url: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(proxy).await.unwrap();
    stream.write_all(&request("GET", url, "")).await.unwrap();
    stream
}

#[tokio::test]
async fn a_client_that_reads_nothing_holds_its_page_in_the_budget_until_it_goes_away() {
    let origin = origin(Arc::new(Semaphore::new(0))).await;
    let pith = Pith::from_config(CONFIG).await;
    let expected = page();

    let mut idle = non_reader(pith.addr, &origin.url("/page")).await;
    // Its page is rewritten, then waits for it: read the head only, so the rest stays unsent.
    let mut head = [0u8; 64];
    let n = tokio::time::timeout(GUARD, idle.read(&mut head)).await.expect("the head").unwrap();
    assert!(head[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head[..n]));

    let meanwhile = exchange(pith.addr, &request("GET", &origin.url("/page"), "")).await;
    assert!(over_budget(&meanwhile, &expected), "the unread page holds its share: {:?}", meanwhile.header("x-pith"));

    drop(idle);
    // The connection's end reaches pith and its response body is dropped: the share comes back.
    let mut after = None;
    for _ in 0..50 {
        let resp = exchange(pith.addr, &request("GET", &origin.url("/page"), "")).await;
        if rewritten(&resp) {
            after = Some(resp);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(after.is_some(), "the budget came back once the client went away");
}

#[tokio::test]
async fn a_page_larger_than_the_whole_budget_passes_through_at_once() {
    let origin = origin(Arc::new(Semaphore::new(0))).await;
    let pith = Pith::from_config(&CONFIG.replace("23068672", "4194304").replace("rewrite_memory_wait_ms = 100", "rewrite_memory_wait_ms = 60000")).await;
    // Were it to wait for room that can never come (60 s), the read below would hit its guard.
    let mut stream = BufReader::new(TcpStream::connect(pith.addr).await.unwrap());
    stream.get_mut().write_all(&request("GET", &origin.url("/page"), "")).await.unwrap();
    let resp = tokio::time::timeout(GUARD, read_response(&mut stream, false)).await.expect("a response");
    assert!(over_budget(&resp, &page()), "{:?}", resp.header("x-pith"));
}
