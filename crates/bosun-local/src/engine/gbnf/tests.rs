//! The converter's grammars run in llama.cpp's own grammar engine: each
//! must parse there, take the JSON texts the schema allows and refuse the
//! ones it does not. Texts are fed byte by byte through a tiny model's
//! vocabulary (its 256 byte tokens), each byte checked before it is
//! accepted, as the sampler does.

use std::sync::OnceLock;

use bosun_testing::TinyModel;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use serde_json::{Value, json};

use super::*;
use crate::engine::sampling::{allows, byte_tokens};

/// A vocabulary with a token for every byte, loaded once per process.
pub(in crate::engine) fn vocabulary() -> &'static (LlamaModel, [Option<LlamaToken>; 256]) {
    static MODEL: OnceLock<(LlamaModel, [Option<LlamaToken>; 256])> = OnceLock::new();
    MODEL.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vocabulary.gguf");
        TinyModel::new().write(&path).unwrap();
        let backend = crate::engine::backend().unwrap();
        let params = LlamaModelParams::default().with_vocab_only(true);
        let model = LlamaModel::load_from_file(backend, &path, &params).unwrap();
        let bytes = byte_tokens(&model);
        (model, bytes)
    })
}

/// Whether the grammar of `schema` takes `text` whole: every byte allowed
/// in turn, and the end allowed after the last.
fn takes(gbnf: &str, text: &str) -> bool {
    let (model, bytes) = vocabulary();
    let mut sampler = LlamaSampler::grammar(model, gbnf, "root")
        .unwrap_or_else(|e| panic!("llama.cpp refused the grammar ({e}):\n{gbnf}"));
    for byte in text.bytes() {
        let token = bytes[usize::from(byte)].unwrap();
        if !allows(&mut sampler, token) {
            return false;
        }
        sampler.accept(token);
    }
    allows(&mut sampler, model.vocab().eos())
}

/// `schema`'s grammar takes each of `good` and none of `bad`.
fn check(schema: Value, good: &[&str], bad: &[&str]) {
    let gbnf = schema_to_gbnf(&schema).unwrap_or_else(|e| panic!("{schema}: {e}"));
    for text in good {
        assert!(takes(&gbnf, text), "{schema} should take {text}:\n{gbnf}");
    }
    for text in bad {
        assert!(!takes(&gbnf, text), "{schema} should refuse {text}:\n{gbnf}");
    }
}

#[test]
fn required_properties_come_in_order_and_optional_ones_may_be_left_out() {
    let schema = json!({"type": "object", "properties": {
        "path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}, "all": {"type": "boolean"}
    }, "required": ["path"]});
    check(
        schema,
        &[
            r#"{"path": "a.txt"}"#,
            r#"{"path":"a","offset":1,"limit":2,"all":true}"#,
            r#"{"path": "a", "limit": 2}"#,
            r#"{ "path": "a", "all": false }"#,
            "{\n  \"path\": \"a\",\n  \"offset\": -3\n}",
        ],
        &[
            r#"{}"#,
            r#"{"offset": 1}"#,
            r#"{"path": 1}"#,
            r#"{"path": "a", "other": 1}"#,
            r#"{"path": "a", "limit": 2, "offset": 1}"#,
            r#"{"path": "a",}"#,
        ],
    );
}

