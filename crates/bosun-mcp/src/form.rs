//! The form of a form elicitation, for any front end to render and check: a
//! requested schema read into [`Field`]s ([`fields`]), what to type for each
//! ([`hint`], [`typed`]), what a typed answer is worth ([`Field::answer`],
//! [`parse`]), and the content sent when the person accepts ([`Answers`],
//! [`content`]). The terminal prompt of the CLI asks field by field; a web
//! page or an editor may show the whole form at once. Both check the same way.
//!
//! The server's words (keys, titles, descriptions, choices, defaults) are
//! kept as they came: a front end sanitises what it shows, and sends back
//! the server's own values.

use std::fmt;

use serde_json::{Map, Value};

use crate::ElicitationResponse;

/// One field of a flat form.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Field {
    /// The property's name, the key of its value in the content.
    pub key: String,
    /// Its title, else its key (the server's words, unsanitised).
    pub label: String,
    /// Its description, if the schema gives one.
    pub description: Option<String>,
    /// Whether the schema lists it in `required`.
    pub required: bool,
    /// The schema's `default`, as the server wrote it.
    pub default: Option<Value>,
    /// What kind of value it takes.
    pub kind: Kind,
}

/// What kind of value a [`Field`] takes, with the schema's bounds.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Kind {
    /// A string (`type: string` without choices).
    Text {
        /// `minLength`, in characters.
        min: Option<u64>,
        /// `maxLength`, in characters.
        max: Option<u64>,
        /// `format` (`email`, `uri`, `date`, `date-time`; others are not checked).
        format: Option<String>,
    },
    /// A number (`type: number` or `integer`).
    Number {
        /// `minimum`.
        min: Option<f64>,
        /// `maximum`.
        max: Option<f64>,
        /// Whether only whole numbers fit (`type: integer`).
        integer: bool,
    },
    /// Yes or no (`type: boolean`).
    Boolean,
    /// One of these (a string with `enum`, `oneOf` or `anyOf`).
    Choice(Vec<Choice>),
    /// Some of these (an array whose `items` are choices).
    Choices {
        /// What may be chosen.
        options: Vec<Choice>,
        /// `minItems`.
        min: Option<u64>,
        /// `maxItems`.
        max: Option<u64>,
    },
    /// A type a flat form cannot ask for (the schema is not flat), named.
    Other(String),
}

/// One option of a [`Kind::Choice`] or [`Kind::Choices`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Choice {
    /// The value sent when it is chosen.
    pub value: String,
    /// Its title, if the schema gives one.
    pub title: Option<String>,
}

impl Choice {
    /// The option `value`, titled `title`.
    pub fn new(value: impl Into<String>, title: Option<String>) -> Self {
        Self { value: value.into(), title }
    }
}

/// The fields of a requested schema: the required ones first, each group in
/// the schema's order as bosun-mcp passes it on: the server's own order in a
/// build where serde_json keeps insertion order (the ACP crate turns that on
/// in bosun's binary), sorted by key otherwise.
pub fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = schema.get("properties").and_then(Value::as_object);
    let text = |p: &Value, key: &str| p.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut fields: Vec<Field> = properties
        .into_iter()
        .flatten()
        .map(|(key, property)| Field {
            key: key.clone(),
            label: text(property, "title").unwrap_or_else(|| key.clone()),
            description: text(property, "description"),
            required: required.contains(&key.as_str()),
            default: property.get("default").cloned(),
            kind: kind(property),
        })
        .collect();
    fields.sort_by_key(|f| !f.required);
    fields
}

/// The kind of value one property of a schema takes.
pub fn kind(property: &Value) -> Kind {
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let count = |key: &str| property.get(key).and_then(Value::as_u64);
    match property.get("type").and_then(Value::as_str) {
        Some("string") => match options(property) {
            Some(options) => Kind::Choice(options),
            None => Kind::Text {
                min: count("minLength"),
                max: count("maxLength"),
                format: property.get("format").and_then(Value::as_str).map(str::to_owned),
            },
        },
        Some(kind @ ("number" | "integer")) => {
            Kind::Number { min: number("minimum"), max: number("maximum"), integer: kind == "integer" }
        }
        Some("boolean") => Kind::Boolean,
        Some("array") => match property.get("items").and_then(options) {
            Some(options) => Kind::Choices { options, min: count("minItems"), max: count("maxItems") },
            None => Kind::Other("a list".into()),
        },
        Some(other) => Kind::Other(other.to_owned()),
        None => Kind::Other("no type".into()),
    }
}

