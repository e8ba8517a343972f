//! An answer held to a JSON Schema (`bosun exec --output-schema FILE`):
//! the schema read and compiled before any model is asked, handed to the
//! model as [`GenerationOptions::output_schema`] (each adapter steers its
//! model its own way: a provider's field, an instruction, a local grammar),
//! and the final answer checked against it here, whatever the model did.
//!
//! The schema's `$ref`s resolve within the file only: nothing is fetched
//! from a URL or read from another file (jsonschema without its resolvers).

use std::path::{Path, PathBuf};

use bosun_core::{GenerationOptions, OutputSchema};
use serde_json::Value;

use crate::error::{Context, Result, bail};

/// The largest schema file read.
const MAX_SCHEMA_BYTES: u64 = 1 << 20;
/// The most problems an answer's refusal lists.
const MAX_PROBLEMS: usize = 5;
/// The longest one problem is said in, in characters.
const MAX_PROBLEM_CHARS: usize = 300;

/// A schema the final answer must match.
#[derive(Debug)]
pub struct AnswerSchema {
    file: PathBuf,
    output: OutputSchema,
    validator: jsonschema::Validator,
}

/// Why an answer does not match: typed, so a front end can tell it from a
/// failed turn (both exit 1 from `bosun exec`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerMismatch {
    /// The answer is not one JSON value.
    #[error("the final answer is not JSON ({reason}), so it does not match the output schema {}", file.display())]
    NotJson {
        /// The schema's file.
        file: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// The answer is JSON the schema refuses.
    #[error("the final answer does not match the output schema {}: {}", file.display(), problems.join("; "))]
    Invalid {
        /// The schema's file.
        file: PathBuf,
        /// The first problems, each `at PATH: what`.
        problems: Vec<String>,
    },
}

impl AnswerSchema {
    /// Reads and compiles the schema in `file`: a JSON document of at most
    /// 1 MiB that is a valid JSON Schema (draft from its `$schema`, 2020-12
    /// when it names none).
    ///
    /// # Errors
    /// When the file cannot be read, is not JSON, or is not a schema
    /// jsonschema can compile (an unknown draft, a `$ref` outside the file).
    pub fn load(file: &Path) -> Result<Self> {
        let shown = file.display();
        let size =
            std::fs::metadata(file).with_context(|| format!("cannot read the output schema {shown}"))?.len();
        if size > MAX_SCHEMA_BYTES {
            bail!("the output schema {shown} is larger than {} KiB", MAX_SCHEMA_BYTES / 1024);
        }
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the output schema {shown}"))?;
        let schema: Value = serde_json::from_str(&text)
            .with_context(|| format!("the output schema {shown} is not valid JSON"))?;
        Self::new(file, schema)
    }

    /// `schema` (named after `file`) compiled.
    ///
    /// # Errors
    /// As [`AnswerSchema::load`], for a schema that does not compile.
    pub fn new(file: &Path, schema: Value) -> Result<Self> {
        let shown = file.display();
        if !(schema.is_object() || schema.is_boolean()) {
            bail!("the output schema {shown} is not a JSON Schema: a schema is an object (or true/false)");
        }
        let validator = jsonschema::validator_for(&schema).map_err(|error| {
            crate::error::invalid!("the output schema {shown} is not a valid JSON Schema: {error}")
        })?;
        let name = file.file_stem().and_then(|stem| stem.to_str()).unwrap_or("output");
        let name = name.strip_suffix(".schema").unwrap_or(name);
        Ok(Self { file: file.to_path_buf(), output: OutputSchema::new(name, schema), validator })
    }

    /// The schema as the model is given it.
    pub fn output(&self) -> &OutputSchema {
        &self.output
    }

    /// Generation options asking for answers in this schema.
    pub fn generation(&self) -> GenerationOptions {
        let mut options = GenerationOptions::default();
        options.output_schema = Some(self.output.clone());
        options
    }

    /// The answer as the JSON value the schema accepts, or why not.
    ///
    /// # Errors
    /// [`AnswerMismatch`] when the answer is not JSON or the schema refuses it.
    pub fn check(&self, answer: &str) -> Result<Value, AnswerMismatch> {
        let value: Value = serde_json::from_str(answer.trim()).map_err(|error| AnswerMismatch::NotJson {
            file: self.file.clone(),
            reason: error.to_string(),
        })?;
        let mut problems: Vec<String> = Vec::new();
        let mut more = 0;
        for error in self.validator.iter_errors(&value) {
            if problems.len() == MAX_PROBLEMS {
                more += 1;
                continue;
            }
            let at = error.instance_path().to_string();
            let at = if at.is_empty() { "the answer".to_owned() } else { format!("at {at}") };
            let said = format!("{at}: {}", error.masked());
            problems.push(match said.char_indices().nth(MAX_PROBLEM_CHARS) {
                Some((end, _)) => format!("{}…", &said[..end]),
                None => said,
            });
        }
        if problems.is_empty() {
            return Ok(value);
        }
        if more > 0 {
            problems.push(format!("and {more} more"));
        }
        Err(AnswerMismatch::Invalid { file: self.file.clone(), problems })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn verdict() -> AnswerSchema {
        let schema = json!({"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]},
            "count": {"type": "integer", "minimum": 0}}, "required": ["verdict"], "additionalProperties": false});
        AnswerSchema::new(Path::new("/tmp/verdict.schema.json"), schema).unwrap()
    }

    #[test]
    fn a_matching_answer_passes_and_others_say_where_they_fail() {
        let schema = verdict();
        assert_eq!(schema.output().name, "verdict");
        assert_eq!(schema.generation().output_schema.as_ref(), Some(schema.output()));
        assert_eq!(
            schema.check(" {\"verdict\": \"pass\", \"count\": 2}\n").unwrap(),
            json!({"verdict": "pass", "count": 2})
        );
        let error =
            schema.check("{\"verdict\": \"maybe\", \"count\": -1, \"extra\": 1}").unwrap_err().to_string();
        assert!(
            error.starts_with("the final answer does not match the output schema /tmp/verdict.schema.json: "),
            "{error}"
        );
        assert!(error.contains("at /verdict: ") && error.contains("at /count: "), "{error}");
        assert!(error.contains("the answer: "), "{error}");
        let error = schema.check("Here it is: ```json {}```").unwrap_err();
        assert!(matches!(error, AnswerMismatch::NotJson { .. }), "{error}");
        assert!(error.to_string().starts_with("the final answer is not JSON ("), "{error}");
    }

    #[test]
    fn a_schema_that_is_not_one_is_refused_naming_the_file() {
        for (schema, says) in [
            (json!([1, 2]), "is not a JSON Schema"),
            (json!({"type": "strnig"}), "is not a valid JSON Schema"),
            (json!({"$ref": "https://example.org/remote.json"}), "is not a valid JSON Schema"),
        ] {
            let error = AnswerSchema::new(Path::new("s.json"), schema.clone()).unwrap_err().to_string();
            assert!(
                error.starts_with("the output schema s.json ") && error.contains(says),
                "{schema}: {error}"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let missing = format!("{:#}", AnswerSchema::load(&dir.path().join("none.json")).unwrap_err());
        assert!(missing.contains("cannot read the output schema"), "{missing}");
        std::fs::write(dir.path().join("bad.json"), "{ not json").unwrap();
        let bad = format!("{:#}", AnswerSchema::load(&dir.path().join("bad.json")).unwrap_err());
        assert!(bad.contains("is not valid JSON"), "{bad}");
    }
}
