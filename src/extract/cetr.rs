//! CETR, Content Extraction via Tag Ratios: lines of markup that carry much text per tag are
//! content, lines that are mostly tags are not.
//!
//! Source: T. Weninger, W. H. Hsu, J. Han, "CETR — Content Extraction via Tag Ratios", WWW 2010
//! (building on Weninger and Hsu, "Text Extraction from the Web via Text-to-Tag Ratio", 2008).
//!
//! # The algorithm, as published
//!
//! 1. The document, without scripts, styles and comments, is taken line by line. Each line's
//!    tag ratio is its number of text characters divided by its number of tags (a line without
//!    tags has ratio = its characters).
//! 2. The array of ratios is smoothed with a discrete Gaussian kernel (σ = 1 line), so that
//!    a short line inside an article (a heading, a one-line paragraph) takes on its
//!    neighbours' value instead of being lost.
//! 3. Either a threshold separates content from the rest (CETR-TM: a line is content when its
//!    smoothed ratio is at least τ = λ·σ_T, σ_T the standard deviation of the smoothed ratios),
//!    or the lines are clustered (CETR-KM): each line becomes the point (smoothed ratio,
//!    absolute smoothed derivative), the derivative being |mean of the α = 3 following smoothed
//!    ratios − this line's smoothed ratio|, which separates the abrupt start and end of an
//!    article from the slow drift of a menu; k-means with k = 3 and one centroid held at the
//!    origin groups them, and the cluster of the origin is the non-content.
//!
//! # What pith chose where the paper leaves room
//!
//! - **Lines.** The paper reads the HTML source lines. pith derives them from the tree, so the
//!   result does not depend on how a site formats its markup, with the layout that formatted
//!   source conventionally has: a block-level start tag (`div`, `p`, `li`, `td`, headings, …)
//!   begins a line, a block-level end tag and `<br>` end one, inline markup and text flow on
//!   the line they are in, and a newline inside `<pre>` ends a line as it does in the source.
//!   Every start tag and every end tag of a non-void element counts as one tag. The paper
//!   re-breaks pages with no line structure every 65 characters; the serialisation here always
//!   has line structure, so nothing is re-broken. Text characters are counted with whitespace
//!   runs collapsed (indentation is not text). Comments, and the content of `script`, `style`,
//!   `noscript` and `template`, are left out, as the paper removes them.
//! - **Kernel.** σ = 1 line, truncated at 3σ and renormalised at the ends of the array (no
//!   zero padding, which would pull the first and last lines towards non-content).
//! - **σ and α** are the values the paper works with (σ = 1, α = 3). **λ:** the paper studies
//!   the choice of λ; pith defaults to λ = 1, a threshold of one standard deviation (the
//!   published default could not be checked against the paper's text here), and keeps it a
//!   parameter.
//! - **k-means** is deterministic: besides the fixed origin, the initial centroids are chosen
//!   farthest-first (the point farthest from the chosen centroids, first in document order on
//!   ties), then Lloyd iterations run until no line changes cluster (at most 100 rounds).
//! - **Removal.** A text node is removed when most of its characters lie on non-content lines
//!   (only `<pre>` text spans several lines). Elements are left in place; with no text they
//!   render as nothing.
//!
//! Cost: one walk over the body, a few passes over the lines; k-means is O(lines · k) per round.

use markup5ever::local_name;

use crate::dom::{words, Edge, Element, NodeId, NodeKind, Ns, Tree};

/// CETR's parameters; [`Params::default`] is the paper's final method, 2-D k-means.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Standard deviation of the Gaussian smoothing kernel, in lines (paper: 1). Zero turns
    /// smoothing off.
    pub sigma: f64,
    /// How many following lines the derivative averages over (paper: α = 3).
    pub alpha: usize,
    /// How lines are told apart.
    pub selection: Selection,
}

/// How CETR separates content lines from the rest.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// CETR-TM: a line is content when its smoothed ratio is at least `lambda` standard
    /// deviations of the smoothed ratios.
    Threshold {
        /// The multiple of the standard deviation (default 1).
        lambda: f64,
    },
    /// CETR-KM: k-means over the lines with one centroid fixed at the origin, whose cluster
    /// is the non-content.
    KMeans {
        /// Number of clusters, the origin's included (paper: 3).
        clusters: usize,
        /// Cluster the 2-D points (smoothed ratio, absolute smoothed derivative) as the paper's
        /// final method does; `false` clusters the smoothed ratios alone (the 1-D variant).
        two_dimensional: bool,
    },
}

