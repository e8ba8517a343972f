//! The form prompt driven by scripted input: what the person types is a
//! byte string, what the terminal shows is collected. The checks of the
//! form itself are bosun-mcp's (`form_tests.rs`).

use super::*;
use serde_json::json;

/// Runs the prompt over `typed`; the answer and what was shown.
fn run(server: &str, message: &str, schema: &Value, typed: &str) -> (ElicitationResponse, String) {
    let mut input = io::Cursor::new(typed.as_bytes().to_vec());
    let mut shown = Vec::new();
    let answer = ask(&mut input, &mut shown, Palette::PLAIN, server, message, schema).unwrap();
    (answer, String::from_utf8(shown).unwrap())
}

/// Every kind of field; keys in alphabetical order so that the order the
/// fields are asked in does not depend on how the map keeps its keys.
fn every_kind() -> Value {
    json!({
        "type": "object",
        "properties": {
            "a_name": {"type": "string", "title": "Name", "description": "Your name", "minLength": 2},
            "b_age": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
            "c_score": {"type": "number", "default": 2.75},
            "d_ok": {"type": "boolean", "default": true},
            "e_colour": {"type": "string", "enum": ["red", "green"], "default": "green"},
            "f_pets": {"type": "array", "minItems": 1, "maxItems": 2,
                       "items": {"anyOf": [{"const": "p1", "title": "Cats"}, {"const": "p2", "title": "Dogs"}]},
                       "default": ["p1"]},
            "g_nick": {"type": "string"},
        },
        "required": ["a_name"],
    })
}

#[test]
fn every_kind_is_asked_checked_and_sent_with_defaults_kept_on_enter() {
    // answer; name: empty (required), too short, fine; age: Enter keeps 42;
    // score: not a number, then 2.5; ok: Enter keeps yes; colour: by number;
    // pets: by title and value; nick: left out; send.
    let typed = "a\n\nA\nAnn\n\nabc\n2.5\n\n1\nDogs, p1\n\ny\n";
    let (answer, shown) = run("srv", "Please fill in", &every_kind(), typed);
    assert_eq!(
        answer,
        ElicitationResponse::Accept(json!({
            "a_name": "Ann", "b_age": 42, "c_score": 2.5, "d_ok": true, "e_colour": "red", "f_pets": ["p2", "p1"]
        }))
    );
    for expected in [
        "? MCP server `srv` asks for input:\n  Please fill in\n",
        "  Your name\nName (text, required): ",
        "  a value is required\n",
        "  give at least 2 characters\n",
        "b_age (whole number, 1 to 100) [42]: ",
        "c_score (number) [2.75]: ",
        "  give a number\n",
        "d_ok (y/n) [y]: ",
        "    1) red\n    2) green\ne_colour (a number or a value) [green]: ",
        "    1) Cats (p1)\n    2) Dogs (p2)\nf_pets (numbers or values, comma-separated) [p1]: ",
        "send to `srv`:\n  a_name: Ann\n  b_age: 42\n",
        "  f_pets: p2, p1\n  [y] send\n",
    ] {
        assert!(shown.contains(expected), "no {expected:?} in:\n{shown}");
    }
    assert!(!shown.contains("g_nick:"), "an optional field left empty is not sent:\n{shown}");
}

#[test]
fn decline_cancel_and_the_end_of_input_are_answers() {
    let schema = every_kind();
    let declined = ElicitationResponse::Decline { reason: "the user declined".into() };
    assert_eq!(run("s", "m", &schema, "d\n").0, declined);
    assert_eq!(run("s", "m", &schema, "c\n").0, ElicitationResponse::Cancel);
    assert_eq!(run("s", "m", &schema, "").0, ElicitationResponse::Cancel, "the terminal closed");
    assert_eq!(run("s", "m", &schema, "a\nAnn\n").0, ElicitationResponse::Cancel, "closed mid-form");
    let all = "a\nAnn\n\n\n\n\n\n\n";
    assert_eq!(run("s", "m", &schema, &format!("{all}d\n")).0, declined, "declined at the end");
    let (answer, shown) = run("s", "m", &schema, &format!("x\nyes\n{}", &all[2..]));
    assert_eq!(answer, ElicitationResponse::Cancel);
    assert!(shown.contains("please answer a, d, c\n"), "{shown}");
}

