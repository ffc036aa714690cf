//! SVG: the rules for foreign content, with html5ever's name adjustments. An HTML element that
//! breaks out of SVG (`<p>`, `<div>`, … inside `<svg>`) and any start tag inside an HTML
//! integration point (`<foreignObject>`, `<desc>`, `<title>`) make the builder bail; MathML
//! never gets here.

use markup5ever::{local_name, LocalName};

use super::super::lex::Tag;
use super::super::TagAttr;
use super::{Bail, Ns, Out, State, Step, Tok};

impl<'s> State<'_, 's> {
    /// Whether a token goes by the rules for foreign content: the current node is an SVG
    /// element, unless it is an HTML integration point and the token is text or a start tag.
    pub(super) fn is_foreign(&self, tok: &Tok<'_, 's>) -> bool {
        let Some(current) = self.current() else {
            return false;
        };
        match current.ns {
            Ns::Html => false,
            _ if matches!(tok, Tok::Eof) => false,
            Ns::Svg if is_integration_point(&current.name) => {
                !matches!(tok, Tok::Chars(_) | Tok::Null | Tok::Start(_))
            }
            _ => true,
        }
    }

    pub(super) fn foreign(&mut self, tok: Tok<'_, 's>) -> Step {
        match tok {
            Tok::Null => {
                self.append_text("\u{fffd}")?;
                Ok(Out::Continue)
            }
            Tok::Chars(text) => {
                self.append_text(text)?;
                Ok(Out::Continue)
            }
            Tok::Comment(text) => self.comment(text),
            Tok::Start(tag) => {
                if breaks_out(&tag) || self.current().is_some_and(|o| o.ns != Ns::Svg) {
                    return Err(Bail);
                }
                self.svg_element(tag, true)
            }
            Tok::End(name) => {
                if matches!(name, local_name!("p") | local_name!("br")) {
                    return Err(Bail);
                }
                let mut at = self.open.len().saturating_sub(1);
                let mut first = true;
                while at > 0 {
                    let open = &self.open[at];
                    if !first && open.ns == Ns::Html {
                        return self.by_mode(Tok::End(name));
                    }
                    if open.name.eq_ignore_ascii_case(&name) {
                        self.open.truncate(at);
                        return Ok(Out::Continue);
                    }
                    first = false;
                    at -= 1;
                }
                Ok(Out::Continue)
            }
            Tok::Eof => self.by_mode(Tok::Eof),
        }
    }

    /// `<svg>` in HTML content.
    pub(super) fn enter_svg(&mut self, tag: Tag<'s>) -> Step {
        self.svg_element(tag, false)
    }

    /// An SVG element: its name (inside SVG) and attributes adjusted, popped at once when
    /// self-closing.
    fn svg_element(&mut self, mut tag: Tag<'s>, adjust_name: bool) -> Step {
        if adjust_name {
            if let Some(name) = adjusted(&tag.name, SVG_TAG_NAMES) {
                tag.name = name;
            }
        }
        adjust_attributes(&mut tag.attrs);
        if tag.self_closing {
            self.insert_void(tag.name, Ns::Svg, tag.attrs)?;
        } else {
            self.insert(tag.name, Ns::Svg, tag.attrs)?;
        }
        Ok(Out::Continue)
    }
}

/// SVG's HTML integration points.
pub(super) fn is_integration_point(name: &LocalName) -> bool {
    matches!(
        *name,
        local_name!("foreignObject") | local_name!("desc") | local_name!("title")
    )
}

/// The start tags that end foreign content (html5ever's `step_foreign`).
fn breaks_out(tag: &Tag<'_>) -> bool {
    match tag.name {
        local_name!("b")
        | local_name!("big")
        | local_name!("blockquote")
        | local_name!("body")
        | local_name!("br")
        | local_name!("center")
        | local_name!("code")
        | local_name!("dd")
        | local_name!("div")
        | local_name!("dl")
        | local_name!("dt")
        | local_name!("em")
        | local_name!("embed")
        | local_name!("h1")
        | local_name!("h2")
        | local_name!("h3")
        | local_name!("h4")
        | local_name!("h5")
        | local_name!("h6")
        | local_name!("head")
        | local_name!("hr")
        | local_name!("i")
        | local_name!("img")
        | local_name!("li")
        | local_name!("listing")
        | local_name!("menu")
        | local_name!("meta")
        | local_name!("nobr")
        | local_name!("ol")
        | local_name!("p")
        | local_name!("pre")
        | local_name!("ruby")
        | local_name!("s")
        | local_name!("small")
        | local_name!("span")
        | local_name!("strong")
        | local_name!("strike")
        | local_name!("sub")
        | local_name!("sup")
        | local_name!("table")
        | local_name!("tt")
        | local_name!("u")
        | local_name!("ul")
        | local_name!("var") => true,
        local_name!("font") => tag
            .attrs
            .iter()
            .any(|a| matches!(a.name, local_name!("color") | local_name!("face") | local_name!("size"))),
        _ => false,
    }
}

/// The camel-cased form of a lower-cased name, if the table has one.
fn adjusted(name: &LocalName, table: &[(&str, &str)]) -> Option<LocalName> {
    let name: &str = name;
    table
        .iter()
        .find(|(lower, _)| *lower == name)
        .map(|(_, camel)| LocalName::from(*camel))
}

