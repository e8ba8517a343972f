//! An answer held to a JSON Schema (`GenerationOptions::output_schema`), in
//! each API's own terms: OpenAI's `json_schema` response format (Chat
//! Completions' `response_format`, Responses' `text.format`), Gemini's
//! `responseJsonSchema` (plain JSON Schema, where `responseSchema` takes
//! only an OpenAPI subset), and for Anthropic's Messages, which has no such
//! field, an instruction after the system prompt. None is trusted: whoever
//! set the schema checks the answer.

use bosun_core::OutputSchema;
use serde_json::{Value, json};

/// The fields OpenAI's APIs take for a `json_schema` format: `name`,
/// `schema`, and `strict` when the schema keeps to what strict mode
/// accepts (else the API would refuse the request; the answer is checked
/// all the same).
pub(crate) fn openai_format(output: &OutputSchema) -> serde_json::Map<String, Value> {
    let mut format = serde_json::Map::new();
    format.insert("name".into(), json!(output.name));
    format.insert("schema".into(), output.schema.clone());
    format.insert("strict".into(), json!(strict_compatible(&output.schema)));
    format
}

/// The schema for Gemini's `responseJsonSchema`, without the `$schema`
/// keyword Gemini does not take.
pub(crate) fn gemini_schema(output: &OutputSchema) -> Value {
    let mut schema = output.schema.clone();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    schema
}

/// The instruction for an API with no structured-output field.
pub(crate) fn instruction(output: &OutputSchema) -> String {
    format!(
        "Your final answer (the reply that ends your turn, after any tool calls) must be exactly one JSON \
         value that matches the JSON Schema below: no other text, no Markdown code fence. It is checked \
         against the schema.\n{}",
        output.schema
    )
}

/// Whether OpenAI's strict mode takes `schema`: every object lists all its
/// properties as required and allows no others, at every depth.
fn strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties") {
                let properties = map.get("properties").and_then(Value::as_object);
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
                let all_required =
                    properties.is_none_or(|p| p.keys().all(|key| required.contains(&key.as_str())));
                if !(closed && all_required) {
                    return false;
                }
            }
            map.iter()
                .filter(|(key, _)| key.as_str() != "enum" && key.as_str() != "const")
                .all(|(_, v)| strict_compatible(v))
        }
        Value::Array(items) => items.iter().all(strict_compatible),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_mode_only_for_closed_objects_with_every_property_required() {
        let closed = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "array",
            "items": {"type": "object", "properties": {"c": {"type": "integer"}}, "required": ["c"],
            "additionalProperties": false}}}, "required": ["a", "b"], "additionalProperties": false});
        assert!(strict_compatible(&closed));
        let optional = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": [],
            "additionalProperties": false});
        assert!(!strict_compatible(&optional));
        let mut open = closed.clone();
        open["properties"]["b"]["items"]["additionalProperties"] = json!(true);
        assert!(!strict_compatible(&open));
        assert!(strict_compatible(&json!({"type": "string", "enum": [{"x": 1}]})));
        let named = OutputSchema::new("report v2!", closed);
        let format = openai_format(&named);
        assert_eq!((format["name"].as_str(), format["strict"].as_bool()), (Some("report_v2_"), Some(true)));
        let with_meta = OutputSchema::new(
            "x",
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "string"}),
        );
        assert_eq!(gemini_schema(&with_meta), json!({"type": "string"}));
        assert!(instruction(&with_meta).ends_with(&with_meta.schema.to_string()));
    }
}
