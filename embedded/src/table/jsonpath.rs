//! Kubernetes printer-column JSONPath (`.a.b`, `.a[0]`,
//! `.a[?(@.type=="Ready")].status`), evaluated with `serde_json_path`
//! (RFC 9535) after a syntactic translation.

use serde_json::Value;
use serde_json_path::JsonPath;

/// A compiled printer-column path.
#[derive(Debug)]
pub(crate) struct ColumnPath(Option<JsonPath>);

impl ColumnPath {
    /// Compiles a Kubernetes JSONPath; an invalid one never matches.
    pub(crate) fn new(path: &str) -> Self {
        ColumnPath(JsonPath::parse(&to_rfc9535(path)).ok())
    }

    /// The first result, as upstream's table convertor uses.
    pub(crate) fn first<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        self.0.as_ref()?.query(object).first()
    }
}

/// Whether `name` can be written in RFC 9535 member-name shorthand.
fn is_shorthand(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || !c.is_ascii())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii())
}

fn push_member(out: &mut String, name: &str, descendant: bool) {
    let shorthand = name == "*" || is_shorthand(name);
    match (descendant, shorthand) {
        (true, _) => out.push_str(".."),
        (false, true) => out.push('.'),
        (false, false) => {}
    }
    if shorthand {
        out.push_str(name);
    } else {
        out.push_str("['");
        for c in name.chars() {
            if matches!(c, '\'' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
        out.push_str("']");
    }
}

/// Translates Kubernetes JSONPath to RFC 9535: optional `{}` and `$` are
/// dropped, `.name` segments that are not valid shorthand (`app-name`,
/// `example.com/x` in brackets) become `['name']`, bracket segments are kept.
pub(crate) fn to_rfc9535(path: &str) -> String {
    let mut p = path.trim();
    if let Some(inner) = p.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
        p = inner.trim();
    }
    let p = p.strip_prefix('$').unwrap_or(p);
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::from("$");
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '[' => {
                // Copy the bracket segment verbatim, minding quotes and nesting.
                let mut depth = 0;
                let mut quote: Option<char> = None;
                while i < chars.len() {
                    let c = chars[i];
                    out.push(c);
                    i += 1;
                    match (quote, c) {
                        (Some(_), '\\') if i < chars.len() => {
                            out.push(chars[i]);
                            i += 1;
                        }
                        (Some(q), c) if c == q => quote = None,
                        (Some(_), _) => {}
                        (None, '\'' | '"') => quote = Some(c),
                        (None, '[') => depth += 1,
                        (None, ']') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            c => {
                let mut descendant = false;
                if c == '.' {
                    i += 1;
                    if chars.get(i) == Some(&'.') {
                        descendant = true;
                        i += 1;
                    }
                }
                let start = i;
                while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                if !name.is_empty() {
                    push_member(&mut out, &name, descendant);
                } else if descendant {
                    out.push_str("..");
                }
            }
        }
    }
    out
}