/// The choices of `enum` (titled by `enumNames`), `oneOf` or `anyOf`;
/// `None` when the schema offers none of these.
pub fn options(schema: &Value) -> Option<Vec<Choice>> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        let title = |i: usize| names.and_then(|n| n.get(i)).and_then(Value::as_str).map(str::to_owned);
        let values = values.iter().enumerate().filter_map(|(i, v)| Some(Choice::new(v.as_str()?, title(i))));
        return Some(values.collect());
    }
    let titled = schema.get("oneOf").or_else(|| schema.get("anyOf"))?.as_array()?;
    let option = |o: &Value| {
        let title = o.get("title").and_then(Value::as_str).map(str::to_owned);
        Some(Choice::new(o.get("const")?.as_str()?, title))
    };
    Some(titled.iter().filter_map(option).collect())
}

/// What to type, shown after the field's label: `whole number, 1 to 100`.
pub fn hint(kind: &Kind) -> String {
    match kind {
        Kind::Text { format: Some(format), .. } => format!("text, {format}"),
        Kind::Text { .. } => "text".into(),
        Kind::Number { integer, min, max } => {
            let what = if *integer { "whole number" } else { "number" };
            match (min, max) {
                (Some(min), Some(max)) => format!("{what}, {min} to {max}"),
                (Some(min), None) => format!("{what}, at least {min}"),
                (None, Some(max)) => format!("{what}, at most {max}"),
                (None, None) => what.into(),
            }
        }
        Kind::Boolean => "y/n".into(),
        Kind::Choice(_) => "a number or a value".into(),
        Kind::Choices { .. } => "numbers or values, comma-separated".into(),
        Kind::Other(kind) => kind.clone(),
    }
}

/// A value (a default, an answer) as the person would type it: `y` for
/// true, a list comma-separated.
pub fn typed(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Bool(true) => "y".into(),
        Value::Bool(false) => "n".into(),
        Value::Array(items) => items.iter().map(typed).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The value of `input` for a field of `kind`, or what is wrong with it,
/// said to the person (`give a whole number, 1 to 100`).
pub fn parse(kind: &Kind, input: &str) -> Result<Value, String> {
    match kind {
        Kind::Text { min, max, format } => {
            let chars = input.chars().count() as u64;
            if let Some(min) = min.filter(|m| chars < *m) {
                return Err(format!("give at least {min} characters"));
            }
            if let Some(max) = max.filter(|m| chars > *m) {
                return Err(format!("give at most {max} characters"));
            }
            if let Some(format) = format {
                check_format(format, input)?;
            }
            Ok(Value::String(input.to_owned()))
        }
        Kind::Number { min, max, integer } => {
            let (number, value) = if *integer {
                let n: i64 = input.parse().map_err(|_| "give a whole number".to_owned())?;
                (serde_json::Number::from(n), n as f64)
            } else {
                let n = input.parse::<f64>().ok().filter(|n| n.is_finite()).ok_or("give a number")?;
                (serde_json::Number::from_f64(n).ok_or("give a number")?, n)
            };
            if min.is_some_and(|m| value < m) || max.is_some_and(|m| value > m) {
                return Err(format!("give a {}", hint(kind)));
            }
            Ok(Value::Number(number))
        }
        Kind::Boolean => match input.to_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer y or n".into()),
        },
        Kind::Choice(options) => choose(options, input).map(Value::String),
        Kind::Choices { options, min, max } => {
            let mut chosen = Vec::new();
            for word in input.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                let value = choose(options, word)?;
                if !chosen.contains(&value) {
                    chosen.push(value);
                }
            }
            let n = chosen.len() as u64;
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                let (min, max) = (min.unwrap_or(0), max.map_or("any".to_owned(), |m| m.to_string()));
                return Err(format!("choose from {min} to {max}"));
            }
            Ok(Value::Array(chosen.into_iter().map(Value::String).collect()))
        }
        Kind::Other(kind) => Err(format!("bosun cannot ask for {kind}")),
    }
}

/// An option's value by its number (from 1), its value or its title (any case).
pub fn choose(options: &[Choice], input: &str) -> Result<String, String> {
    let by_number = input.parse::<usize>().ok().and_then(|n| n.checked_sub(1)).and_then(|i| options.get(i));
    let found = by_number.or_else(|| options.iter().find(|option| option.value == input)).or_else(|| {
        options.iter().find(|option| option.title.as_deref().is_some_and(|t| t.eq_ignore_ascii_case(input)))
    });
    match found {
        Some(option) => Ok(option.value.clone()),
        None => Err(format!("choose 1 to {}", options.len())),
    }
}

