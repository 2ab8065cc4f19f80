//! Where the public HL7v2 sample corpus is, for the tests and the benchmark (which include
//! this file): `KEELSON_CORPUS_DIR`, else `shared/corpus/hl7v2/fhir-converter` beside the
//! repository (`../shared` of the checkout), else under `/work/shared`, where a clone
//! elsewhere on the build machine finds it.

use std::path::PathBuf;

/// The corpus directory; panics naming the places it looked when there is none.
pub fn corpus_dir() -> PathBuf {
    let relative = "corpus/hl7v2/fhir-converter";
    let candidates: Vec<PathBuf> = std::env::var_os("KEELSON_CORPUS_DIR")
        .map(PathBuf::from)
        .into_iter()
        .chain([
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared").join(relative),
            PathBuf::from("/work/shared").join(relative),
        ])
        .collect();
    candidates.iter().find(|dir| dir.is_dir()).cloned().unwrap_or_else(|| {
        panic!("the HL7v2 corpus is in none of {candidates:?}; set KEELSON_CORPUS_DIR")
    })
}