impl Params {
    /// The threshold (TM) variant: τ = λ·σ with λ = 1.
    pub fn threshold() -> Params {
        Params {
            sigma: 1.0,
            alpha: 3,
            selection: Selection::Threshold { lambda: 1.0 },
        }
    }

    /// The k-means (KM) variant on the 2-D model, k = 3.
    pub fn kmeans() -> Params {
        Params {
            sigma: 1.0,
            alpha: 3,
            selection: Selection::KMeans {
                clusters: 3,
                two_dimensional: true,
            },
        }
    }
}

impl Default for Params {
    fn default() -> Self {
        Params::kmeans()
    }
}

/// Removes the text of the lines CETR judges not to be content (contract in
/// [`super::algorithm`]).
pub fn extract(tree: &mut Tree, params: &Params) {
    let Some(body) = tree.body() else {
        return;
    };
    let lines = Lines::serialise(tree, body);
    if lines.counts.is_empty() {
        return;
    }
    let content = classify(&lines.ratios(), params);
    for node in doomed_text(&lines.pieces, &content) {
        tree.remove(node);
    }
}

/// The lines of a serialised body, and where each text node's characters fell.
#[derive(Debug, Default)]
struct Lines {
    /// Per line: (text characters, tags).
    counts: Vec<(u32, u32)>,
    /// Per piece of text: the text node, its line and its characters there, in document order.
    pieces: Vec<(NodeId, u32, u32)>,
    /// A line break is due before the next tag or text.
    pending_break: bool,
    /// Depth of open `<pre>` elements.
    pre: u32,
}

impl Lines {
    /// Serialises the body's subtree (see the module doc for the layout).
    fn serialise(tree: &Tree, body: NodeId) -> Lines {
        let mut lines = Lines {
            counts: vec![(0, 0)],
            ..Lines::default()
        };
        let mut walk = tree.traverse(body);
        while let Some(edge) = walk.next() {
            match edge {
                Edge::Open(id) => match tree.kind(id) {
                    NodeKind::Element(e) if is_code(e) => walk.skip_children(),
                    NodeKind::Element(e) => lines.open(e),
                    NodeKind::Text(span) => lines.text(id, tree.str(*span)),
                    _ => {}
                },
                Edge::Close(id) => match tree.element(id) {
                    Some(e) if !is_code(e) => lines.close(e),
                    _ => {}
                },
            }
        }
        if lines.counts.last() == Some(&(0, 0)) {
            lines.counts.pop();
        }
        lines
    }

    fn open(&mut self, e: &Element) {
        let kind = line_kind(e);
        if matches!(kind, LineKind::Block | LineKind::Pre) {
            self.pending_break = true;
        }
        self.tag();
        if kind == LineKind::Pre {
            self.pre += 1;
        }
        if kind == LineKind::Break {
            self.pending_break = true;
        }
    }

    fn close(&mut self, e: &Element) {
        if crate::dom::is_void(e) {
            return;
        }
        let kind = line_kind(e);
        self.tag();
        match kind {
            LineKind::Pre => {
                self.pre = self.pre.saturating_sub(1);
                self.pending_break = true;
            }
            LineKind::Block => self.pending_break = true,
            _ => {}
        }
    }

    fn tag(&mut self) {
        self.break_if_due();
        if let Some(line) = self.counts.last_mut() {
            line.1 += 1;
        }
    }

    fn text(&mut self, id: NodeId, text: &str) {
        if self.pre == 0 {
            self.text_piece(id, text);
            return;
        }
        for (i, piece) in text.split('\n').enumerate() {
            if i > 0 {
                self.new_line();
            }
            self.text_piece(id, piece);
        }
    }

    fn text_piece(&mut self, id: NodeId, text: &str) {
        let chars = collapsed_chars(text);
        if chars == 0 {
            return;
        }
        self.break_if_due();
        let line = self.counts.len().saturating_sub(1);
        if let Some(counts) = self.counts.last_mut() {
            counts.0 = counts.0.saturating_add(chars);
        }
        self.pieces.push((id, line as u32, chars));
    }