/// Checks `input` against the `format`s the spec names, loosely: enough to
/// catch a slip. Other formats pass.
pub fn check_format(format: &str, input: &str) -> Result<(), String> {
    let fine = match format {
        "email" => input.split_once('@').is_some_and(|(user, host)| !user.is_empty() && host.contains('.')),
        "uri" => input.split_once(':').is_some_and(|(scheme, rest)| {
            !rest.is_empty() && scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        }),
        "date" => is_date(input),
        "date-time" => {
            input.get(..10).is_some_and(is_date) && input.get(10..11).is_some_and(|t| t == "T" || t == " ")
        }
        _ => true,
    };
    if fine { Ok(()) } else { Err(format!("give a valid {format}")) }
}

/// `YYYY-MM-DD`, digits and dashes only.
fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes
            .iter()
            .enumerate()
            .all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() })
}

impl Field {
    /// Whether a flat form can ask for it ([`Kind::Other`] cannot). A
    /// required field that cannot be asked for leaves only decline or cancel.
    pub fn askable(&self) -> bool {
        !matches!(self.kind, Kind::Other(_))
    }

    /// What to type ([`hint`]).
    pub fn hint(&self) -> String {
        hint(&self.kind)
    }

    /// The schema's default as the person would type it ([`typed`]).
    pub fn typed_default(&self) -> Option<String> {
        self.default.as_ref().map(typed)
    }

    /// What `input` (trimmed) is worth for this field: empty keeps the
    /// default; `Ok(None)` is an optional field left empty (left out of
    /// the content).
    pub fn answer(&self, input: &str) -> Result<Option<Value>, Problem> {
        let input = input.trim();
        let default = self.typed_default();
        let typed = match (input.is_empty(), default) {
            (false, _) => input.to_owned(),
            (true, Some(default)) => default,
            (true, None) if self.required => return Err(Problem::Required),
            (true, None) => return Ok(None),
        };
        match parse(&self.kind, &typed) {
            Ok(value) => Ok(Some(value)),
            Err(problem) if input.is_empty() => Err(Problem::DefaultDoesNotFit(problem)),
            Err(problem) => Err(Problem::Invalid(problem)),
        }
    }
}

/// Why an answer does not fit its field, said to the person.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A required field was left empty and has no default.
    Required,
    /// What was typed does not fit ([`parse`]'s words).
    Invalid(String),
    /// The field was left empty and the server's default does not fit.
    DefaultDoesNotFit(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Required => f.write_str("a value is required"),
            Self::Invalid(problem) => f.write_str(problem),
            Self::DefaultDoesNotFit(problem) => {
                write!(f, "the server's default does not fit ({problem}); type a value")
            }
        }
    }
}

/// The content of an accepted form, gathered field by field.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answers {
    values: Map<String, Value>,
}

impl Answers {
    /// No answers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `answer` for `field` ([`Field::answer`]); `None` leaves it out.
    pub fn set(&mut self, field: &Field, answer: Option<Value>) {
        match answer {
            Some(value) => self.values.insert(field.key.clone(), value),
            None => self.values.remove(&field.key),
        };
    }

    /// Whether nothing would be sent.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// What would be sent, key and value, to show before it is.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.values.iter().map(|(key, value)| (key.as_str(), value))
    }

    /// The content, as the server receives it.
    pub fn content(&self) -> Value {
        Value::Object(self.values.clone())
    }

    /// The answer that sends these values.
    pub fn accept(self) -> ElicitationResponse {
        ElicitationResponse::Accept(Value::Object(self.values))
    }
}

/// The whole form at once, for a front end that shows every field together:
/// `inputs` holds what the person typed by field key (a string as typed; a
/// number, boolean or list is read as [`typed`] writes it; a key left out
/// or `null` is a field left empty). The content to accept, or the first field (in
/// [`fields`]' order) whose answer does not fit, with why. A required field
/// that cannot be asked for ([`Field::askable`]) is [`Problem::Required`].
pub fn content<'a>(
    fields: &'a [Field],
    inputs: &Map<String, Value>,
) -> Result<Answers, (&'a Field, Problem)> {
    let mut answers = Answers::new();
    for field in fields {
        if !field.askable() {
            if field.required {
                return Err((field, Problem::Required));
            }
            continue;
        }
        let input = inputs.get(&field.key).filter(|v| !v.is_null()).map(typed).unwrap_or_default();
        answers.set(field, field.answer(&input).map_err(|problem| (field, problem))?);
    }
    Ok(answers)
}

/// The answer when the person declines the form; the reason reaches the server.
pub fn declined() -> ElicitationResponse {
    ElicitationResponse::Decline { reason: "the user declined".to_owned() }
}

#[cfg(test)]
#[path = "form_tests.rs"]
mod tests;