#[test]
fn a_bare_object_schema_takes_any_object() {
    check(json!({"type": "object"}), &[r#"{}"#, r#"{"a": [1, {"b": null}]}"#], &[r#"[]"#, r#""x""#]);
    check(json!({"type": "object", "properties": {}}), &[r#"{}"#, r#"{ }"#], &[r#"{"a": 1}"#]);
}

#[test]
fn additional_properties_allow_other_keys_only() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}},
        "additionalProperties": {"type": "string"}});
    check(
        schema,
        &[r#"{"a": 1}"#, r#"{"a": 1, "b": "x", "c": "y"}"#, r#"{"ab": "x"}"#, r#"{"": "x"}"#, r#"{}"#],
        &[r#"{"a": "x"}"#, r#"{"b": 1}"#, r#"{"b": "x", "a": 1}"#],
    );
}

#[test]
fn constants_enums_and_alternatives() {
    check(json!({"const": "utc"}), &[r#""utc""#], &[r#""UTC""#, r#""utc ""#]);
    check(json!({"enum": ["a", 1, null, true]}), &[r#""a""#, "1", "null", "true"], &[r#""b""#, "2", "false"]);
    check(
        json!({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]}),
        &["12", r#""ab""#],
        &[r#""abc""#, "1.5"],
    );
    check(json!({"type": ["string", "null"]}), &[r#""x""#, "null"], &["1"]);
}

#[test]
fn strings_are_json_strings_held_to_length_format_and_pattern() {
    check(
        json!({"type": "string"}),
        &[r#""""#, r#""a \"q\" \\ \n \u00e9""#, "\"é\""],
        &["\"a\nb\"", r#""\x""#, "abc"],
    );
    check(
        json!({"type": "string", "minLength": 2, "maxLength": 3}),
        &[r#""ab""#, r#""abc""#],
        &[r#""a""#, r#""abcd""#],
    );
    check(
        json!({"type": "string", "format": "date"}),
        &[r#""2026-12-04""#],
        &[r#""2026-13-04""#, r#""yesterday""#],
    );
    check(
        json!({"type": "string", "format": "uuid"}),
        &[r#""0195f1a2-3b4c-7d5e-8f60-718293a4b5c6""#],
        &[r#""0195f1a2""#],
    );
    check(
        json!({"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"}),
        &[r#""AB-12""#],
        &[r#""ab-12""#, r#""AB-""#],
    );
    // Without `^`, a match may start anywhere: the string is free.
    check(json!({"type": "string", "pattern": "[0-9]"}), &[r#""no digits""#], &["1"]);
}

#[test]
fn integers_hold_their_bounds_and_numbers_their_syntax() {
    check(json!({"type": "integer", "minimum": 1}), &["1", "42", "1000000"], &["0", "-1", "01", "1.0"]);
    check(
        json!({"type": "integer", "minimum": -2, "maximum": 12}),
        &["-2", "0", "9", "12"],
        &["-3", "13", "-0"],
    );
    check(json!({"type": "integer"}), &["0", "-17"], &["+1", "1e3"]);
    check(json!({"type": "number"}), &["0", "-1.5", "2e10", "3.25E-2"], &[".5", "1.", "NaN"]);
    check(json!({"type": "boolean"}), &["true", "false"], &["True", "1"]);
}

#[test]
fn arrays_hold_their_items_and_counts() {
    check(json!({"type": "array"}), &["[]", r#"[1, "a", {}]"#], &["{}"]);
    check(
        json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}),
        &[r#"["a"]"#, r#"["a", "b"]"#],
        &["[]", r#"["a", "b", "c"]"#, "[1]"],
    );
    check(json!({"type": "array", "items": {"type": "integer"}}), &["[]", "[1,2,3]"], &[r#"["a"]"#]);
    check(
        json!({"prefixItems": [{"type": "integer"}, {"type": "string"}]}),
        &[r#"[1, "a"]"#],
        &[r#"["a", 1]"#, "[1]"],
    );
}

#[test]
fn references_resolve_within_the_document_and_may_recur() {
    let tree = json!({"$defs": {"node": {"type": "object", "properties": {
        "name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}
    }, "required": ["name"]}}, "$ref": "#/$defs/node"});
    check(
        tree,
        &[r#"{"name": "a"}"#, r#"{"name": "a", "children": [{"name": "b", "children": []}]}"#],
        &[r#"{"children": []}"#, r#"{"name": "a", "children": [{}]}"#],
    );
    assert_eq!(
        schema_to_gbnf(&json!({"$ref": "#/$defs/missing"})),
        Err(SchemaError::Reference("#/$defs/missing".into()))
    );
    assert!(schema_to_gbnf(&json!({"$ref": "https://example.com/schema"})).is_err());
}

#[test]
fn recursive_definitions_of_the_same_name_keep_their_own_rules() {
    let node = |key: &str, kind: &str, reference: &str| {
        json!({"type": "object", "properties": {
            key: {"type": kind}, "children": {"type": "array", "items": {"$ref": reference}}
        }, "required": [key]})
    };
    let schema = json!({
        "$defs": {"a": {"node": node("x", "string", "#/$defs/a/node")}, "b": {"node": node("y", "integer", "#/$defs/b/node")}},
        "type": "object",
        "properties": {"first": {"$ref": "#/$defs/a/node"}, "second": {"$ref": "#/$defs/b/node"}},
        "required": ["first", "second"]
    });
    check(
        schema,
        &[r#"{"first": {"x": "a", "children": [{"x": "b"}]}, "second": {"y": 1, "children": [{"y": 2}]}}"#],
        &[r#"{"first": {"x": "a"}, "second": {"y": 1, "children": [{"x": "b"}]}}"#],
    );
}

#[test]
fn all_of_merges_objects_and_intersects_enums() {
    let schema = json!({"allOf": [
        {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        {"anyOf": [{"type": "object", "properties": {"b": {"type": "string"}}}]}
    ]});
    check(schema, &[r#"{"a": 1}"#, r#"{"a": 1, "b": "x"}"#], &[r#"{"b": "x"}"#]);
    check(json!({"allOf": [{"enum": ["x", "y"]}, {"enum": ["y", "z"]}]}), &[r#""y""#], &[r#""x""#, r#""z""#]);
}

#[test]
fn property_rules_are_named_after_their_path() {
    let schema = json!({"type": "object", "properties": {
        "bosun-call": {"anyOf": [{"type": "object", "properties": {"name": {"const": "now"}}}]},
        "bosun-args-0": {"type": "object", "properties": {"a b": {"type": "string"}}},
        "string": {"type": "integer"}
    }});
    let gbnf = schema_to_gbnf(&schema).unwrap();
    let defines = |rule: &str| gbnf.lines().any(|line| line.starts_with(&format!("{rule} ::= ")));
    for rule in [
        "root",
        "space",
        "bosun-call",
        "bosun-call-0",
        "bosun-call-0-name",
        "bosun-args-0",
        "bosun-args-0-a-b",
    ] {
        assert!(defines(rule), "{rule}:\n{gbnf}");
    }
    assert!(gbnf.contains(r#"bosun-call-0-name ::= "\"now\"""#), "{gbnf}");
    // A property named like a built-in rule does not replace it.
    assert!(defines("string") && defines("string-"), "{gbnf}");
}

#[test]
fn malformed_schemas_are_refused_with_their_place() {
    let error =
        schema_to_gbnf(&json!({"type": "object", "properties": {"a": {"type": "integr"}}})).unwrap_err();
    assert_eq!(error.to_string(), "at #/properties/a: unknown type `integr`");
    assert!(schema_to_gbnf(&json!({"enum": []})).is_err());
    assert!(schema_to_gbnf(&json!(3)).is_err());
    assert!(schema_to_gbnf(&json!({"type": "array", "minItems": -1})).is_err());
}