#[test]
fn the_servers_words_are_shown_sanitised() {
    let schema = json!({"type": "object", "properties": {
        "k\u{202e}": {"type": "string", "title": "T\x1b[2J", "description": "d\r\x1b]0;x\x07",
                      "enum": ["v\x1b[8m"], "default": "v\x1b[8m"},
    }});
    let (answer, shown) = run("ev\x1b[31mil", "line one\n\x1b[1Aline two\u{9b}", &schema, "a\n\ny\n");
    assert!(!shown.contains('\x1b') && !shown.contains('\r') && !shown.contains('\u{9b}'), "{shown:?}");
    for expected in [
        "MCP server `ev\\x1b[31mil` asks",
        "  line one\n  \\x1b[1Aline two\\u{9b}\n",
        "  d\\r\\x1b]0;x\\x07\n",
        "    1) v\\x1b[8m\n",
        "T\\x1b[2J (a number or a value) [v\\x1b[8m]: ",
        "  k⟪U+202E⟫: v\\x1b[8m\n",
    ] {
        assert!(shown.contains(expected), "no {expected:?} in:\n{shown}");
    }
    assert_eq!(
        answer,
        ElicitationResponse::Accept(json!({"k\u{202e}": "v\x1b[8m"})),
        "the values are the server's own"
    );
}

#[test]
fn a_required_field_bosun_cannot_ask_for_leaves_decline_or_cancel() {
    let schema = json!({"type": "object", "properties": {"deep": {"type": "object"}}, "required": ["deep"]});
    let (answer, shown) = run("s", "m", &schema, "a\nd\n");
    assert!(shown.contains("the required field `deep` is object, which bosun cannot ask for"), "{shown}");
    assert!(shown.contains("please answer d, c"), "{shown}");
    assert!(matches!(answer, ElicitationResponse::Decline { .. }));
    // Optional fields of such kinds are skipped.
    let optional =
        json!({"type": "object", "properties": {"deep": {"type": "object"}, "n": {"type": "integer"}}});
    assert_eq!(run("s", "m", &optional, "a\n7\ny\n").0, ElicitationResponse::Accept(json!({"n": 7})));
}

#[test]
fn a_default_that_does_not_fit_is_not_sent() {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": 10, "default": 500}}});
    let (answer, shown) = run("s", "m", &schema, "a\n\n7\ny\n");
    assert!(
        shown.contains("the server's default does not fit (give a whole number, at most 10); type a value"),
        "{shown}"
    );
    assert_eq!(answer, ElicitationResponse::Accept(json!({"n": 7})));
}

#[test]
fn required_fields_are_asked_first() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}, "z": {"type": "string"}},
                        "required": ["z"]});
    let (answer, shown) = run("s", "m", &schema, "a\nfirst\nsecond\ny\n");
    let (z, a) = (shown.find("z (text, required): ").unwrap(), shown.find("a (text): ").unwrap());
    assert!(z < a, "{shown}");
    assert_eq!(answer, ElicitationResponse::Accept(json!({"z": "first", "a": "second"})));
}

#[test]
fn legacy_enum_names_title_the_choices() {
    let schema = json!({"type": "object", "properties": {
        "pet": {"type": "string", "enum": ["pet-1", "pet-2"], "enumNames": ["Cats", "Dogs"], "default": "pet-1"},
    }});
    let (answer, shown) = run("s", "m", &schema, "a\ndogs\ny\n");
    assert!(shown.contains("    1) Cats (pet-1)\n    2) Dogs (pet-2)\n"), "{shown}");
    assert_eq!(answer, ElicitationResponse::Accept(json!({"pet": "pet-2"})));
}

#[test]
fn a_withdrawn_question_ends_the_read() {
    let (reader, mut writer) = std::io::pipe().unwrap();
    let wake = Arc::new(Wake::new().unwrap());
    let mut tty = Tty { tty: File::from(OwnedFd::from(reader)), wake: Arc::clone(&wake) };
    writer.write_all(b"y").unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(tty.read(&mut buf).unwrap(), 1, "input is read while the question stands");
    let stop = StopOnDrop(Arc::clone(&wake));
    drop(stop);
    let error = tty.read(&mut buf).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::ConnectionAborted);
}
