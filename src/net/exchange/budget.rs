//! The rewrite memory budget (`limits.rewrite_memory_bytes`): a bound on the memory that pages
//! being buffered, decoded and rewritten may take at once.
//!
//! Rewriting is the one part of the proxy whose memory grows with what origins send: a page is
//! read whole and decoded, and the tree built over it costs many times its size (a dense page of
//! small elements about 20 bytes per input byte; see [`process_cost`]). Without a bound, a
//! handful of large pages at once, or a burst of clients fetching one big page, take gigabytes.
//!
//! Every page to be rewritten reserves what it is expected to cost from one pool of bytes
//! ([`Budget`]), before its body is read, and grows the reservation as its body arrives and its
//! decoded size and markup are known ([`Reservation::cover`]); a page being read gets room freed
//! before pages not started yet, so a burst cannot leave every page half read. Past the budget a page waits up
//! to `limits.rewrite_memory_wait_ms`, then passes through unrewritten, streamed as the origin
//! sent it (the bytes already read first), as pages over `limits.max_rewrite_bytes` do; the
//! access log says `over-budget` and so does the response's `x-pith`. A page that could never
//! fit (its estimate is more than the whole budget) passes through at once.
//!
//! The reservation follows the bytes to the client: a rewritten page keeps the size of its
//! output until the client has been sent all of it ([`rewritten`]); a page passed through after
//! part of it was read keeps what was read and gives it back as it is sent ([`replayed`]). So a
//! client that does not read holds its share of the budget (until the connection's own timeouts
//! close it), not unaccounted memory, and a client that goes away gives it back at once, when
//! its response body is dropped.
//!
//! The budget outlives a configuration reload unless its size or wait changes; a new budget
//! then serves new pages while pages already running finish on the old one.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::profile::{Output, Profile};

/// The rewrite memory budget shared by every request of a running proxy.
#[derive(Debug)]
pub struct Budget {
    pool: Arc<Mutex<Pool>>,
    bytes: u64,
    wait: Duration,
}

/// The bytes not reserved, and the pages waiting for some, in two queues. Pages already being
/// read that need more come first: were they to queue behind pages not yet started, a burst
/// would leave every page half read, each waiting for room the others hold, until all gave up.
///
/// Large pages (a reservation past a thirty-second of the budget) may not take the last of it
/// ([`Pool::floor`]): a sixteenth stays for small pages to grow in and a thirty-second for small
/// pages to start in, so a few huge pages, or clients that do not read them, never make every
/// ordinary page wait and pass through unrewritten. A page not started leaves more room still
/// (an eighth when it is large) for the pages being read: each reserves its estimate by its
/// length first and grows once its markup is counted. Within a queue and a size, first come
/// first served, so a large page is not passed over for ever by other large pages; small pages
/// are not held up behind a large one waiting for room it may not take.
#[derive(Debug)]
struct Pool {
    free: u64,
    total: u64,
    growing: VecDeque<Waiter>,
    arriving: VecDeque<Waiter>,
}

#[derive(Debug)]
struct Waiter {
    /// Bytes asked for, beyond what the page holds.
    bytes: u64,
    /// Bytes the page holds already.
    held: u64,
    size: Size,
    granted: oneshot::Sender<()>,
}

/// A page's size class, by the reservation it would have once granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Size {
    Small = 0,
    Large = 1,
}

impl Pool {
    /// The class of a reservation of `bytes` in all.
    fn size(&self, bytes: u64) -> Size {
        if bytes > self.total / 32 { Size::Large } else { Size::Small }
    }

    /// Bytes a grant must leave free.
    fn floor(&self, queue: Queue, size: Size) -> u64 {
        match (queue, size) {
            (Queue::Growing, Size::Small) => 0,
            (Queue::Arriving, Size::Small) => self.total / 32,
            (Queue::Growing, Size::Large) => self.total / 16,
            (Queue::Arriving, Size::Large) => self.total / 8,
        }
    }

