//! Reading values for events: unescaped, trimmed, empty and HL7 null (`""`) as absent, and a
//! delimiter-independent text form of whole fields.

use std::borrow::Cow;

use crate::value::{Field, Repetition};

/// Trimmed text, or `None` when it is empty or the HL7 null `""`.
pub(crate) fn clean(text: Cow<'_, str>) -> Option<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed == "\"\"" { None } else { Some(trimmed.to_owned()) }
}

/// Subcomponent `s` of component `c` (both 1-based) of a repetition.
pub(crate) fn sub(rep: &Repetition<'_>, c: usize, s: usize) -> Option<String> {
    clean(rep.component(c)?.subcomponent(s)?.text())
}

/// The first subcomponent of component `c` (1-based): the scalar value of a component.
pub(crate) fn comp(rep: &Repetition<'_>, c: usize) -> Option<String> {
    sub(rep, c, 1)
}

/// The non-empty subcomponents of component `c`, joined with a space (e.g. the parts of a
/// street address: `1000&Hospital Lane` gives `1000 Hospital Lane`).
pub(crate) fn comp_words(rep: &Repetition<'_>, c: usize) -> Option<String> {
    let words: Vec<String> =
        rep.component(c)?.subcomponents().filter_map(|s| clean(s.text())).collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The first of the given components that has a value.
pub(crate) fn first_comp(rep: &Repetition<'_>, components: &[usize]) -> Option<String> {
    components.iter().find_map(|&c| comp(rep, c))
}

/// A whole repetition as text: every subcomponent unescaped, joined with the standard
/// separators `^` and `&` whatever the message declares (so the text is the same for
/// any delimiter set).
pub(crate) fn canonical_repetition(rep: &Repetition<'_>) -> String {
    let mut out = String::with_capacity(rep.raw().len());
    for (c, component) in rep.components().enumerate() {
        if c > 0 {
            out.push('^');
        }
        for (s, subcomponent) in component.subcomponents().enumerate() {
            if s > 0 {
                out.push('&');
            }
            out.push_str(&subcomponent.text());
        }
    }
    out
}

/// A whole field as text, repetitions joined with `~` (see [`canonical_repetition`]).
pub(crate) fn canonical_field(field: &Field<'_>) -> String {
    let mut out = String::with_capacity(field.raw().len());
    for (r, rep) in field.repetitions().enumerate() {
        if r > 0 {
            out.push('~');
        }
        out.push_str(&canonical_repetition(&rep));
    }
    out
}

/// Whether the field holds no value (empty, separators only, or the HL7 null).
pub(crate) fn field_is_empty(field: &Field<'_>) -> bool {
    clean(Cow::Owned(canonical_field(field)))
        .is_none_or(|text| text.bytes().all(|b| matches!(b, b'^' | b'&' | b'~' | b' ')))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Delimiters;

    #[test]
    fn canonical_text_uses_standard_separators() {
        let d = Delimiters::new('|', '#', '!', '%', '$').unwrap();
        let field = Field::new("a#b$c%F%!d", d, false);
        assert_eq!(canonical_field(&field), "a^b&c|~d");
        assert!(field_is_empty(&Field::new("##!#", d, false)));
        assert!(field_is_empty(&Field::new("\"\"", d, false)));
        assert!(!field_is_empty(&Field::new("#x", d, false)));
    }

    #[test]
    fn components_are_trimmed_and_null_is_absent() {
        let field = Field::new("A&B^ x ^\"\"", Delimiters::default(), false);
        let rep = field.repetition(0).unwrap();
        assert_eq!(comp(&rep, 1).as_deref(), Some("A"));
        assert_eq!(sub(&rep, 1, 2).as_deref(), Some("B"));
        assert_eq!(comp(&rep, 2).as_deref(), Some("x"));
        assert_eq!(comp(&rep, 3), None);
        assert_eq!(comp(&rep, 9), None);
        assert_eq!(first_comp(&rep, &[3, 2]).as_deref(), Some("x"));
        assert_eq!(comp_words(&rep, 1).as_deref(), Some("A B"));
        assert_eq!(comp_words(&rep, 3), None);
    }
}
