//! One `RESPMOD`, as named steps: read the encapsulated heads, decide with the proxy's
//! [`plan`], read the body (its preview first, `100 Continue` for the rest) the way the proxy
//! reads a page, then answer: the rewritten response, or `204` (or an echo) for one left alone.

use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, StatusCode};

use crate::net::exchange::budget::{self, Path, Reservation};
use crate::net::exchange::respond::{self, looks_like_html, plan, Exchange, Plan, SNIFF_BYTES};
use crate::net::decide::{decide, Entry};
use crate::net::State;
use super::{settings, Conn, Failure, Piece};
use crate::body::{DecodeError, Decoder};
use crate::icap::chunked::{encode_chunk, LAST_CHUNK};
use crate::icap::head::{parse_http_head, write_http_response_head, HttpHead};
use crate::icap::{ChunkParser, IcapError, IcapHead, Section};
use crate::pipeline::ServedForm;

/// Largest chunk pith writes: a rewritten page goes out in pieces of this size.
const CHUNK_OUT: usize = 64 * 1024;

/// Body bytes read past which the answer's head goes before the page is whole
/// ([`Conn::commit`]): half of Squid's 64 KiB buffer, so the head is sent well before Squid
/// stops reading the origin.
const EARLY_HEAD_BYTES: u64 = 32 * 1024;

/// Where a `RESPMOD`'s body stands.
struct Message {
    /// The response head's bytes as the client sent them, for an echo.
    res_raw: Bytes,
    /// The parsed response head.
    res: HttpHead,
    /// A body follows (`res-body`), not `null-body`.
    has_body: bool,
    /// The client is still in its preview: no `100 Continue` sent, so `204` is always allowed.
    in_preview: bool,
    /// The body (or a preview ending in `ieof`) has been read to its last chunk.
    done: bool,
    /// The preview's last chunk (without `ieof`) was read: the rest waits for `100 Continue`.
    preview_ended: bool,
    /// The client allows `204` outside a preview.
    allow_204: bool,
    /// The `200` and the page's head went early ([`Conn::commit`]), with this Content-Type.
    committed: Option<&'static str>,
    parser: ChunkParser,
}

/// What reading a page to rewrite it came to.
enum Collected {
    /// The whole page, decoded, with its share of the rewrite memory budget.
    Whole { decoded: Vec<u8>, hold: Reservation },
    /// Left alone after all; `raw` is the body read so far, as sent.
    Stopped { raw: Vec<Bytes>, why: &'static str },
    /// The body ended at another length than the response's `Content-Length` says: the
    /// proxy's origin cut it short (Squid 5.7 ends the encapsulated body cleanly when its
    /// origin closes early), so there is no whole page to rewrite.
    Short { got: u64, stated: u64 },
}

impl Conn {
    /// Serves one `RESPMOD`; returns the ICAP status answered.
    pub(super) async fn respmod(&mut self, state: &State, head: &IcapHead) -> Result<u16, Failure> {
        self.counters.respmod.fetch_add(1, Ordering::Relaxed);
        let (mut msg, req) = self.read_heads(state, head).await?;
        let service = settings(state, self.index, &self.bound);
        let decided = decide(state, Entry::Icap { service: &service }).expect("an ICAP service's profile is its own: the decision cannot fail");
        let profile = decided.profile;
        let (method, url, host) = request_of(req.as_ref());
        self.note.url.clone_from(&url);
        let accept_encoding = req.as_ref().and_then(|r| r.headers.get(header::ACCEPT_ENCODING).cloned());
        let accept = req.as_ref().and_then(|r| r.headers.get(header::ACCEPT).cloned());
        let ex = Exchange { method: &method, host: &host, url: &url, accept_encoding, accept, profile: &profile, client: None };
        let limit = state.config.limits.max_rewrite_bytes;
        let status = StatusCode::from_u16(msg.res.status).map_err(|_| IcapError::HttpHead { why: "the status code is out of range" })?;
        let planned = msg.has_body.then(|| plan(&method, &profile, status, &msg.res.headers, limit)).flatten();
        let Some(planned) = planned else { return self.unchanged(state, &mut msg, Vec::new(), "pass").await };
        let (decoded, hold) = match self.collect(state, &mut msg, &planned, &ex, status).await? {
            Collected::Whole { decoded, hold } => (decoded, hold),
            Collected::Stopped { why, .. } if msg.committed.is_some() => return Err(Failure::Abandoned(why)),
            Collected::Stopped { raw, why } => return self.unchanged(state, &mut msg, raw, why).await,
            Collected::Short { got, stated } => return self.short(&msg, got, stated).await,
        };
        let mut headers = std::mem::take(&mut msg.res.headers);
        let body = match respond::rewrite(state, &ex, &mut headers, decoded, None).await {
            Ok(body) => body,
            Err(e) => return self.rewrite_failed(&msg, &e.to_string()).await,
        };
        self.counters.rewritten.fetch_add(1, Ordering::Relaxed);
        self.note.action = "rewrite";
        let sent = match msg.committed {
            Some(sent_type) => self.finish_committed(sent_type, &headers, &body).await,
            None => self.answer_rewritten(status, &headers, &body).await,
        };
        drop(hold);
        sent
    }

