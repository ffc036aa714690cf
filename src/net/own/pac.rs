//! `http://pith/proxy.pac` and `/wpad.dat`: the proxy auto-config file that sends everything
//! through this listener except local names, local networks (loopback, private, link-local)
//! and the operator's `control.bypass` list.
//!
//! The proxy's address in it is the listener's own when it is bound to one; a listener bound to
//! a wildcard address is named by the host the client reached it by (the request's `Host`),
//! with the listener's port. `pith` itself always goes through the proxy: it is no real host.

use http::header::{self, HeaderValue};
use http::{HeaderMap, Response};

use crate::net::exchange::bodies::{self, ProxyBody};
use crate::net::State;
use crate::config::ListenerConfig;

/// The PAC file's media type (what browsers and WPAD clients expect).
pub const CONTENT_TYPE: &str = "application/x-ns-proxy-autoconfig";

/// Networks that stay direct, as (network, mask).
const LOCAL_V4: [(&str, &str); 5] = [
    ("127.0.0.0", "255.0.0.0"),
    ("10.0.0.0", "255.0.0.0"),
    ("172.16.0.0", "255.240.0.0"),
    ("192.168.0.0", "255.255.0.0"),
    ("169.254.0.0", "255.255.0.0"),
];

/// The PAC file for a client of `listener`.
pub fn serve(state: &State, listener: &ListenerConfig, headers: &HeaderMap) -> Response<ProxyBody> {
    let address = proxy_address(listener, headers);
    let mut resp = Response::new(bodies::full(script(&address, &state.config.control.bypass)));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("max-age=300"));
    resp
}

/// `host:port` clients should use for this listener (also printed on the control page).
pub(super) fn proxy_address(listener: &ListenerConfig, headers: &HeaderMap) -> String {
    let bound = listener.address;
    if !bound.ip().is_unspecified() {
        return bound.to_string();
    }
    let reached = headers.get(header::HOST).and_then(|v| v.to_str().ok()).and_then(|h| h.parse::<http::uri::Authority>().ok());
    match reached {
        Some(a) if !a.host().eq_ignore_ascii_case("pith") && !a.host().eq_ignore_ascii_case("wpad") => format!("{}:{}", a.host(), bound.port()),
        _ => format!("{}:{}", std::net::Ipv4Addr::LOCALHOST, bound.port()),
    }
}

/// The script. Every string in it was checked by the config (host names, networks) or is an
/// address, so none needs quoting beyond its double quotes.
pub fn script(address: &str, bypass: &[String]) -> String {
    let mut names = Vec::new();
    let mut nets = Vec::new();
    for entry in bypass {
        match entry.parse::<ipnet::IpNet>() {
            Ok(ipnet::IpNet::V4(n)) => nets.push(format!("isInNet(ip, \"{}\", \"{}\")", n.network(), n.netmask())),
            Ok(ipnet::IpNet::V6(n)) => nets.push(format!("(typeof isInNetEx == \"function\" && isInNetEx(ip, \"{n}\"))")),
            Err(_) if entry.contains('*') => names.push(format!("shExpMatch(host, \"{entry}\")")),
            Err(_) => names.push(format!("host == \"{entry}\" || dnsDomainIs(host, \".{entry}\")")),
        }
    }
    nets.extend(LOCAL_V4.iter().map(|(n, m)| format!("isInNet(ip, \"{n}\", \"{m}\")")));
    let names = if names.is_empty() { "false".to_string() } else { names.join(" ||\n      ") };
    format!(
        "// pith: everything through the proxy but local names, local networks and the bypass list.\n\
         function FindProxyForURL(url, host) {{\n  \
           host = host.toLowerCase();\n  \
           if (host == \"pith\") return \"PROXY {address}\";\n  \
           if (isPlainHostName(host) || host == \"localhost\" || dnsDomainIs(host, \".local\") || dnsDomainIs(host, \".localhost\")) return \"DIRECT\";\n  \
           if ({names}) return \"DIRECT\";\n  \
           var ip = /^[0-9.]+$/.test(host) ? host : dnsResolve(host);\n  \
           if (ip && ({nets})) return \"DIRECT\";\n  \
           return \"PROXY {address}\";\n\
         }}\n",
        nets = nets.join(" ||\n      "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bypass_entries_become_checks() {
        let s = script("127.0.0.1:8080", &["intranet.example".into(), "*.lan".into(), "10.1.0.0/16".into()]);
        assert!(s.contains("return \"PROXY 127.0.0.1:8080\";"), "{s}");
        assert!(s.contains("dnsDomainIs(host, \".intranet.example\")") && s.contains("shExpMatch(host, \"*.lan\")"), "{s}");
        assert!(s.contains("isInNet(ip, \"10.1.0.0\", \"255.255.0.0\")") && s.contains("isInNet(ip, \"192.168.0.0\", \"255.255.0.0\")"), "{s}");
    }
}
