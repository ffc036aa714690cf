//! One small page per rule of [`super::classify`].

use super::*;

const PROSE: &str = "A paragraph of real article text, long enough to be what the page is about, with clauses, commas, and then some more words to make it prose. ";

fn kind_of(html: &str) -> Kind {
    classify(&Tree::parse(html), None)
}

fn article_page() -> String {
    format!("<html><body><article><h1>Harbour closed</h1><p>{0}{0}</p><p>{0}{0}</p><p>{0}</p></article></body></html>", PROSE)
}

fn cards(n: usize, price: bool) -> String {
    let mut html = String::from("<html><body><h1>Our things</h1><div class=grid>");
    for i in 0..n {
        let price = if price {
            format!("<span>${i}.99</span>")
        } else {
            String::new()
        };
        html.push_str(&format!("<div class=card><a href=/t/{i}><img src=/i/{i}.jpg><h3>Thing number {i}</h3></a><p>A short line about thing {i}.</p>{price}</div>"));
    }
    html.push_str("</div></body></html>");
    html
}

fn posts(n: usize) -> String {
    let mut html = String::from("<html><body><h1>Why does my boiler click?</h1><div class=thread>");
    for i in 0..n {
        html.push_str(&format!(
            "<div class=message><div class=user-info><a href=/u/{i}>user{i}</a></div><time datetime=2024-03-0{}>3 March</time><p>I had the same clicking, post {i}: it was the pump, and replacing it fixed it.</p><a href=#r>Reply</a></div>",
            i % 9 + 1
        ));
    }
    html.push_str("</div></body></html>");
    html
}

macro_rules! kinds {
    ($($name:ident: $html:expr => $kind:expr;)*) => {$(
        #[test]
        fn $name() {
            let html: String = $html;
            let got = kind_of(&html);
            assert_eq!(got.kind, $kind, "{got:?}\n{:?}", signals::gather(&Tree::parse(&html), None));
        }
    )*};
}

kinds! {
    empty_page_is_an_article: String::new() => PageKind::Article;
    prose_is_an_article: article_page() => PageKind::Article;
    json_ld_product: format!("<html><head><script type=application/ld+json>{{\"@context\":\"https://schema.org\",\"@type\":\"Product\",\"name\":\"Kettle\",\"offers\":{{\"@type\":\"Offer\",\"price\":\"20\"}}}}</script></head><body><h1>Kettle</h1><p>{PROSE}</p></body></html>") => PageKind::Product;
    og_product: "<html><head><meta property=og:type content=product></head><body><h1>Kettle</h1><p>Boils water.</p></body></html>".to_string() => PageKind::Product;
    buy_button_and_price: "<html><body><h1>Kettle</h1><p>Boils water fast.</p><span class=amount>€ 24,90</span><button>Add to cart</button></body></html>".to_string() => PageKind::Product;
    buy_button_in_german: "<html><body><h1>Wasserkocher</h1><p>Kocht Wasser.</p><span>24,90 €</span><button>In den Warenkorb</button></body></html>".to_string() => PageKind::Product;
    json_ld_forum_posting: "<html><head><script type=application/ld+json>{\"@type\":\"DiscussionForumPosting\",\"headline\":\"Boiler\"}</script></head><body><h1>Boiler</h1><p>It clicks.</p></body></html>".to_string() => PageKind::Forum;
    json_ld_qa_page: "<html><head><script type=application/ld+json>{\"@type\":[\"QAPage\"],\"mainEntity\":{\"@type\":\"Question\"}}</script></head><body><h1>Boiler?</h1><p>It clicks.</p></body></html>".to_string() => PageKind::Forum;
    posts_with_authors_and_dates: posts(6) => PageKind::Forum;
    repeated_cards_are_a_listing: cards(12, false) => PageKind::Listing;
    priced_cards_are_a_collection: cards(12, true) => PageKind::Collection;
    og_product_group: "<html><head><meta property=og:type content=product.group></head><body><h1>Kettles</h1></body></html>".to_string() => PageKind::Collection;
    json_ld_collection_of_products: "<html><head><script type=application/ld+json>{\"@type\":\"ItemList\",\"itemListElement\":[{\"@type\":\"Product\"},{\"@type\":\"Product\"},{\"@type\":\"Product\"}]}</script></head><body><h1>Kettles</h1></body></html>".to_string() => PageKind::Collection;
    json_ld_tech_article: "<html><head><script type=application/ld+json>{\"@type\":\"TechArticle\"}</script></head><body><h1>Configure</h1><p>Set the key.</p></body></html>".to_string() => PageKind::Documentation;
    code_beside_a_nav_tree: {
        let links: String = (0..20).map(|i| format!("<li><a href=/d/{i}>Page {i}</a><ul><li><a href=/d/{i}/a>Sub</a></li></ul></li>")).collect();
        format!("<html><body><nav><ul>{links}</ul></nav><main><h1>Config</h1><p>Set it:</p><pre>key = 1</pre><p>Then:</p><pre>run --now</pre><pre>check</pre><p>Use <code>key</code> and <code>run</code>.</p></main></body></html>")
    } => PageKind::Documentation;
    sections_under_headings: {
        let sections: String = ["Design", "Build", "Support", "Pricing", "Contact"].iter().map(|h| format!("<section><h2>{h}</h2><p>We do {h} for you, quickly and well.</p><a href=/{h}>Learn more</a></section>")).collect();
        format!("<html><body><h1>Our services</h1>{sections}</body></html>")
    } => PageKind::Service;
    json_ld_service: "<html><head><script type=application/ld+json>{\"@type\":\"Service\",\"name\":\"Plumbing\"}</script></head><body><h1>Plumbing</h1><p>We fix pipes.</p></body></html>".to_string() => PageKind::Service;
    forum_address: {
        let html = "<html><head><link rel=canonical href=https://e.example/forum/boiler-clicks.123></head><body><h1>Boiler</h1><p>It clicks. Anyone?</p><p>Reply</p><p>Quote</p></body></html>";
        html.to_string()
    } => PageKind::Forum;
    an_article_with_related_cards_stays_an_article: {
        let related: String = (0..4).map(|i| format!("<div class=teaser><a href=/r/{i}><img src=/r{i}.jpg><h3>Related {i}</h3></a></div>")).collect();
        format!("<html><head><meta property=og:type content=article></head><body><article><h1>Harbour</h1><p>{0}{0}{0}</p><p>{0}{0}{0}</p></article><div>{related}</div></body></html>", PROSE)
    } => PageKind::Article;
    an_article_with_comments_stays_an_article: {
        let comments = posts(3).replace("<html><body><h1>Why does my boiler click?</h1>", "").replace("</body></html>", "");
        format!("<html><head><meta property=og:type content=article><meta property=article:published_time content=2024-01-01></head><body><article><h1>Harbour</h1><p>{0}{0}{0}{0}</p><p>{0}{0}{0}{0}</p></article>{comments}</body></html>", PROSE)
    } => PageKind::Article;
}

