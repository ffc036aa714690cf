//! IP address classes: whether an address is on the public internet, and if not, which
//! special-purpose block holds it.
//!
//! Two rules depend on this and must agree: the destination rule `upstream.deny_private`
//! ([`crate::net::upstream::resolve`]) refuses every address that is not public, and the open-proxy
//! check of the config counts how much public address space a listener's allow list admits.
//!
//! The classes follow the IANA special-purpose address registries (RFC 6890 and its updates):
//! what is refused is everything that is not globally reachable unicast, not a list of the
//! well-known private networks. A list misses the odd forms that still reach the gateway
//! itself: `::` and `0.0.0.0` (the unspecified address connects to the local host), the
//! deprecated IPv4-compatible `::a.b.c.d`, multicast and reserved space. IPv6 addresses that
//! embed an IPv4 address (IPv4-mapped, NAT64, 6to4, Teredo) are judged by the IPv4 address
//! they lead to: `[64:ff9b::10.0.0.1]` is as private as `10.0.0.1`. All of IPv6 outside
//! `2000::/3`, the global unicast space, is refused, so a future special block there is
//! refused before it is named here.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// A special-purpose block: its network and what it is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The network.
    pub net: IpNet,
    /// Its purpose, in the registry's words.
    pub name: &'static str,
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.net, self.name)
    }
}

/// Why an address is not a public unicast address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotPublic {
    /// The block holding the address (for an embedded IPv4 address, the IPv4 block).
    pub block: Block,
    /// For an IPv6 address judged by the IPv4 address it embeds: the embedding block.
    pub via: Option<Block>,
}

impl fmt::Display for NotPublic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.via {
            None => write!(f, "{}", self.block),
            Some(via) => write!(f, "{}, embedded in {via}", self.block),
        }
    }
}

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8, name: &'static str) -> (Ipv4Addr, u8, &'static str) {
    (Ipv4Addr::new(a, b, c, d), prefix, name)
}

/// IPv4 space that is not public unicast. The blocks are disjoint.
const V4_BLOCKS: [(Ipv4Addr, u8, &str); 15] = [
    v4(0, 0, 0, 0, 8, "\"this network\" (0.0.0.0 reaches the local host)"),
    v4(10, 0, 0, 0, 8, "private-use"),
    v4(100, 64, 0, 0, 10, "shared address space (CGNAT)"),
    v4(127, 0, 0, 0, 8, "loopback"),
    v4(169, 254, 0, 0, 16, "link-local (cloud metadata endpoints)"),
    v4(172, 16, 0, 0, 12, "private-use"),
    v4(192, 0, 0, 0, 24, "IETF protocol assignments"),
    v4(192, 0, 2, 0, 24, "documentation"),
    v4(192, 88, 99, 0, 24, "6to4 relay anycast (deprecated)"),
    v4(192, 168, 0, 0, 16, "private-use"),
    v4(198, 18, 0, 0, 15, "benchmarking"),
    v4(198, 51, 100, 0, 24, "documentation"),
    v4(203, 0, 113, 0, 24, "documentation"),
    v4(224, 0, 0, 0, 4, "multicast"),
    v4(240, 0, 0, 0, 4, "reserved (and broadcast)"),
];

const fn v6(segments: [u16; 8], prefix: u8, name: &'static str) -> ([u16; 8], u8, &'static str) {
    (segments, prefix, name)
}

/// IPv6 blocks that embed an IPv4 address, judged by it ([`embedded_v4`]).
const MAPPED: ([u16; 8], u8, &str) = v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, "IPv4-mapped");
const NAT64: ([u16; 8], u8, &str) = v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, "NAT64");
const SIX_TO_FOUR: ([u16; 8], u8, &str) = v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, "6to4");
const TEREDO: ([u16; 8], u8, &str) = v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, "Teredo");