    fn break_if_due(&mut self) {
        if self.pending_break {
            self.pending_break = false;
            if self.counts.last() != Some(&(0, 0)) {
                self.new_line();
            }
        }
    }

    fn new_line(&mut self) {
        self.counts.push((0, 0));
    }

    /// The tag ratio of every line: characters per tag, or the characters of a line without
    /// tags.
    fn ratios(&self) -> Vec<f64> {
        self.counts
            .iter()
            .map(|&(chars, tags)| f64::from(chars) / f64::from(tags.max(1)))
            .collect()
    }
}

/// Characters of a text with whitespace runs collapsed and the ends trimmed.
fn collapsed_chars(text: &str) -> u32 {
    let (mut chars, mut count) = (0u32, 0u32);
    for word in words(text) {
        count += 1;
        chars = chars.saturating_add(word.chars().count() as u32);
    }
    chars.saturating_add(count.saturating_sub(1))
}

/// Elements whose content is code, not text: the paper strips them before counting.
fn is_code(e: &Element) -> bool {
    e.ns == Ns::Html
        && matches!(
            e.name,
            local_name!("script")
                | local_name!("style")
                | local_name!("noscript")
                | local_name!("template")
        )
}


/// Where an element puts line breaks in the serialisation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum LineKind {
    Inline,
    /// Starts a line before its start tag and ends one after its end tag.
    Block,
    /// Ends the line after it (`<br>`).
    Break,
    /// A block whose text keeps its own line breaks.
    Pre,
}

fn line_kind(e: &Element) -> LineKind {
    if e.ns != Ns::Html {
        return LineKind::Inline;
    }
    match e.name {
        local_name!("br") => LineKind::Break,
        local_name!("pre") | local_name!("listing") | local_name!("xmp") => LineKind::Pre,
        _ if crate::dom::is_block(e) => LineKind::Block,
        _ => LineKind::Inline,
    }
}

/// Per line, whether it is content.
fn classify(ratios: &[f64], params: &Params) -> Vec<bool> {
    let smoothed = smooth(ratios, params.sigma);
    match params.selection {
        Selection::Threshold { lambda } => {
            let tau = lambda * std_dev(&smoothed);
            smoothed.iter().map(|&t| t >= tau).collect()
        }
        Selection::KMeans {
            clusters,
            two_dimensional,
        } => {
            let points: Vec<[f64; 2]> = if two_dimensional {
                let g = derivative(&smoothed, params.alpha);
                smoothed.iter().zip(&g).map(|(&t, &g)| [t, g]).collect()
            } else {
                smoothed.iter().map(|&t| [t, 0.0]).collect()
            };
            kmeans_fixed_origin(&points, clusters)
                .into_iter()
                .map(|cluster| cluster != 0)
                .collect()
        }
    }
}

/// Convolution with a normalised Gaussian kernel of standard deviation `sigma`, truncated at
/// 3σ; near the ends, the part of the kernel inside the array is renormalised.
fn smooth(values: &[f64], sigma: f64) -> Vec<f64> {
    // Not above zero, or not a number.
    if sigma.is_nan() || sigma <= 0.0 || values.len() < 2 {
        return values.to_vec();
    }
    let radius = (3.0 * sigma).ceil().min(values.len() as f64) as usize;
    let kernel: Vec<f64> = (0..=radius)
        .map(|i| (-((i * i) as f64) / (2.0 * sigma * sigma)).exp())
        .collect();
    let n = values.len();
    (0..n)
        .map(|i| {
            let (lo, hi) = (i.saturating_sub(radius), (i + radius).min(n - 1));
            let (mut sum, mut weight) = (0.0, 0.0);
            for (offset, &v) in values.get(lo..=hi).unwrap_or(&[]).iter().enumerate() {
                let w = kernel[i.abs_diff(lo + offset)];
                sum += w * v;
                weight += w;
            }
            sum / weight
        })
        .collect()
}

/// The absolute smoothed derivative: |mean of the next `alpha` values − this value|, over the
/// values that exist (0 for the last line).
fn derivative(values: &[f64], alpha: usize) -> Vec<f64> {
    let n = values.len();
    (0..n)
        .map(|k| {
            let end = (k + 1 + alpha.max(1)).min(n);
            let next = values.get(k + 1..end).unwrap_or(&[]);
            if next.is_empty() {
                return 0.0;
            }
            let mean = next.iter().sum::<f64>() / next.len() as f64;
            (mean - values[k]).abs()
        })
        .collect()
}