    /// Whether a page holding `held` may take `bytes` more now. A page alone in the budget may
    /// take all of it: the floors keep room for other pages, and there are none.
    fn fits(&self, bytes: u64, held: u64, queue: Queue, size: Size) -> bool {
        bytes <= self.free && (self.free + held == self.total || self.free - bytes >= self.floor(queue, size))
    }

    /// Whether a live page of `size` waits in `queue`.
    fn waiting(&self, queue: Queue, size: Size) -> bool {
        let waiters = match queue {
            Queue::Growing => &self.growing,
            Queue::Arriving => &self.arriving,
        };
        waiters.iter().any(|w| w.size == size && !w.granted.is_closed())
    }

    /// Hands free bytes to the waiters, growing pages first. Within a queue and a size the first
    /// that does not fit stops the others of its size; arrivals of a size wait while growing
    /// pages of that size do. A waiter that gave up meanwhile is passed over, and what it was
    /// handed taken back.
    fn dispatch(&mut self) {
        let mut growing_stuck = [false; 2];
        for queue in [Queue::Growing, Queue::Arriving] {
            let mut stuck = if queue == Queue::Arriving { growing_stuck } else { [false; 2] };
            let mut i = 0;
            while let Some(w) = self.queue(queue).get(i) {
                if w.granted.is_closed() {
                    self.queue(queue).remove(i);
                    continue;
                }
                let (bytes, held, size) = (w.bytes, w.held, w.size);
                if stuck[size as usize] || !self.fits(bytes, held, queue, size) {
                    stuck[size as usize] = true;
                    i += 1;
                    continue;
                }
                if let Some(waiter) = self.queue(queue).remove(i) {
                    if waiter.granted.send(()).is_ok() {
                        self.free -= bytes;
                    }
                }
            }
            if queue == Queue::Growing {
                growing_stuck = stuck;
            }
        }
    }

    fn queue(&mut self, queue: Queue) -> &mut VecDeque<Waiter> {
        match queue {
            Queue::Growing => &mut self.growing,
            Queue::Arriving => &mut self.arriving,
        }
    }

    fn release(&mut self, bytes: u64) {
        self.free += bytes;
        self.dispatch();
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Queue {
    Growing,
    Arriving,
}

fn lock(pool: &Mutex<Pool>) -> std::sync::MutexGuard<'_, Pool> {
    // Nothing panics while holding it; a poisoned lock still holds whole counts.
    pool.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Budget {
    /// A budget of `bytes`, where a page waits at most `wait` for room.
    pub fn new(bytes: u64, wait: Duration) -> Budget {
        let pool = Pool { free: bytes, total: bytes, growing: VecDeque::new(), arriving: VecDeque::new() };
        Budget { pool: Arc::new(Mutex::new(pool)), bytes, wait }
    }

    /// The whole budget, in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// How long a page waits for room.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// Bytes not reserved now.
    pub fn available(&self) -> u64 {
        lock(&self.pool).free
    }

    /// Reserves `bytes` for a page, waiting up to the budget's wait for room. `None` when
    /// there was none by then, or when `bytes` is more than the whole budget.
    pub async fn reserve(&self, bytes: u64) -> Option<Reservation> {
        let mut hold = Reservation { pool: self.pool.clone(), bytes: 0, total: self.bytes, deadline: Instant::now() + self.wait };
        hold.grow(bytes, Queue::Arriving).await.then_some(hold)
    }
}

/// Part of the budget held by one page; given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    pool: Arc<Mutex<Pool>>,
    bytes: u64,
    total: u64,
    /// When waiting for room ends: the wait is for the page, not for each step of it.
    deadline: Instant,
}

impl Reservation {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Grows the reservation to at least `bytes`, waiting for room until the page's deadline
    /// (past it, only room free now is taken), before any page that has not started. False,
    /// holding what it held, when there was none, or when `bytes` is more than the whole budget.
    pub async fn cover(&mut self, bytes: u64) -> bool {
        self.grow(bytes, Queue::Growing).await
    }

