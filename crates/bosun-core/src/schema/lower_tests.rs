//! Unit tests of schema lowering: what is inlined, mapped, merged, dropped
//! and refused.

use serde_json::{Value, json};

use super::lower;

fn lowered(schema: Value) -> Result<Value, String> {
    match schema {
        Value::Object(map) => lower(&map),
        _ => panic!("test schemas are objects"),
    }
}

#[test]
fn annotations_are_dropped_and_property_names_kept() {
    let schema = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "urn:x", "$comment": "c", "title": "T", "examples": [{}],
        "type": "object",
        "properties": {
            // Property names that look like keywords are names, not keywords.
            "title": {"type": "string", "format": "email", "deprecated": true, "readOnly": true},
            "format": {"type": "integer", "examples": [1], "x-vendor": 1},
        },
        "required": ["title"],
        "additionalProperties": false,
    });
    assert_eq!(
        lowered(schema).unwrap(),
        json!({
            "type": "object",
            "properties": {"title": {"type": "string"}, "format": {"type": "integer"}},
            "required": ["title"],
            "additionalProperties": false,
        })
    );
}

#[test]
fn local_refs_are_inlined_from_defs_and_definitions() {
    let schema = json!({
        "type": "object",
        "$defs": {"point": {"type": "object", "properties": {"x": {"$ref": "#/definitions/coord"}}}},
        "definitions": {"coord": {"type": "number", "minimum": 0}},
        "properties": {
            "from": {"$ref": "#/$defs/point", "description": "start"},
            "to": {"$ref": "#/%24defs/point"},
        },
    });
    let point = json!({"type": "object", "properties": {"x": {"type": "number", "minimum": 0}}});
    let mut from = point.clone();
    from["description"] = json!("start");
    assert_eq!(
        lowered(schema).unwrap(),
        json!({"type": "object", "properties": {"from": from, "to": point}})
    );
}

#[test]
fn a_recursive_ref_is_refused() {
    let schema = json!({
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}},
        "$defs": {"node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
    });
    let error = lowered(schema).unwrap_err();
    assert!(error.contains("`#/$defs/node` is recursive"), "{error}");
    let root = json!({"type": "object", "properties": {"again": {"$ref": "#"}}});
    assert!(lowered(root).unwrap_err().contains("recursive"));
}

#[test]
fn remote_anchor_and_dangling_refs_are_refused() {
    for (reference, says) in [
        ("https://example.com/s.json", "not local"),
        ("#thing", "anchor"),
        ("#/$defs/missing", "points at nothing"),
    ] {
        let schema = json!({"type": "object", "properties": {"a": {"$ref": reference}}});
        let error = lowered(schema).unwrap_err();
        assert!(error.contains(says), "{reference}: {error}");
    }
}

#[test]
fn a_schema_that_explodes_when_inlined_is_refused() {
    // Each level references the next twice: 2^14 nodes once inlined, with
    // fewer levels than the reference depth bound.
    let mut defs = serde_json::Map::new();
    for level in 0..14 {
        let next = format!("#/$defs/l{}", level + 1);
        defs.insert(
            format!("l{level}"),
            json!({"type": "object", "properties": {"a": {"$ref": next}, "b": {"$ref": next}}}),
        );
    }
    defs.insert("l14".into(), json!({"type": "string"}));
    let schema = json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/l0"}}, "$defs": defs});
    assert!(lowered(schema).unwrap_err().contains("schema nodes"));
}

#[test]
fn one_of_becomes_any_of_and_all_of_is_merged() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "box": {"allOf": [
                {"type": "object", "properties": {"w": {"type": "number"}}, "required": ["w"]},
                {"properties": {"h": {"type": "number", "minimum": 1}}, "required": ["h"]},
                {"properties": {"h": {"minimum": 2}}},
            ]},
        },
    });
    assert_eq!(
        lowered(schema).unwrap(),
        json!({
            "type": "object",
            "properties": {
                "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "box": {
                    "type": "object",
                    "properties": {"w": {"type": "number"}, "h": {"type": "number", "minimum": 2}},
                    "required": ["w", "h"],
                },
            },
        })
    );
    let clash =
        json!({"type": "object", "properties": {"x": {"allOf": [{"type": "string"}, {"type": "integer"}]}}});
    assert!(lowered(clash).unwrap_err().contains("no common type"));
}

#[test]
fn unchecked_validation_is_left_to_the_server() {
    let schema = json!({
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "contains": {"const": "a"}},
            "n": {"type": "integer", "multipleOf": 2, "not": {"const": 4}},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "old": {"type": "number", "minimum": 0, "exclusiveMinimum": true},
        },
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": false,
        "if": {"required": ["n"]}, "then": {"required": ["tags"]},
    });
    assert_eq!(
        lowered(schema).unwrap(),
        json!({
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "n": {"type": "integer"},
                "pair": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                "old": {"type": "number", "exclusiveMinimum": 0},
            },
        }),
        "patternProperties gone, so additionalProperties: false would refuse what it allowed"
    );
}

#[test]
fn an_empty_schema_is_an_object_and_a_non_object_is_refused() {
    assert_eq!(lowered(json!({})).unwrap(), json!({"type": "object"}));
    assert_eq!(lowered(json!({"type": ["object", "null"]})).unwrap(), json!({"type": "object"}));
    assert_eq!(
        lowered(json!({"properties": {"a": true}})).unwrap(),
        json!({"type": "object", "properties": {"a": {}}})
    );
    let error = lowered(json!({"type": "string"})).unwrap_err();
    assert!(error.contains("object schema"), "{error}");
    let bad_pattern = json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "(?!x)"}}});
    assert!(lowered(bad_pattern).unwrap_err().contains("regular expression"));
}
