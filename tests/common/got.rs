//! One response as a test client saw it through pith, for the cache tests that read its status,
//! headers and body together, and pith's `/metrics` counters.

use http::Method;

/// One response as the client saw it.
pub struct Got {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Got {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().expect("ASCII header"))
    }

    pub fn x_cache(&self) -> Option<&str> {
        self.header("x-cache")
    }
}

/// Sends `method url` with `headers` and reads the whole response.
pub async fn send(client: &reqwest::Client, method: Method, url: &str, headers: &[(&str, &str)]) -> Got {
    let mut req = client.request(method, url);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let resp = req.send().await.expect("the proxy answers");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.text().await.expect("a whole body");
    Got { status, headers, body }
}

/// `name value` from pith's `/metrics`.
pub async fn metric(client: &reqwest::Client, name: &str) -> u64 {
    let page = send(client, Method::GET, "http://pith/metrics", &[]).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page.body
        .lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{}", page.body))
        .parse()
        .expect("a number")
}