    /// A page read whole that the pipeline could not rewrite: `204` hands the client back its
    /// own copy when allowed; after an early head nothing can be taken back.
    async fn rewrite_failed(&mut self, msg: &Message, error: &str) -> Result<u16, Failure> {
        tracing::warn!(url = self.note.url, error, "icap: the page could not be rewritten");
        self.note.action = "error";
        if msg.committed.is_some() {
            return Err(Failure::Abandoned("error"));
        }
        if msg.allow_204 || msg.in_preview {
            self.answer_status(204, "No Content", false).await
        } else {
            self.answer_status(500, "Server Error", false).await
        }
    }

    /// A body that ended short of (or past) its `Content-Length`: never rewritten into a page
    /// that looks whole. `204` hands the client back its own copy, whose length still tells
    /// its client the page is short; without `204`, an ICAP error; after an early head, the
    /// answer is cut short.
    async fn short(&mut self, msg: &Message, got: u64, stated: u64) -> Result<u16, Failure> {
        tracing::warn!(url = self.note.url, got, stated, "icap: the body ended at another length than its Content-Length; not rewritten");
        self.note.action = "short";
        if msg.committed.is_some() {
            return Err(Failure::Abandoned("short"));
        }
        if msg.allow_204 || msg.in_preview {
            self.answer_status(204, "No Content", false).await
        } else {
            self.answer_status(500, "Server Error", false).await
        }
    }

    /// Answers `200` with the rewritten page's head before the page is read whole. Squid reads
    /// no more of an origin's body than its 64 KiB buffer holds until the ICAP answer begins
    /// (measured with Squid 5.7: a 583 KiB page stalled at 65,535 bytes until its client gave
    /// up), so a long page gets the head that does not depend on its content
    /// ([`respond::rewritten_head`]: no length, `x-pith` with the profile alone), and its body
    /// when it is rewritten. A page that then cannot be rewritten (too large, no memory, bad
    /// coding) is cut short: the connection closes without the last chunk.
    async fn commit(&mut self, state: &State, msg: &mut Message, ex: &Exchange<'_>, status: StatusCode) -> Result<(), Failure> {
        let mut headers = msg.res.headers.clone();
        let coding = crate::body::choose_encoding(ex.accept_encoding.as_ref().and_then(|v| v.to_str().ok()));
        let content_type = ServedForm::Asked(ex.profile.output).content_type();
        respond::rewritten_head(&mut headers, content_type, coding, state);
        if let Ok(v) = HeaderValue::from_str(&format!("profile={}", ex.profile.name)) {
            headers.insert("x-pith", v);
        }
        let http_head = write_http_response_head(status, &headers);
        let mut out = self.response_head(200, "OK", &format!("res-hdr=0, res-body={}", http_head.len()), "");
        self.answering = true;
        out.extend_from_slice(&http_head);
        self.send(&out).await?;
        msg.committed = Some(content_type);
        Ok(())
    }

    /// The body of a page whose head went early ([`Conn::commit`]).
    async fn finish_committed(&mut self, sent_type: &'static str, headers: &HeaderMap, body: &[u8]) -> Result<u16, Failure> {
        if headers.get(header::CONTENT_TYPE).is_some_and(|t| t != sent_type) {
            tracing::warn!(url = self.note.url, sent_type, "icap: the page was served in another form than its early head says");
        }
        let mut out = Vec::with_capacity(body.len() + body.len() / CHUNK_OUT * 12 + 16);
        for piece in body.chunks(CHUNK_OUT) {
            encode_chunk(piece, &mut out);
        }
        out.extend_from_slice(LAST_CHUNK);
        self.send(&out).await?;
        Ok(200)
    }