/// IPv6 space that is not public unicast, most specific first: the first match names the
/// address. Everything outside [`GLOBAL_UNICAST`] is refused even when not listed here.
const V6_BLOCKS: [([u16; 8], u8, &str); 13] = [
    v6([0; 8], 128, "unspecified (:: reaches the local host)"),
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback"),
    v6([0; 8], 96, "IPv4-compatible (deprecated)"),
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "local-use NAT64"),
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, "discard-only"),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "documentation"),
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, "IETF protocol assignments"),
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "documentation"),
    v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, "segment routing (SRv6) SIDs"),
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "unique-local"),
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "link-local"),
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "site-local (deprecated)"),
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "multicast"),
];

/// The IPv6 global unicast space (RFC 4291 §2.4): the only IPv6 space that is public.
const GLOBAL_UNICAST: ([u16; 8], u8, &str) = v6([0x2000, 0, 0, 0, 0, 0, 0, 0], 3, "global unicast");

/// The name of IPv6 space outside every listed block and outside global unicast.
const RESERVED_V6: ([u16; 8], u8, &str) = v6([0; 8], 0, "reserved by IETF (outside the global unicast 2000::/3)");

fn block4((addr, prefix, name): (Ipv4Addr, u8, &'static str)) -> Block {
    Block { net: IpNet::V4(Ipv4Net::new(addr, prefix).expect("the table's prefixes are at most 32")), name }
}

fn block6((segments, prefix, name): ([u16; 8], u8, &'static str)) -> Block {
    let addr = Ipv6Addr::from(segments);
    Block { net: IpNet::V6(Ipv6Net::new(addr, prefix).expect("the table's prefixes are at most 128")), name }
}

fn contains6(block: ([u16; 8], u8, &'static str), ip: Ipv6Addr) -> bool {
    block6(block).net.contains(&IpAddr::V6(ip))
}

/// Whether `ip` is a public unicast address; `None` when it is, else the block that makes it
/// special.
pub fn classify(ip: IpAddr) -> Option<NotPublic> {
    match ip {
        IpAddr::V4(ip) => classify_v4(ip).map(|block| NotPublic { block, via: None }),
        IpAddr::V6(ip) => classify_v6(ip),
    }
}

/// True when `ip` is a public unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    classify(ip).is_none()
}

fn classify_v4(ip: Ipv4Addr) -> Option<Block> {
    V4_BLOCKS.iter().map(|b| block4(*b)).find(|b| b.net.contains(&IpAddr::V4(ip)))
}

fn classify_v6(ip: Ipv6Addr) -> Option<NotPublic> {
    if let Some((via, addrs)) = embedded_v4(ip) {
        return addrs.into_iter().flatten().find_map(classify_v4).map(|block| NotPublic { block, via: Some(via) });
    }
    let listed = V6_BLOCKS.iter().map(|b| block6(*b)).find(|b| b.net.contains(&IpAddr::V6(ip)));
    match listed {
        Some(block) => Some(NotPublic { block, via: None }),
        None if !contains6(GLOBAL_UNICAST, ip) => Some(NotPublic { block: block6(RESERVED_V6), via: None }),
        None => None,
    }
}

/// The IPv4 addresses an IPv6 address leads to, with the block that embeds them: the address
/// itself for IPv4-mapped and NAT64 (RFC 6052, well-known prefix), the relay router for 6to4
/// (RFC 3056), the server and the (inverted) client address for Teredo (RFC 4380).
pub fn embedded_v4(ip: Ipv6Addr) -> Option<(Block, [Option<Ipv4Addr>; 2])> {
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if contains6(MAPPED, ip) {
        return Some((block6(MAPPED), [Some(low32), None]));
    }
    if contains6(NAT64, ip) {
        return Some((block6(NAT64), [Some(low32), None]));
    }
    if contains6(SIX_TO_FOUR, ip) {
        return Some((block6(SIX_TO_FOUR), [Some(Ipv4Addr::from((bits >> 80) as u32)), None]));
    }
    if contains6(TEREDO, ip) {
        let server = Ipv4Addr::from((bits >> 64) as u32);
        let client = Ipv4Addr::from(!((bits & 0xffff_ffff) as u32));
        return Some((block6(TEREDO), [Some(server), Some(client)]));
    }
    None
}

/// How many public addresses a set of networks holds together: overlaps are counted once and
/// special-purpose space not at all. IPv6 is counted in /64 subnets (a LAN's size), so both
/// counts fit their types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PublicCoverage {
    /// Public IPv4 addresses.
    pub v4_addresses: u64,
    /// Public IPv6 /64 subnets.
    pub v6_subnets: u64,
}

/// The public address space `nets` cover together.
pub fn public_coverage(nets: &[IpNet]) -> PublicCoverage {
    let mut coverage = PublicCoverage::default();
    for net in IpNet::aggregate(&nets.to_vec()) {
        match net {
            IpNet::V4(n) => {
                let special: u64 = V4_BLOCKS.iter().map(|b| overlap4(n, block4(*b))).sum();
                coverage.v4_addresses += size4(n.prefix_len()) - special;
            }
            IpNet::V6(n) => coverage.v6_subnets += public_subnets6(n),
        }
    }
    coverage
}

fn size4(prefix: u8) -> u64 {
    1u64 << (32 - u32::from(prefix))
}

/// Addresses `n` shares with `block` (two CIDR networks overlap only when one holds the other).
fn overlap4(n: Ipv4Net, block: Block) -> u64 {
    let IpNet::V4(b) = block.net else { return 0 };
    if n.contains(&b) {
        size4(b.prefix_len())
    } else if b.contains(&n) {
        size4(n.prefix_len())
    } else {
        0
    }
}

/// /64 subnets of `n` inside global unicast and outside its special blocks.
fn public_subnets6(n: Ipv6Net) -> u64 {
    let subnets = |prefix: u8| if prefix >= 64 { 1 } else { 1u64 << (64 - u32::from(prefix)) };
    let overlap = |b: Ipv6Net| {
        if n.contains(&b) {
            subnets(b.prefix_len())
        } else if b.contains(&n) {
            subnets(n.prefix_len())
        } else {
            0
        }
    };
    let IpNet::V6(global) = block6(GLOBAL_UNICAST).net else { return 0 };
    let inside = overlap(global);
    if inside == 0 {
        return 0;
    }
    // The special blocks inside global unicast (they are disjoint); the others lie outside.
    let special: u64 = V6_BLOCKS
        .iter()
        .filter_map(|b| match block6(*b).net {
            IpNet::V6(b) if global.contains(&b) => Some(b),
            _ => None,
        })
        .map(overlap)
        .sum();
    inside.saturating_sub(special)
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! class {
        ($name:ident, $ip:expr, $expect:expr) => {
            #[test]
            fn $name() {
                let got = classify($ip.parse().unwrap()).map(|c| c.to_string());
                let expect: Option<&str> = $expect;
                match (got.as_deref(), expect) {
                    (None, None) => {}
                    (Some(got), Some(want)) => assert!(got.starts_with(want), "{} is {got:?}, expected {want:?}", $ip),
                    (got, want) => panic!("{} is {got:?}, expected {want:?}", $ip),
                }
            }
        };
    }

    class!(public_v4, "93.184.216.34", None);
    class!(public_v6, "2606:2800:220:1::1", None);
    class!(unspecified_v4, "0.0.0.0", Some("0.0.0.0/8"));
    class!(this_network, "0.1.2.3", Some("0.0.0.0/8"));
    class!(loopback_v4, "127.0.0.1", Some("127.0.0.0/8 loopback"));
    class!(private_10, "10.1.2.3", Some("10.0.0.0/8 private-use"));
    class!(private_172, "172.31.255.255", Some("172.16.0.0/12 private-use"));
    class!(public_172_edge, "172.32.0.1", None);
    class!(private_192, "192.168.1.1", Some("192.168.0.0/16 private-use"));
    class!(link_local_metadata, "169.254.169.254", Some("169.254.0.0/16 link-local"));
    class!(cgnat, "100.64.1.2", Some("100.64.0.0/10"));
    class!(cgnat_edge_is_public, "100.128.0.1", None);
    class!(benchmarking, "198.19.0.1", Some("198.18.0.0/15 benchmarking"));
    class!(multicast_v4, "239.1.2.3", Some("224.0.0.0/4 multicast"));
    class!(broadcast, "255.255.255.255", Some("240.0.0.0/4"));
    class!(unspecified_v6, "::", Some("::/128 unspecified"));
    class!(loopback_v6, "::1", Some("::1/128 loopback"));
    class!(ipv4_compatible, "::127.0.0.1", Some("::/96 IPv4-compatible"));
    class!(ipv4_compatible_public, "::93.184.216.34", Some("::/96 IPv4-compatible"));
    class!(mapped_loopback, "::ffff:127.0.0.1", Some("127.0.0.0/8 loopback, embedded in ::ffff:0.0.0.0/96 IPv4-mapped"));
    class!(mapped_unspecified, "::ffff:0.0.0.0", Some("0.0.0.0/8"));
    class!(mapped_public, "::ffff:93.184.216.34", None);
    class!(nat64_private, "64:ff9b::10.0.0.1", Some("10.0.0.0/8 private-use, embedded in 64:ff9b::/96 NAT64"));
    class!(nat64_public, "64:ff9b::93.184.216.34", None);
    class!(nat64_local_use, "64:ff9b:1::1", Some("64:ff9b:1::/48 local-use NAT64"));
    class!(six_to_four_private, "2002:c0a8:0101::1", Some("192.168.0.0/16 private-use, embedded in 2002::/16 6to4"));
    class!(six_to_four_loopback, "2002:7f00:1::1", Some("127.0.0.0/8 loopback, embedded in 2002::/16 6to4"));
    class!(six_to_four_public, "2002:5db8:d822::1", None);
    // Teredo server 65.54.227.120, client 192.168.1.1 stored inverted (3f57:fefe).
    class!(teredo_private_client, "2001:0:4136:e378:8000:63bf:3f57:fefe", Some("192.168.0.0/16 private-use, embedded in 2001::/32 Teredo"));
    class!(teredo_private_server, "2001:0:0a00:0001:8000:63bf:a247:27dd", Some("10.0.0.0/8"));
    class!(teredo_public, "2001:0:4136:e378:8000:63bf:a247:27dd", None);
    class!(documentation_v6, "2001:db8::1", Some("2001:db8::/32 documentation"));
    class!(ietf_assignments, "2001:2::1", Some("2001::/23"));
    class!(unique_local, "fd12::1", Some("fc00::/7 unique-local"));
    class!(link_local_v6, "fe80::1", Some("fe80::/10 link-local"));
    class!(site_local, "fec0::1", Some("fec0::/10"));
    class!(multicast_v6, "ff02::1", Some("ff00::/8 multicast"));
    class!(discard, "100::1", Some("100::/64 discard-only"));
    class!(outside_global_unicast, "4000::1", Some("::/0 reserved"));

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|n| n.parse().unwrap()).collect()
    }

    #[test]
    fn coverage_counts_the_union_of_public_space_only() {
        let all_v4 = (1u64 << 32) - V4_BLOCKS.iter().map(|b| size4(b.1)).sum::<u64>();
        assert_eq!(public_coverage(&nets(&["0.0.0.0/0"])).v4_addresses, all_v4);
        assert_eq!(public_coverage(&nets(&["0.0.0.0/1", "128.0.0.0/1"])).v4_addresses, all_v4, "halves cover the whole");
        assert_eq!(public_coverage(&nets(&["10.0.0.0/8", "192.168.0.0/16", "127.0.0.1/32"])).v4_addresses, 0);
        assert_eq!(public_coverage(&nets(&["1.2.3.0/24", "1.2.3.0/25"])).v4_addresses, 256, "overlaps count once");
        assert_eq!(public_coverage(&nets(&["fd00::/8", "fe80::/10", "::1/128"])).v6_subnets, 0);
        assert_eq!(public_coverage(&nets(&["2a01:db8:1::/48"])).v6_subnets, 1 << 16);
        assert_eq!(public_coverage(&nets(&["2a01:db8:1:2::1/128"])).v6_subnets, 1);
        let global = public_coverage(&nets(&["::/0"])).v6_subnets;
        assert!(global > 1 << 60, "{global}");
        assert_eq!(public_coverage(&nets(&["::/1", "8000::/1"])).v6_subnets, global);
    }
}