/// html5ever's `adjust_svg_attributes` and `adjust_foreign_attributes`, on the names as the
/// tree keeps them: the foreign attributes (`xlink:href`, `xml:lang`, `xmlns:xlink`) get a
/// prefix and a namespace there, and the tree names them by prefix and local name, as they
/// were written; only `xmlns` changes, as html5ever gives it an empty prefix (`:xmlns`).
fn adjust_attributes(attrs: &mut [TagAttr<'_>]) {
    for attr in attrs {
        if let Some(local) = adjusted(&attr.name, SVG_ATTRIBUTES) {
            attr.name = local;
        } else if attr.name == local_name!("xmlns") {
            attr.name = LocalName::from(":xmlns");
        }
    }
}

const SVG_TAG_NAMES: &[(&str, &str)] = &[
    ("altglyph", "altGlyph"),
    ("altglyphdef", "altGlyphDef"),
    ("altglyphitem", "altGlyphItem"),
    ("animatecolor", "animateColor"),
    ("animatemotion", "animateMotion"),
    ("animatetransform", "animateTransform"),
    ("clippath", "clipPath"),
    ("feblend", "feBlend"),
    ("fecolormatrix", "feColorMatrix"),
    ("fecomponenttransfer", "feComponentTransfer"),
    ("fecomposite", "feComposite"),
    ("feconvolvematrix", "feConvolveMatrix"),
    ("fediffuselighting", "feDiffuseLighting"),
    ("fedisplacementmap", "feDisplacementMap"),
    ("fedistantlight", "feDistantLight"),
    ("fedropshadow", "feDropShadow"),
    ("feflood", "feFlood"),
    ("fefunca", "feFuncA"),
    ("fefuncb", "feFuncB"),
    ("fefuncg", "feFuncG"),
    ("fefuncr", "feFuncR"),
    ("fegaussianblur", "feGaussianBlur"),
    ("feimage", "feImage"),
    ("femerge", "feMerge"),
    ("femergenode", "feMergeNode"),
    ("femorphology", "feMorphology"),
    ("feoffset", "feOffset"),
    ("fepointlight", "fePointLight"),
    ("fespecularlighting", "feSpecularLighting"),
    ("fespotlight", "feSpotLight"),
    ("fetile", "feTile"),
    ("feturbulence", "feTurbulence"),
    ("foreignobject", "foreignObject"),
    ("glyphref", "glyphRef"),
    ("lineargradient", "linearGradient"),
    ("radialgradient", "radialGradient"),
    ("textpath", "textPath"),
];

const SVG_ATTRIBUTES: &[(&str, &str)] = &[
    ("attributename", "attributeName"),
    ("attributetype", "attributeType"),
    ("basefrequency", "baseFrequency"),
    ("baseprofile", "baseProfile"),
    ("calcmode", "calcMode"),
    ("clippathunits", "clipPathUnits"),
    ("diffuseconstant", "diffuseConstant"),
    ("edgemode", "edgeMode"),
    ("filterunits", "filterUnits"),
    ("glyphref", "glyphRef"),
    ("gradienttransform", "gradientTransform"),
    ("gradientunits", "gradientUnits"),
    ("kernelmatrix", "kernelMatrix"),
    ("kernelunitlength", "kernelUnitLength"),
    ("keypoints", "keyPoints"),
    ("keysplines", "keySplines"),
    ("keytimes", "keyTimes"),
    ("lengthadjust", "lengthAdjust"),
    ("limitingconeangle", "limitingConeAngle"),
    ("markerheight", "markerHeight"),
    ("markerunits", "markerUnits"),
    ("markerwidth", "markerWidth"),
    ("maskcontentunits", "maskContentUnits"),
    ("maskunits", "maskUnits"),
    ("numoctaves", "numOctaves"),
    ("pathlength", "pathLength"),
    ("patterncontentunits", "patternContentUnits"),
    ("patterntransform", "patternTransform"),
    ("patternunits", "patternUnits"),
    ("pointsatx", "pointsAtX"),
    ("pointsaty", "pointsAtY"),
    ("pointsatz", "pointsAtZ"),
    ("preservealpha", "preserveAlpha"),
    ("preserveaspectratio", "preserveAspectRatio"),
    ("primitiveunits", "primitiveUnits"),
    ("refx", "refX"),
    ("refy", "refY"),
    ("repeatcount", "repeatCount"),
    ("repeatdur", "repeatDur"),
    ("requiredextensions", "requiredExtensions"),
    ("requiredfeatures", "requiredFeatures"),
    ("specularconstant", "specularConstant"),
    ("specularexponent", "specularExponent"),
    ("spreadmethod", "spreadMethod"),
    ("startoffset", "startOffset"),
    ("stddeviation", "stdDeviation"),
    ("stitchtiles", "stitchTiles"),
    ("surfacescale", "surfaceScale"),
    ("systemlanguage", "systemLanguage"),
    ("tablevalues", "tableValues"),
    ("targetx", "targetX"),
    ("targety", "targetY"),
    ("textlength", "textLength"),
    ("viewbox", "viewBox"),
    ("viewtarget", "viewTarget"),
    ("xchannelselector", "xChannelSelector"),
    ("ychannelselector", "yChannelSelector"),
    ("zoomandpan", "zoomAndPan"),
];