    /// Reads and parses the encapsulated HTTP heads; the response head is required.
    async fn read_heads(&mut self, state: &State, head: &IcapHead) -> Result<(Message, Option<HttpHead>), Failure> {
        let bad = |why| Failure::Bad(IcapError::Encapsulated { value: head.header("encapsulated").unwrap_or("").chars().take(100).collect(), why });
        let Some(enc) = head.encapsulated.clone() else { return Err(bad("RESPMOD needs it")) };
        if !matches!(enc.body, Section::ResBody | Section::NullBody) {
            return Err(bad("RESPMOD carries res-body or null-body"));
        }
        let Some(res_range) = enc.res_hdr.clone() else { return Err(bad("RESPMOD needs res-hdr")) };
        self.fill_to(enc.body_offset, state).await?;
        let heads = self.buf.split_to(enc.body_offset).freeze();
        let fields = state.config.limits.max_headers;
        let req = enc.req_hdr.map(|r| parse_http_head(&heads[r], true, fields)).transpose()?;
        let res = parse_http_head(&heads[res_range.clone()], false, fields)?;
        let has_body = enc.body == Section::ResBody;
        let msg = Message {
            res_raw: heads.slice(res_range),
            res,
            has_body,
            in_preview: head.preview.is_some() && has_body,
            done: !has_body,
            preview_ended: false,
            allow_204: head.allow_204,
            committed: None,
            parser: ChunkParser::new(),
        };
        Ok((msg, req))
    }

    /// The next piece of the body: the preview's, then, after `100 Continue` (sent when the
    /// preview ends without `ieof` and more is wanted), the rest.
    async fn next_body_piece(&mut self, state: &State, msg: &mut Message) -> Result<Piece, Failure> {
        loop {
            if msg.done {
                return Ok(Piece::End { ieof: false });
            }
            if msg.preview_ended {
                self.send(b"ICAP/1.0 100 Continue\r\n\r\n").await?;
                (msg.preview_ended, msg.in_preview) = (false, false);
                msg.parser.reset();
            }
            match self.next_piece(&mut msg.parser, state).await? {
                Piece::Data(data) => return Ok(Piece::Data(data)),
                Piece::End { ieof } if msg.in_preview && !ieof => msg.preview_ended = true,
                Piece::End { ieof } => {
                    msg.done = true;
                    return Ok(Piece::End { ieof });
                }
            }
        }
    }

    /// Reads a page the way the proxy does ([`respond`]'s `collect`): decoded as it arrives
    /// up to `limits.max_rewrite_bytes`, sniffed when it has no type, and covered by the
    /// rewrite memory budget; it stops, to be left alone, at the first of those that fails.
    async fn collect(&mut self, state: &State, msg: &mut Message, planned: &Plan, ex: &Exchange<'_>, status: StatusCode) -> Result<Collected, Failure> {
        let limit = state.config.limits.max_rewrite_bytes;
        let path = Path::of(ex.profile);
        let length = msg.res.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
        let stated = length.unwrap_or(0).min(limit);
        let Some(mut hold) = state.budget.reserve(budget::page_cost(path, stated, stated, stated, 0)).await else {
            return Ok(Collected::Stopped { raw: Vec::new(), why: "over-budget" });
        };
        let (mut raw, mut raw_len, mut tags) = (Vec::new(), 0u64, 0u64);
        let mut decoded = Vec::with_capacity(stated.min(4 << 20) as usize);
        let mut decoder = Decoder::new(&planned.codings, limit);
        let mut sniffing = planned.sniff;
        loop {
            let (chunk, end) = match self.next_body_piece(state, msg).await? {
                Piece::Data(data) => (data, false),
                Piece::End { .. } => (Bytes::new(), true),
            };
            raw_len += chunk.len() as u64;
            if raw_len > limit {
                raw.push(chunk);
                return Ok(Collected::Stopped { raw, why: "too-large" });
            }
            let before = decoded.len();
            match decoder.decode_into(&chunk, end, &mut decoded) {
                Ok(()) => {}
                Err(DecodeError::LimitExceeded { .. }) => return Ok(stopped(raw, chunk, "too-large")),
                Err(e) => {
                    tracing::debug!(url = ex.url, error = %e, "icap: the body does not decode; left alone");
                    return Ok(stopped(raw, chunk, "pass"));
                }
            }
            if !chunk.is_empty() {
                raw.push(chunk);
            }
            if sniffing && (decoded.len() >= SNIFF_BYTES || end) {
                if !looks_like_html(&decoded[..decoded.len().min(SNIFF_BYTES)]) {
                    return Ok(Collected::Stopped { raw, why: "pass" });
                }
                sniffing = false;
            }
            tags += budget::count_tags(&decoded[before..]);
            if !hold.cover(budget::page_cost(path, raw_len, decoded.capacity() as u64, decoded.len() as u64, tags)).await {
                return Ok(Collected::Stopped { raw, why: "over-budget" });
            }
            if end {
                if let Some(stated) = length.filter(|&n| n != raw_len) {
                    return Ok(Collected::Short { got: raw_len, stated });
                }
                return Ok(Collected::Whole { decoded, hold });
            }
            if msg.committed.is_none() && !msg.in_preview && raw_len >= EARLY_HEAD_BYTES {
                self.commit(state, msg, ex, status).await?;
            }
        }
    }

