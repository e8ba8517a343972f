//! The form model: schemas read into fields, answers checked against their
//! kind, the content assembled.

use super::*;
use serde_json::json;

fn options(pairs: &[(&str, Option<&str>)]) -> Vec<Choice> {
    pairs.iter().map(|(value, title)| Choice::new(*value, title.map(str::to_owned))).collect()
}

#[test]
fn values_are_checked_against_their_kind() {
    let integer = Kind::Number { min: Some(1.0), max: Some(100.0), integer: true };
    assert_eq!(parse(&integer, "100"), Ok(json!(100)));
    assert_eq!(parse(&integer, "3.5"), Err("give a whole number".into()));
    assert_eq!(parse(&integer, "0"), Err("give a whole number, 1 to 100".into()));
    let number = Kind::Number { min: None, max: None, integer: false };
    assert_eq!(parse(&number, "-2e3"), Ok(json!(-2000.0)));
    assert!(parse(&number, "inf").is_err() && parse(&number, "NaN").is_err());
    let text = |format: &str| Kind::Text { min: None, max: Some(40), format: Some(format.into()) };
    assert!(parse(&text("email"), "a@b.example").is_ok());
    assert_eq!(parse(&text("email"), "nobody"), Err("give a valid email".into()));
    assert!(parse(&text("uri"), "https://x.example").is_ok() && parse(&text("uri"), "x").is_err());
    assert!(parse(&text("date"), "2026-11-29").is_ok() && parse(&text("date"), "29/11/2026").is_err());
    assert!(parse(&text("date-time"), "2026-11-29T10:00:00Z").is_ok());
    assert_eq!(parse(&text("date"), &"9".repeat(41)), Err("give at most 40 characters".into()));
    assert_eq!(parse(&Kind::Boolean, "maybe"), Err("answer y or n".into()));
    let options = options(&[("a", None), ("b", Some("Bee"))]);
    assert_eq!(parse(&Kind::Choice(options.clone()), "bee"), Ok(json!("b")));
    assert_eq!(parse(&Kind::Choice(options.clone()), "3"), Err("choose 1 to 2".into()));
    let some = Kind::Choices { options, min: Some(1), max: Some(1) };
    assert_eq!(parse(&some, "1, 2"), Err("choose from 1 to 1".into()));
    assert_eq!(parse(&some, "a, 1"), Ok(json!(["a"])), "the same choice twice counts once");
}

#[test]
fn a_schema_reads_into_fields_required_first_with_their_kinds() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "string", "title": "A", "description": "first", "minLength": 2, "format": "email"},
        "deep": {"type": "object"},
        "list": {"type": "array", "items": {"type": "string"}},
        "n": {"type": "integer", "minimum": 1, "default": 3},
        "pet": {"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"]},
        "tags": {"type": "array", "maxItems": 2, "items": {"oneOf": [{"const": "x", "title": "Ex"}]}},
        "z": {"type": "boolean"},
    }, "required": ["z", "deep"]});
    // Written in key order, so the schema's order is the same whether or not
    // this build's JSON maps keep insertion order.
    let fields = fields(&schema);
    let keys: Vec<&str> = fields.iter().map(|f| f.key.as_str()).collect();
    assert_eq!(keys, ["deep", "z", "a", "list", "n", "pet", "tags"]);
    assert_eq!(
        fields[2],
        Field {
            key: "a".into(),
            label: "A".into(),
            description: Some("first".into()),
            required: false,
            default: None,
            kind: Kind::Text { min: Some(2), max: None, format: Some("email".into()) },
        }
    );
    assert_eq!(fields[0].kind, Kind::Other("object".into()));
    assert!(!fields[0].askable() && fields[1].askable());
    assert_eq!(fields[3].kind, Kind::Other("a list".into()));
    assert_eq!(fields[4].hint(), "whole number, at least 1");
    assert_eq!(fields[4].typed_default().as_deref(), Some("3"));
    assert_eq!(fields[5].kind, Kind::Choice(options(&[("pet-1", Some("Cats")), ("pet-2", Some("Dogs"))])));
    assert_eq!(
        fields[6].kind,
        Kind::Choices { options: options(&[("x", Some("Ex"))]), min: None, max: Some(2) }
    );
    assert_eq!(kind(&json!({})), Kind::Other("no type".into()));
}

