//! A copy, for the cache, of a response that streams through to the client.
//!
//! A response pith does not rewrite (an image, a stylesheet, a script, a font, any response of
//! the `pass` profile) goes to the client as it arrives, frame by frame: holding it back until
//! it is whole would cost the client its time to first byte and pith memory for every large
//! download. [`Tee`] wraps such a body. Each frame is handed on at once, and its bytes are also
//! kept, up to the room the cache leaves for the entry's body ([`Pending::room`]). Only a body
//! that ends cleanly becomes an entry: one that outgrows its room, fails (reset, a short
//! `Content-Length`, bad chunking, an idle origin) or is dropped because the client left drops
//! its copy, so a cut-short body is never stored or served as whole.
//!
//! The copies in flight share a bound ([`Cache::hold_copy`]): a download that finds no room
//! streams on uncopied, so many large downloads at once cannot hold many times
//! `cache.max_entry_bytes` outside the store's own bound.
//!
//! The entry is stored before the body's last frame is handed on (the end of the stream, or
//! the last data frame when the body knows it is the last, as a `Content-Length` body does),
//! so a client that has the whole response and asks again finds it kept.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::cache::{Cache, Key, Pending};

/// Where a teed body is stored once whole.
pub struct Store {
    /// The cache.
    pub cache: Arc<Cache>,
    /// The key, with the values of the request headers the response varies on.
    pub key: Key,
    /// The URL, for the log.
    pub url: String,
}

type Storing = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Bytes held in the cache's room for copies, given back when dropped.
struct Held {
    cache: Arc<Cache>,
    bytes: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.cache.release_copy(self.bytes);
    }
}

enum Copy {
    /// Keeping the bytes, up to the pending entry's room; `held` is their share of the room
    /// for copies.
    Keeping { chunks: Vec<Bytes>, held: Held, pending: Box<Pending>, store: Store },
    /// The body ended whole: its entry is being stored, and `last` is what the inner body
    /// yielded last (`None`: its end), handed on once the store is done.
    Storing { store: Storing, last: Option<Frame<Bytes>> },
    /// Nothing (more) to keep.
    Off,
}

pin_project! {
    /// A body passed through frame by frame while a copy of it is kept for the cache.
    pub struct Tee<B> {
        #[pin]
        inner: B,
        copy: Copy,
    }
}

impl<B> Tee<B> {
    /// Streams `inner`, keeping a copy to make `pending` whole and store it with `store`.
    pub fn new(inner: B, pending: Pending, store: Store) -> Self {
        let held = Held { cache: store.cache.clone(), bytes: 0 };
        Tee { inner, copy: Copy::Keeping { chunks: Vec::new(), held, pending: Box::new(pending), store } }
    }
}