    /// Answers a response pith leaves alone: `204` when the client allows it (always during a
    /// preview), after reading what it still sends; else the response echoed as it came,
    /// `raw` (the body read so far) and then the rest as it arrives.
    async fn unchanged(&mut self, state: &State, msg: &mut Message, raw: Vec<Bytes>, why: &'static str) -> Result<u16, Failure> {
        self.note.action = why;
        if msg.in_preview {
            while !msg.done && !msg.preview_ended {
                match self.next_piece(&mut msg.parser, state).await? {
                    Piece::Data(_) => {}
                    Piece::End { ieof: true } => msg.done = true,
                    Piece::End { ieof: false } => msg.preview_ended = true,
                }
            }
            return self.answer_status(204, "No Content", false).await;
        }
        if msg.allow_204 {
            if !msg.done {
                self.drain_body(&mut msg.parser, state).await?;
            }
            return self.answer_status(204, "No Content", false).await;
        }
        self.echo(state, msg, raw).await
    }

    /// The response as it came: its head, the body read so far, then the rest as it arrives.
    async fn echo(&mut self, state: &State, msg: &mut Message, raw: Vec<Bytes>) -> Result<u16, Failure> {
        let res_raw = msg.res_raw.clone();
        let encapsulated = if msg.has_body { format!("res-hdr=0, res-body={}", res_raw.len()) } else { format!("res-hdr=0, null-body={}", res_raw.len()) };
        let mut out = self.response_head(200, "OK", &encapsulated, "");
        self.answering = true;
        out.extend_from_slice(&res_raw);
        for chunk in &raw {
            encode_chunk(chunk, &mut out);
        }
        self.send(&out).await?;
        if !msg.has_body {
            return Ok(200);
        }
        while let Piece::Data(data) = self.next_body_piece(state, msg).await? {
            let mut out = Vec::with_capacity(data.len() + 12);
            encode_chunk(&data, &mut out);
            self.send(&out).await?;
        }
        self.send(LAST_CHUNK).await?;
        Ok(200)
    }

    /// `200 OK` with the rewritten response head and body.
    async fn answer_rewritten(&mut self, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Result<u16, Failure> {
        let http_head = write_http_response_head(status, headers);
        let encapsulated = format!("res-hdr=0, res-body={}", http_head.len());
        let mut out = self.response_head(200, "OK", &encapsulated, "");
        self.answering = true;
        out.reserve(http_head.len() + body.len() + 64);
        out.extend_from_slice(&http_head);
        for piece in body.chunks(CHUNK_OUT) {
            encode_chunk(piece, &mut out);
        }
        out.extend_from_slice(LAST_CHUNK);
        self.send(&out).await?;
        Ok(200)
    }
}

/// A stop after `chunk` was read but not yet kept: it joins what was read.
fn stopped(mut raw: Vec<Bytes>, chunk: Bytes, why: &'static str) -> Collected {
    if !chunk.is_empty() {
        raw.push(chunk);
    }
    Collected::Stopped { raw, why }
}

/// The request a response answers, from the encapsulated request head: its method (GET when
/// the client sent none), its absolute URL (an origin-form target gets `http://` and the
/// Host), and its host.
fn request_of(req: Option<&HttpHead>) -> (Method, String, String) {
    let Some(req) = req else { return (Method::GET, String::new(), String::new()) };
    let method = Method::from_bytes(req.method.as_bytes()).unwrap_or(Method::GET);
    let host_header = req.headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    let url = if req.target.starts_with("http://") || req.target.starts_with("https://") {
        req.target.clone()
    } else if req.target.starts_with('/') && !host_header.is_empty() {
        format!("http://{host_header}{}", req.target)
    } else {
        String::new()
    };
    let host = url::Url::parse(&url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_else(|| host_header.to_string());
    (method, url, host)
}