/// Population standard deviation (0 for fewer than two values).
fn std_dev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n).sqrt()
}

/// k-means with centroid 0 fixed at the origin: returns each point's cluster. Deterministic
/// (farthest-first initial centroids, Lloyd rounds until stable, at most 100).
fn kmeans_fixed_origin(points: &[[f64; 2]], clusters: usize) -> Vec<usize> {
    let mut centroids = vec![[0.0, 0.0]];
    while centroids.len() < clusters.max(1) {
        let farthest = points
            .iter()
            .map(|p| nearest(&centroids, p).1)
            .enumerate()
            .fold((None, 0.0), |best, (i, d)| if d > best.1 { (Some(i), d) } else { best });
        let Some(i) = farthest.0 else { break };
        centroids.push(points[i]);
    }
    let mut assignment: Vec<usize> = points.iter().map(|p| nearest(&centroids, p).0).collect();
    for _ in 0..100 {
        let mut sums = vec![([0.0, 0.0], 0usize); centroids.len()];
        for (p, &c) in points.iter().zip(&assignment) {
            sums[c].0[0] += p[0];
            sums[c].0[1] += p[1];
            sums[c].1 += 1;
        }
        for (c, (sum, count)) in sums.iter().enumerate().skip(1) {
            if *count > 0 {
                centroids[c] = [sum[0] / *count as f64, sum[1] / *count as f64];
            }
        }
        let next: Vec<usize> = points.iter().map(|p| nearest(&centroids, p).0).collect();
        if next == assignment {
            break;
        }
        assignment = next;
    }
    assignment
}

/// The centroid nearest to `p` (the first on ties) and the squared distance to it.
fn nearest(centroids: &[[f64; 2]], p: &[f64; 2]) -> (usize, f64) {
    centroids
        .iter()
        .enumerate()
        .map(|(i, c)| (i, (c[0] - p[0]).powi(2) + (c[1] - p[1]).powi(2)))
        .fold((0, f64::INFINITY), |best, x| if x.1 < best.1 { x } else { best })
}

