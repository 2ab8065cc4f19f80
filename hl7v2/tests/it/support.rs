//! Shared helpers: corpus location and a full walk over a message's values.

use keelson_hl7v2::Message;

#[path = "../corpus_dir.rs"]
mod location;
pub use location::corpus_dir;

/// Every `.hl7` file of the corpus with its bytes, sorted by name.
pub fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(corpus_dir())
        .expect("corpus directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "hl7"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).expect("read corpus file"))
        })
        .collect();
    files.sort();
    files
}

/// One corpus file by name.
pub fn corpus_file(name: &str) -> Vec<u8> {
    std::fs::read(corpus_dir().join(name)).expect("corpus file")
}

/// Every leaf (subcomponent) of the message as `(path, unescaped text)`, skipping MSH-1/2,
/// with paths in the crate's grammar.
pub fn leaves(message: &Message<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashMap::<&str, usize>::new();
    for segment in message.segments() {
        let occurrence = seen.entry(segment.id()).or_default();
        let first_field = if segment.id() == "MSH" { 3 } else { 1 };
        for (offset, field) in segment.fields().skip(first_field - 1).enumerate() {
            let f = first_field + offset;
            for (r, rep) in field.repetitions().enumerate() {
                for (c, comp) in rep.components().enumerate() {
                    for (s, sub) in comp.subcomponents().enumerate() {
                        let path =
                            format!("{}[{occurrence}]-{f}[{r}].{}.{}", segment.id(), c + 1, s + 1);
                        out.push((path, sub.text().into_owned()));
                    }
                }
            }
        }
        *occurrence += 1;
    }
    out
}