#[test]
fn defaults_and_answers_are_typed_as_the_person_would() {
    assert_eq!(typed(&json!(true)), "y");
    assert_eq!(typed(&json!(false)), "n");
    assert_eq!(typed(&json!(["p1", "p2"])), "p1, p2");
    assert_eq!(typed(&json!(2.75)), "2.75");
    assert_eq!(typed(&json!("text")), "text");
}

#[test]
fn an_answer_keeps_the_default_on_empty_and_says_what_is_wrong() {
    let schema = json!({"type": "object", "properties": {
        "n": {"type": "integer", "maximum": 10, "default": 500},
        "name": {"type": "string"},
        "ok": {"type": "boolean", "default": true},
    }, "required": ["name"]});
    let fields = fields(&schema);
    let (name, n, ok) = (&fields[0], &fields[1], &fields[2]);
    assert_eq!(name.answer("  "), Err(Problem::Required));
    assert_eq!(Problem::Required.to_string(), "a value is required");
    assert_eq!(name.answer(" Ann "), Ok(Some(json!("Ann"))));
    let problem = n.answer("").unwrap_err();
    assert_eq!(
        problem.to_string(),
        "the server's default does not fit (give a whole number, at most 10); type a value"
    );
    assert_eq!(n.answer("11"), Err(Problem::Invalid("give a whole number, at most 10".into())));
    assert_eq!(ok.answer(""), Ok(Some(json!(true))));
    let optional = Field { required: false, ..name.clone() };
    assert_eq!(optional.answer(""), Ok(None), "an optional field left empty is left out");
}

#[test]
fn the_content_is_the_answers_of_the_fields_given() {
    let schema = json!({"type": "object", "properties": {
        "age": {"type": "integer", "default": 42},
        "name": {"type": "string"},
        "nick": {"type": "string"},
        "pets": {"type": "array", "items": {"enum": ["cat", "dog"]}},
        "deep": {"type": "object"},
    }, "required": ["name"]});
    let fields = fields(&schema);
    let inputs = json!({"name": "Ann", "pets": ["dog", "cat"], "nick": null});
    let Value::Object(inputs) = inputs else { unreachable!() };
    let answers = content(&fields, &inputs).unwrap();
    assert_eq!(answers.content(), json!({"name": "Ann", "age": 42, "pets": ["dog", "cat"]}));
    let shown: Vec<(&str, String)> = answers.iter().map(|(k, v)| (k, typed(v))).collect();
    let mut shown_sorted = shown.clone();
    shown_sorted.sort();
    assert_eq!(shown_sorted, [("age", "42".to_owned()), ("name", "Ann".into()), ("pets", "dog, cat".into())]);
    let keys: Vec<&str> = shown.iter().map(|(k, _)| *k).collect();
    let in_field_order = ["name", "age", "pets"];
    assert!(
        keys == in_field_order || keys == ["age", "name", "pets"],
        "shown in the fields' order (insertion-ordered maps) or by key, not {keys:?}"
    );
    assert_eq!(
        answers.accept(),
        ElicitationResponse::Accept(json!({"name": "Ann", "age": 42, "pets": ["dog", "cat"]}))
    );

    let (field, problem) = content(&fields, &Map::new()).unwrap_err();
    assert_eq!((field.key.as_str(), problem), ("name", Problem::Required));
    let required = json!({"properties": {"deep": {"type": "object"}}, "required": ["deep"]});
    let blocked = super::fields(&required);
    let (field, problem) = content(&blocked, &Map::new()).unwrap_err();
    assert_eq!((field.key.as_str(), problem), ("deep", Problem::Required), "it cannot be asked for");

    let mut answers = Answers::new();
    assert!(answers.is_empty());
    answers.set(&fields[0], Some(json!("Bo")));
    answers.set(&fields[0], None);
    assert!(answers.is_empty(), "an answer taken back is left out");
    assert_eq!(declined(), ElicitationResponse::Decline { reason: "the user declined".into() });
}