/// The text nodes most of whose characters lie on non-content lines.
fn doomed_text(pieces: &[(NodeId, u32, u32)], content: &[bool]) -> Vec<NodeId> {
    let mut doomed = Vec::new();
    let mut i = 0;
    while i < pieces.len() {
        let node = pieces[i].0;
        let (mut kept, mut total) = (0u64, 0u64);
        while i < pieces.len() && pieces[i].0 == node {
            let (_, line, chars) = pieces[i];
            total += u64::from(chars);
            if content.get(line as usize).copied().unwrap_or(true) {
                kept += u64::from(chars);
            }
            i += 1;
        }
        if kept * 2 < total {
            doomed.push(node);
        }
    }
    doomed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::text::render;

    /// A page in the shape CETR was designed for: a menu of short link lines, an article of
    /// long paragraphs, a footer of links.
    fn news_page() -> String {
        let menu: String = (0..12)
            .map(|i| format!("<li><a href=/s{i}>Section {i}</a></li>"))
            .collect();
        let para = "The council met on Tuesday evening to discuss the new budget for the \
                    coming year, and after a long debate the members agreed on a plan that \
                    keeps the library open on weekends while repairing the old bridge. ";
        let article: String = (0..6).map(|i| format!("<p>{i} {para}{para}</p>")).collect();
        let footer: String = (0..8)
            .map(|i| format!("<span><a href=/f{i}>Link {i}</a></span> | "))
            .collect();
        format!(
            "<body><div id=nav><ul>{menu}</ul></div><div id=main><h1>Budget agreed</h1>\
             {article}</div><div id=foot><div>{footer}</div></div></body>"
        )
    }

    fn run(html: &str, params: &Params) -> String {
        let mut tree = Tree::parse(html);
        extract(&mut tree, params);
        render(&tree)
    }

    #[test]
    fn threshold_keeps_long_text_lines_and_drops_menu_lines() {
        let text = run(&news_page(), &Params::threshold());
        assert!(text.contains("0 The council met"), "{text}");
        assert!(text.contains("5 The council met"), "{text}");
        assert!(!text.contains("Section 3"), "{text}");
        assert!(!text.contains("Link 4"), "{text}");
    }

    #[test]
    fn kmeans_keeps_long_text_lines_and_drops_menu_lines() {
        for two_dimensional in [true, false] {
            let params = Params {
                selection: Selection::KMeans {
                    clusters: 3,
                    two_dimensional,
                },
                ..Params::kmeans()
            };
            let text = run(&news_page(), &params);
            assert!(text.contains("3 The council met"), "{two_dimensional}: {text}");
            assert!(!text.contains("Section 7"), "{two_dimensional}: {text}");
        }
    }

    #[test]
    fn smoothing_keeps_a_short_line_between_long_ones() {
        // The heading's own ratio is low (11 characters, 2 tags) but its neighbours are long
        // paragraphs: σ = 1 smoothing lifts it above the threshold.
        let long = "word ".repeat(80);
        let html = format!(
            "<body><ul><li><a href=/a>a</a></li><li><a href=/b>b</a></li><li><a href=/c>c</a></li>\
             <li><a href=/d>d</a></li><li><a href=/e>e</a></li><li><a href=/f>f</a></li></ul>\
             <p>{long}</p><h2>Short title</h2><p>{long}</p></body>"
        );
        let text = run(&html, &Params::threshold());
        assert!(text.contains("Short title"), "{text}");
        let unsmoothed = run(&html, &Params { sigma: 0.0, ..Params::threshold() });
        assert!(!unsmoothed.contains("Short title"), "{unsmoothed}");
    }

    #[test]
    fn serialisation_puts_blocks_on_lines_and_counts_tags() {
        let tree = Tree::parse(
            "<body><div><p>Hello <b>big</b> world</p><ul><li><a href=x>Home</a></li></ul>\
             one<br>two<pre>a\nbc</pre></div></body>",
        );
        let body = tree.body().expect("body");
        let lines = Lines::serialise(&tree, body);
        let expected = [
            (0, 1),  // <body>
            (0, 1),  // <div>
            (13, 4), // <p>Hello <b>big</b> world</p> (whitespace between nodes not counted)
            (0, 1),  // <ul>
            (4, 4),  // <li><a>Home</a></li>
            (0, 1),  // </ul>
            (3, 1),  // one<br>
            (3, 0),  // two
            (1, 1),  // <pre>a
            (2, 1),  // bc</pre>
            (0, 1),  // </div>
            (0, 1),  // </body>
        ];
        assert_eq!(lines.counts, expected);
        let home = lines.pieces.iter().find(|p| p.2 == 4).expect("Home");
        assert_eq!(home.1, 4);
    }

    #[test]
    fn ratio_of_a_tagless_line_is_its_length() {
        let lines = Lines {
            counts: vec![(10, 0), (10, 4)],
            ..Lines::default()
        };
        assert_eq!(lines.ratios(), vec![10.0, 2.5]);
    }

    #[test]
    fn kmeans_puts_points_near_the_origin_in_cluster_zero() {
        let points = [[0.1, 0.0], [50.0, 1.0], [0.2, 0.1], [51.0, 2.0], [200.0, 3.0]];
        let clusters = kmeans_fixed_origin(&points, 3);
        assert_eq!(clusters[0], 0);
        assert_eq!(clusters[2], 0);
        assert_ne!(clusters[1], 0);
        assert_eq!(clusters[1], clusters[3]);
        assert_ne!(clusters[4], 0);
    }

    #[test]
    fn degenerate_pages_do_not_panic() {
        for html in ["", "<body></body>", "<p>x</p>", "<frameset></frameset>", "<pre>\n\n</pre>"] {
            for params in [Params::threshold(), Params::kmeans()] {
                let mut tree = Tree::parse(html);
                extract(&mut tree, &params);
            }
        }
        let deep = format!("{}deep text{}", "<div>".repeat(5000), "</div>".repeat(5000));
        let mut tree = Tree::parse_with_max_depth(&deep, u32::MAX);
        extract(&mut tree, &Params::kmeans());
        let huge = "<div><a href=/x>x</a> some words here</div>".repeat(20_000);
        let mut tree = Tree::parse(&huge);
        extract(&mut tree, &Params::kmeans());
    }
}