impl<B: Body<Data = Bytes>> Body for Tee<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        loop {
            match this.copy {
                Copy::Storing { store, last } => {
                    ready!(store.as_mut().poll(cx));
                    let last = last.take();
                    *this.copy = Copy::Off;
                    return Poll::Ready(last.map(Ok));
                }
                Copy::Off => return this.inner.poll_frame(cx),
                Copy::Keeping { .. } => {}
            }
            let frame = ready!(this.inner.as_mut().poll_frame(cx));
            let ended = this.inner.is_end_stream();
            if let Some(frame) = keep(this.copy, frame, ended) {
                return Poll::Ready(frame);
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        // Not ended while its entry is being stored: the last frame is still to come.
        !matches!(self.copy, Copy::Storing { .. }) && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Copies `frame` into a keeping `copy` and gives it back to be handed on; or, when the body
/// has ended whole (`frame` is its end, or `ended` says it was its last), turns `copy` into
/// [`Copy::Storing`] and gives back nothing: the frame is handed on once the entry is stored.
fn keep<E>(copy: &mut Copy, frame: Option<Result<Frame<Bytes>, E>>, ended: bool) -> Option<Option<Result<Frame<Bytes>, E>>> {
    let Copy::Keeping { mut chunks, mut held, pending, store } = std::mem::replace(copy, Copy::Off) else {
        return Some(frame);
    };
    let last = match frame {
        None => None,
        // A failed body is not whole: nothing of it is kept.
        Some(Err(e)) => return Some(Some(Err(e))),
        Some(Ok(frame)) => {
            if let Some(data) = frame.data_ref() {
                let bytes = data.len() as u64;
                if held.bytes + bytes > pending.room() {
                    tracing::debug!(url = %store.url, bytes = held.bytes + bytes, "a streamed response outgrew cache.max_entry_bytes; not kept");
                    return Some(Some(Ok(frame)));
                }
                if !store.cache.hold_copy(bytes) {
                    tracing::debug!(url = %store.url, "no room for another copy in flight; the response streams on, not kept");
                    return Some(Some(Ok(frame)));
                }
                held.bytes += bytes;
                if !data.is_empty() {
                    chunks.push(data.clone());
                }
            }
            if !ended {
                *copy = Copy::Keeping { chunks, held, pending, store };
                return Some(Some(Ok(frame)));
            }
            Some(frame)
        }
    };
    *copy = Copy::Storing { store: stored(*pending, chunks, held, store), last };
    None
}

/// The future that makes the whole body an entry and stores it.
fn stored(pending: Pending, chunks: Vec<Bytes>, held: Held, store: Store) -> Storing {
    let body = match chunks.len() {
        0 => Bytes::new(),
        // Copied even when whole: a chunk is a slice of the connection's read buffer, and a
        // kept slice would keep that whole buffer alive for as long as the entry lives.
        1 => Bytes::copy_from_slice(&chunks[0]),
        _ => {
            let mut whole = BytesMut::with_capacity(chunks.iter().map(Bytes::len).sum());
            for chunk in &chunks {
                whole.extend_from_slice(chunk);
            }
            whole.freeze()
        }
    };
    Box::pin(async move {
        match pending.finish(body) {
            Ok(entry) => store.cache.insert(store.key, Arc::new(entry)).await,
            Err(refusal) => tracing::debug!(url = %store.url, ?refusal, "streamed response not kept"),
        }
        // The copy is the entry's body now, weighed in the store.
        drop(held);
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::SystemTime;

    use futures_util::stream;
    use http::header::{self, HeaderMap, HeaderValue};
    use http::{Method, StatusCode};
    use http_body_util::{BodyExt, StreamBody};

    use super::*;
    use crate::body::Coding;
    use crate::cache::{self, Ask, Form};
    use crate::config::CacheConfig;
    use crate::profile::{Output, Profile};

    #[derive(Debug)]
    struct Cut;

    fn setup(max_entry_bytes: u64) -> (Arc<Cache>, Ask, Key, Pending) {
        let profile = Arc::new(Profile::new("pass", Arc::new(crate::html::rules::RuleSet::empty()), Output::Html));
        let profiles = BTreeMap::from([("pass".to_string(), profile.clone())]);
        let cache = Arc::new(Cache::new(&CacheConfig { enabled: true, pass: true, max_bytes: 1 << 20, max_entry_bytes, disk: None }, &profiles));
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("example.com"));
        let ask = Ask::new(Method::GET, "http://example.com/logo.png".parse().unwrap(), headers);
        let key = cache.key(&ask, &profile, Coding::Identity);
        let mut origin = HeaderMap::new();
        origin.insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=60"));
        let pending = cache::admit_head(&ask, (StatusCode::OK, &origin), origin.clone(), Form::Origin, max_entry_bytes, SystemTime::now()).unwrap();
        (cache, ask, key, pending)
    }

    fn body(chunks: Vec<Result<&'static [u8], Cut>>) -> impl Body<Data = Bytes, Error = Cut> {
        StreamBody::new(stream::iter(chunks.into_iter().map(|c| c.map(|b| Frame::data(Bytes::from_static(b))))))
    }

    async fn drain<B: Body<Data = Bytes>>(tee: Tee<B>) -> (Vec<u8>, bool) {
        let mut tee = std::pin::pin!(tee);
        let mut seen = Vec::new();
        while let Some(frame) = tee.frame().await {
            match frame {
                Ok(f) => seen.extend_from_slice(f.data_ref().map_or(&[][..], |d| &d[..])),
                Err(_) => return (seen, false),
            }
        }
        (seen, true)
    }

    #[tokio::test]
    async fn a_whole_body_is_passed_on_and_kept() {
        let (cache, _, key, pending) = setup(64 * 1024);
        let store = Store { cache: cache.clone(), key: key.clone(), url: "u".into() };
        let (seen, ok) = drain(Tee::new(body(vec![Ok(b"ab"), Ok(b""), Ok(b"cd")]), pending, store)).await;
        assert_eq!((seen.as_slice(), ok), (&b"abcd"[..], true));
        let entry = cache.get(&key).await.expect("kept");
        assert_eq!(entry.body, Bytes::from_static(b"abcd"));
    }

    #[tokio::test]
    async fn a_failed_body_is_passed_on_as_failed_and_never_kept() {
        let (cache, _, key, pending) = setup(64 * 1024);
        let store = Store { cache: cache.clone(), key: key.clone(), url: "u".into() };
        let (seen, ok) = drain(Tee::new(body(vec![Ok(b"ab"), Err(Cut)]), pending, store)).await;
        assert_eq!((seen.as_slice(), ok), (&b"ab"[..], false), "the client sees the failure");
        assert!(cache.get(&key).await.is_none(), "a cut-short body is never kept");
    }

    #[tokio::test]
    async fn a_body_past_its_room_streams_on_but_is_not_kept() {
        let (cache, _, key, pending) = setup(16384);
        let room = pending.room() as usize;
        let big: &'static [u8] = Box::leak(vec![b'x'; room + 1].into_boxed_slice());
        let store = Store { cache: cache.clone(), key: key.clone(), url: "u".into() };
        let (seen, ok) = drain(Tee::new(body(vec![Ok(b"a"), Ok(big), Ok(b"z")]), pending, store)).await;
        assert_eq!((seen.len(), ok), (room + 3, true), "every byte reaches the client");
        assert!(cache.get(&key).await.is_none());
    }

    /// Copies in flight share a quarter of max_bytes: a second download that would pass it
    /// streams on uncopied, and the room comes back when a copy ends, stored or dropped.
    #[tokio::test]
    async fn copies_in_flight_share_a_bound() {
        let (cache, ask, key, pending) = setup(64 * 1024);
        let quarter = (1u64 << 20) / 4;
        assert!(cache.hold_copy(quarter - 10), "most of the room, taken by other downloads");
        let store = Store { cache: cache.clone(), key: key.clone(), url: "u".into() };
        let (seen, ok) = drain(Tee::new(body(vec![Ok(b"0123456789abcdef")]), pending, store)).await;
        assert_eq!((seen.len(), ok), (16, true), "streamed on whole");
        assert!(cache.get(&key).await.is_none(), "no room to copy it");
        cache.release_copy(quarter - 10);
        let origin = {
            let mut h = HeaderMap::new();
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=60"));
            h
        };
        let pending = cache::admit_head(&ask, (StatusCode::OK, &origin), origin.clone(), Form::Origin, 64 * 1024, SystemTime::now()).unwrap();
        let store = Store { cache: cache.clone(), key: key.clone(), url: "u".into() };
        drain(Tee::new(body(vec![Ok(b"0123456789abcdef")]), pending, store)).await;
        assert!(cache.get(&key).await.is_some(), "kept once the room is back");
        assert!(cache.hold_copy(quarter), "every copy gave its room back");
    }

    #[tokio::test]
    async fn a_body_dropped_unfinished_is_not_kept() {
        let (cache, _, key, pending) = setup(64 * 1024);
        let store = Store { cache: cache.clone(), key: key.clone(), url: "u".into() };
        let mut tee = Box::pin(Tee::new(body(vec![Ok(b"ab"), Ok(b"cd")]), pending, store));
        let first = tee.frame().await.expect("a frame").ok().and_then(|f| f.into_data().ok());
        assert_eq!(first, Some(Bytes::from_static(b"ab")));
        drop(tee);
        assert!(cache.get(&key).await.is_none(), "the client left: the copy is dropped");
        assert!(cache.hold_copy((1 << 20) / 4), "and its room given back");
    }
}
