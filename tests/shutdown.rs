//! Shutdown: once pith is told to stop it accepts no new connections, and a request already
//! in flight still gets its whole response.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use crate::common::raw::{read_head, request, GUARD};
use crate::common::*;

#[tokio::test]
async fn shutdown_drains_requests_in_flight() {
    let (arrived_tx, arrived_rx) = oneshot::channel::<()>();
    let (release_tx, release_rx) = oneshot::channel::<()>();
    let arrived_tx = Arc::new(Mutex::new(Some(arrived_tx)));
    let release_rx = Arc::new(Mutex::new(Some(release_rx)));
    let origin = RawOrigin::start(move |stream| {
        let (arrived, release) = (arrived_tx.lock().unwrap().take(), release_rx.lock().unwrap().take());
        async move {
            let mut reader = BufReader::new(stream);
            read_head(&mut reader).await;
            if let (Some(arrived), Some(release)) = (arrived, release) {
                let _ = arrived.send(());
                let _ = release.await;
            }
            let body = "late but whole";
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            reader.get_mut().write_all(head.as_bytes()).await.unwrap();
        }
    })
    .await;
    let pith = Pith::start("").await;
    let addr = pith.addr;
    let mut client = pith.raw().await;
    client.send(&request("GET", &origin.url("/slow"), "")).await;
    tokio::time::timeout(GUARD, arrived_rx).await.expect("the request reaches the origin").unwrap();

    pith.stop();
    // The listener closes: a new connection is refused. Polled, since nothing else reports it.
    tokio::time::timeout(GUARD, async {
        while TcpStream::connect(addr).await.is_ok() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("pith stops listening after shutdown starts");

    release_tx.send(()).unwrap();
    let resp = client.read_response(false).await;
    assert_eq!((resp.status, resp.text().as_str()), (200, "late but whole"));
}