#[test]
fn items_count_posts_and_cards() {
    assert_eq!(kind_of(&posts(7)).items, 7);
    assert_eq!(kind_of(&cards(9, false)).items, 9);
    assert_eq!(kind_of(&article_page()).items, 0);
}

#[test]
fn confidence_is_higher_with_more_evidence() {
    let bare = kind_of(&cards(4, false));
    let declared = kind_of(&cards(30, false).replace(
        "<html>",
        "<html><head><script type=application/ld+json>{\"@type\":\"ItemList\"}</script></head>",
    ));
    assert_eq!(declared.kind, PageKind::Listing);
    assert!(
        declared.confidence > bare.confidence,
        "{declared:?} {bare:?}"
    );
    assert!((0.0..=1.0).contains(&declared.confidence));
}

#[test]
fn names_round_trip() {
    for kind in PageKind::ALL {
        assert_eq!(PageKind::from_name(kind.name()), Some(kind));
    }
    assert_eq!(PageKind::from_name("blog"), None);
}

#[test]
fn malformed_json_ld_counts_what_it_holds() {
    let mut d = Declared::default();
    signals::declared_types_for_test(
        "{\"@type\": [\"Product\", \"Thing\"], \"x\": {\"@type\" : \"Offer\"",
        &mut d,
    );
    assert_eq!((d.product, d.offer), (1, 1));
    signals::declared_types_for_test("{\"@type\": [\"Product\"", &mut d);
    signals::declared_types_for_test("\"@type\"", &mut d);
    signals::declared_types_for_test("\"@type\": \"", &mut d);
    assert_eq!(d.product, 2);
}

proptest::proptest! {
    /// Any markup gets a kind, with a confidence in range, and never a panic.
    #[test]
    fn any_markup_gets_a_kind(parts in proptest::collection::vec(
        "<(div class=card|p|ul|li|a href=x|h2|time|pre|section|script type=application/ld\\+json)>|</(div|p|ul|a|h2|section|script)>|\\{\"@type\":\"(Product|QAPage)\"|\\$ 9|Reply|2024| ",
        0..60,
    )) {
        let kind = kind_of(&parts.concat());
        proptest::prop_assert!((0.0..=1.0).contains(&kind.confidence));
    }
}