    async fn grow(&mut self, bytes: u64, queue: Queue) -> bool {
        if bytes <= self.bytes {
            return true;
        }
        if bytes > self.total {
            return false;
        }
        let granted = {
            let mut pool = lock(&self.pool);
            pool.dispatch();
            let (needed, size) = (bytes - self.bytes, pool.size(bytes));
            let first = !pool.waiting(queue, size) && (queue == Queue::Growing || !pool.waiting(Queue::Growing, size));
            if first && pool.fits(needed, self.bytes, queue, size) {
                // Half as much again as needed for a growing page, when there is room above its
                // floor, so one growing chunk by chunk does not come back for each one.
                let ahead = if queue == Queue::Growing { (bytes + bytes / 2).min(self.total) } else { bytes };
                let alone = pool.free + self.bytes == pool.total;
                let spare = if alone { pool.free } else { pool.free.saturating_sub(pool.floor(queue, size)) };
                let take = (ahead - self.bytes).min(spare).max(needed);
                pool.free -= take;
                self.bytes += take;
                return true;
            }
            let (tx, rx) = oneshot::channel();
            pool.queue(queue).push_back(Waiter { bytes: needed, held: self.bytes, size, granted: tx });
            rx
        };
        let mut granted = granted;
        let got = match tokio::time::timeout_at(self.deadline, &mut granted).await {
            Ok(answer) => answer.is_ok(),
            // Timed out. Closing stops a grant from now on (the waiter is then passed over);
            // one made just before the close is kept, or it would be lost to the budget.
            Err(_) => {
                granted.close();
                granted.try_recv().is_ok()
            }
        };
        if got {
            self.bytes = bytes;
        }
        got
    }

    /// Gives back all but `bytes`.
    pub fn shrink_to(&mut self, bytes: u64) {
        if bytes < self.bytes {
            lock(&self.pool).release(self.bytes - bytes);
            self.bytes = bytes;
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.bytes > 0 {
            lock(&self.pool).release(self.bytes);
        }
    }
}

/// How a profile rewrites a page, for its cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// A tree is built: stage 2, reading mode, or a text form.
    Tree,
    /// The streaming stage-1 rewriter alone.
    Stage1,
}

impl Path {
    /// The path `profile` takes (as [`crate::pipeline::process`] chooses it).
    pub fn of(profile: &Profile) -> Path {
        if profile.stage2.is_none() && profile.reader.is_none() && profile.output == Output::Html {
            Path::Stage1
        } else {
            Path::Tree
        }
    }
}

/// Peak bytes allocated per decoded input byte on the tree path, markup aside: the UTF-8
/// copy, the text and attribute storage of the tree, the output.
const TREE_PER_BYTE: u64 = 3;
/// Peak bytes per `<` in the input on the tree path: a node, its attributes and its share of
/// the removers' and renderers' tables. Measured at about 130 over dense markup.
const TREE_PER_TAG: u64 = 192;
/// Peak bytes per input byte on the stage-1 path: the UTF-8 copy and the output.
const STAGE1_PER_BYTE: u64 = 3;
/// What any rewrite allocates whatever the page (scratch tables, a small output).
const FIXED: u64 = 64 << 10;

/// The peak memory [`crate::pipeline::process`] is expected to allocate for a decoded page of
/// `len` bytes with `tags` `<` bytes in it ([`count_tags`]), the input itself not counted.
///
/// Per byte alone it cannot be told: a plain-text page costs about 4 bytes per byte on the tree
/// path, a page of nothing but small elements about 20. Nodes are what cost, so the estimate
/// counts them by their `<`. The constants are over what `tests/memory.rs` measures with a
/// counting allocator: on the tree path 18.3-18.7 bytes per byte of dense markup, 4.2-5.4 of
/// plain text, 10.4-14.6 of a script-heavy page (the estimate is 1.1 to 2.1 times these); on
/// the stage-1 path 1.0-2.3 (the estimate, 3 per byte, leaves room for a page transcoded to
/// UTF-8 first).
pub fn process_cost(path: Path, len: u64, tags: u64) -> u64 {
    let variable = match path {
        Path::Tree => len.saturating_mul(TREE_PER_BYTE).saturating_add(tags.saturating_mul(TREE_PER_TAG)),
        Path::Stage1 => len.saturating_mul(STAGE1_PER_BYTE),
    };
    variable.saturating_add(FIXED)
}

/// The `<` bytes in `bytes`: an upper bound on the elements, comments and end tags parsed out
/// of them.
///
/// Every decoded byte of every rewritten page passes here, so the count is kept in byte-wide
/// sums over blocks of at most 255 bytes, a loop the compiler turns into vector compares; a
/// plain `filter().count()` compiled to a byte-at-a-time loop that cost a tenth of the
/// declutter path's instructions.
pub fn count_tags(bytes: &[u8]) -> u64 {
    bytes
        .chunks(255)
        .map(|block| u64::from(block.iter().fold(0u8, |n, &b| n.wrapping_add(u8::from(b == b'<')))))
        .sum()
}

/// The memory a page being read holds: the raw chunks, the decoded buffer as allocated, and
/// what rewriting the decoded bytes so far will take.
pub fn page_cost(path: Path, raw: u64, decoded_capacity: u64, decoded_len: u64, tags: u64) -> u64 {
    raw.saturating_add(decoded_capacity).saturating_add(process_cost(path, decoded_len, tags))
}

/// Bytes sent per frame of a rewritten page. Each is a copy, so the page's one allocation is
/// freed, and its reservation given back, once the last is handed over. Small, because what
/// the connection has taken and not yet written is not in the budget: the HTTP/1 writer queues
/// at most 16 frames, so 256 KiB for a client that reads nothing.
const CHUNK: usize = 16 << 10;

pin_project! {
    /// A body holding a [`Reservation`]: given back as the body's bytes are handed over
    /// (`as_sent`) or when it ends, and in any case when it is dropped.
    pub struct Held<B> {
        #[pin]
        inner: B,
        hold: Option<Reservation>,
        as_sent: bool,
    }
}

/// A rewritten page for the client, holding `hold` until all of it has been handed over.
pub fn rewritten(page: Bytes, hold: Reservation) -> Held<Chunks> {
    Held { inner: Chunks { page, sent: 0 }, hold: Some(hold), as_sent: false }
}

/// A body whose first frames are bytes already read and held: the reservation shrinks as they
/// are handed over.
pub fn replayed<B>(body: B, hold: Reservation) -> Held<B> {
    Held { inner: body, hold: Some(hold), as_sent: true }
}

impl<B: Body<Data = Bytes>> Body for Held<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.project();
        let frame = std::task::ready!(this.inner.poll_frame(cx));
        match &frame {
            Some(Ok(f)) => {
                if let (true, Some(hold), Some(data)) = (*this.as_sent, this.hold.as_mut(), f.data_ref()) {
                    let left = hold.bytes().saturating_sub(data.len() as u64);
                    hold.shrink_to(left);
                }
            }
            Some(Err(_)) | None => *this.hold = None,
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A rewritten page in frames of [`CHUNK`] bytes, copied out of it.
pub struct Chunks {
    page: Bytes,
    sent: usize,
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        let len = this.page.len();
        if this.sent >= len {
            return Poll::Ready(None);
        }
        let chunk = if this.sent == 0 && len <= CHUNK {
            // Small enough to hand over as it is.
            std::mem::take(&mut this.page)
        } else {
            let end = (this.sent + CHUNK).min(len);
            let chunk = Bytes::copy_from_slice(&this.page[this.sent..end]);
            this.sent = end;
            if end == len {
                this.page = Bytes::new();
                this.sent = 0;
            }
            chunk
        };
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }

    fn is_end_stream(&self) -> bool {
        self.sent >= self.page.len()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact((self.page.len() - self.sent.min(self.page.len())) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    const UNIT: u64 = 1024;

    #[tokio::test]
    async fn reservations_wait_then_fail_and_give_back_on_drop() {
        let budget = Budget::new(100 * UNIT, Duration::from_millis(20));
        let first = budget.reserve(60 * UNIT).await.expect("room");
        assert_eq!(budget.available(), 40 * UNIT);
        assert!(budget.reserve(60 * UNIT).await.is_none(), "no room within the wait");
        assert!(budget.reserve(30 * UNIT).await.is_none(), "an eighth of the budget stays for pages being read");
        assert!(budget.reserve(25 * UNIT).await.is_some());
        assert!(budget.reserve(101 * UNIT).await.is_none(), "more than the whole budget");
        drop(first);
        assert_eq!(budget.available(), 100 * UNIT);
        let second = budget.reserve(60 * UNIT).await.expect("room again");
        assert_eq!(second.bytes(), 60 * UNIT);
    }

    #[tokio::test]
    async fn a_waiting_page_gets_room_freed_within_its_wait() {
        let budget = Budget::new(100 * UNIT, Duration::from_secs(5));
        let first = budget.reserve(80 * UNIT).await.expect("room");
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            drop(first);
        });
        assert!(budget.reserve(50 * UNIT).await.is_some());
        release.await.unwrap();
    }

    #[tokio::test]
    async fn a_page_being_read_grows_before_a_page_not_started() {
        let budget = Arc::new(Budget::new(100 * UNIT, Duration::from_millis(200)));
        let mut reading = budget.reserve(60 * UNIT).await.unwrap();
        let other = budget.reserve(25 * UNIT).await.unwrap();
        let waiting = budget.clone();
        let arriving = tokio::spawn(async move { waiting.reserve(40 * UNIT).await.map(|r| r.bytes()) });
        while lock(&budget.pool).arriving.is_empty() {
            tokio::task::yield_now().await;
        }
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(other);
        });
        assert!(reading.cover(80 * UNIT).await, "the page being read gets the room freed");
        assert_eq!(arriving.await.unwrap(), None, "the page not started found what was left too small");
        release.await.unwrap();
        drop(reading);
        assert_eq!(budget.available(), 100 * UNIT, "nothing lost to the waiter that gave up");
    }

    #[tokio::test]
    async fn large_pages_leave_room_for_small_ones_to_start_and_grow() {
        // 256 units: large past 8; large pages keep 16 free, growing; 32, starting.
        let budget = Arc::new(Budget::new(256 * UNIT, Duration::from_millis(30)));
        let mut big = budget.reserve(100 * UNIT).await.expect("alone, room");
        let other = budget.reserve(100 * UNIT).await.expect("room above an eighth");
        assert!(budget.reserve(30 * UNIT).await.is_none(), "a large page not started leaves an eighth");
        assert!(!big.cover(150 * UNIT).await, "a large page may not take the last sixteenth");
        assert!(big.cover(140 * UNIT).await);
        assert_eq!(budget.available(), 16 * UNIT);
        // A large page waits at the head of the queue for room it may never take...
        let waiting = budget.clone();
        let stuck = tokio::spawn(async move { waiting.reserve(20 * UNIT).await.is_some() });
        while lock(&budget.pool).arriving.is_empty() {
            tokio::task::yield_now().await;
        }
        // ...and small pages start and grow past it, in the room kept for them.
        let mut small = budget.reserve(6 * UNIT).await.expect("a small page starts in the room kept for it");
        assert!(small.cover(8 * UNIT).await, "and grows in it");
        let second = budget.reserve(UNIT).await;
        assert!(second.is_none(), "a small page not started leaves a thirty-second for pages being read");
        assert!(!stuck.await.unwrap());
        drop((big, other, small));
        assert_eq!(budget.available(), 256 * UNIT, "nothing lost");
    }

    #[tokio::test]
    async fn cover_grows_ahead_within_the_budget_and_shrink_gives_back() {
        let budget = Budget::new(100 * UNIT, Duration::from_millis(10));
        let mut hold = budget.reserve(10 * UNIT).await.unwrap();
        assert!(hold.cover(40 * UNIT).await);
        assert_eq!(hold.bytes(), 60 * UNIT, "half as much again as needed");
        assert!(hold.cover(90 * UNIT).await);
        assert_eq!(hold.bytes(), 100 * UNIT, "ahead only as far as the budget");
        assert!(!hold.cover(101 * UNIT).await);
        assert_eq!(hold.bytes(), 100 * UNIT, "a failed cover keeps what was held");
        hold.shrink_to(30 * UNIT);
        assert_eq!(budget.available(), 70 * UNIT);
        hold.shrink_to(0);
        assert_eq!(budget.available(), 100 * UNIT);
    }

    #[tokio::test]
    async fn a_rewritten_page_holds_until_its_last_byte_is_handed_over() {
        let budget = Budget::new(1 << 20, Duration::ZERO);
        let page: Bytes = (0..150_000u32).map(|i| i as u8).collect::<Vec<u8>>().into();
        let hold = budget.reserve(page.len() as u64).await.unwrap();
        let mut body = std::pin::pin!(rewritten(page.clone(), hold));
        assert_eq!(body.size_hint().exact(), Some(150_000));
        let mut got = Vec::new();
        while let Some(frame) = body.frame().await {
            assert!(budget.available() < 1 << 20 || body.is_end_stream(), "held while frames remain");
            got.extend_from_slice(&frame.unwrap().into_data().unwrap());
        }
        assert_eq!(got, page);
        assert_eq!(budget.available(), 1 << 20);
    }

    #[tokio::test]
    async fn replayed_bytes_are_given_back_as_sent_and_all_on_drop() {
        let budget = Budget::new(1 << 20, Duration::ZERO);
        let hold = budget.reserve(8 * UNIT).await.unwrap();
        let chunks = [Bytes::from(vec![1u8; 4096]), Bytes::from(vec![2u8; 4096]), Bytes::from(vec![3u8; 4096])];
        let inner = http_body_util::StreamBody::new(futures_util::stream::iter(chunks.map(|c| Ok::<_, std::convert::Infallible>(Frame::data(c)))));
        let mut body = Box::pin(replayed(inner, hold));
        body.frame().await.unwrap().unwrap();
        assert_eq!(budget.available(), (1 << 20) - 4 * UNIT);
        drop(body);
        assert_eq!(budget.available(), 1 << 20, "a client gone mid-page gives the rest back");
    }

    #[test]
    fn the_tree_costs_by_markup_and_stage_1_by_bytes() {
        let dense = process_cost(Path::Tree, 1 << 20, 120_000);
        let text = process_cost(Path::Tree, 1 << 20, 12_000);
        assert!(dense > 4 * text / 2, "{dense} vs {text}");
        assert_eq!(process_cost(Path::Stage1, 1 << 20, 120_000), process_cost(Path::Stage1, 1 << 20, 0));
        assert_eq!(count_tags(b"<p>a</p><!-- x -->"), 3);
        // Blocks wholly of `<` fill their byte-wide sums exactly; odd lengths cross block ends.
        for len in [0, 1, 254, 255, 256, 1000, 4097] {
            assert_eq!(count_tags(&vec![b'<'; len]), len as u64);
            let mixed: Vec<u8> = (0..len).map(|i| if i % 3 == 0 { b'<' } else { b'a' }).collect();
            assert_eq!(count_tags(&mixed), mixed.iter().filter(|&&b| b == b'<').count() as u64);
        }
    }
}
