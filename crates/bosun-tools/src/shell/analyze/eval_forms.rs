//! Syntax in which bash evaluates a string as code where an argument stands,
//! found in the tree as the walk reaches it.
//!
//! - `${x@P}` expands a value as a prompt, running its command
//!   substitutions;
//! - `${!x}` reads the variable a value names, and a name `a[$(cmd)]` runs
//!   `cmd` (listing names and keys, `${!p*}` and `${!a[@]}`, does not);
//! - arithmetic evaluates a variable's value recursively, so a value
//!   `a[$(cmd)]` runs `cmd`: `$((…))`, `$[…]`, `((…))`, `for ((…))`, the
//!   integer comparisons of `[[` (`-eq -ne -lt -le -gt -ge`), array
//!   subscripts (`${a[i]}`, `a[i]=v`, `([i]=v)`) and substring offsets
//!   (`${s:i}`) are opaque unless they name no variable ([`literal_arithmetic`]);
//! - `-v` and `-R` in `[[`/`[` evaluate the subscript of the name tested;
//! - the prompt strings, `PROMPT_COMMAND`, `BASH_ENV`, `ENV`, `BASH_CMDS`,
//!   `BASH_ALIASES` and `BASH_FUNC_*` run code or rebind names once assigned,
//!   however they are assigned ([`evaluated`]).
//!
//! Each makes the line opaque with a reason that names the form. The
//! builtins that do the same from their arguments (`let`, `declare -i`,
//! `printf -v`, …) are in [`super::builtins`].

use tree_sitter::Node;

use super::words::{is_fixed_name, literal_arithmetic, unquote};
use super::{Walk, fields, named_children};

/// Why assigning `name` runs code or rebinds what a name runs, if it does.
pub(super) fn evaluated(name: &str) -> Option<String> {
    let why = match name {
        "PS0" | "PS1" | "PS2" | "PS4" => "is expanded as a prompt, which runs its command substitutions",
        "PROMPT_COMMAND" => "runs as a command before a prompt",
        "BASH_ENV" | "ENV" => "names a script a shell runs before its own",
        "BASH_CMDS" => "rebinds what a command name runs",
        "BASH_ALIASES" => "defines aliases, which expand to code",
        _ if name.starts_with("BASH_FUNC_") => "defines a function a child bash imports",
        _ => return None,
    };
    Some(format!("`{name}` {why}"))
}

/// The integer comparisons of `[[`, whose operands are arithmetic.
const ARITHMETIC_TESTS: [&str; 6] = ["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

impl Walk<'_, '_> {
    /// `${…}`: prompt expansion, indirection, subscripts and offsets.
    pub(super) fn expansion(&mut self, node: Node<'_>) {
        let parts = fields(node);
        let kinds: Vec<&str> = parts.iter().map(|(_, part)| part.kind()).collect();
        if kinds.windows(2).any(|pair| pair == ["@", "P"]) {
            return self.opaque("prompt expansion `${…@P}` runs the command substitutions in a value");
        }
        if kinds.get(1) == Some(&"!") {
            let listing = match (parts.get(2), kinds.get(3), kinds.get(4)) {
                // `${!a[@]}`, `${!a[*]}`: the keys.
                (Some((_, subscript)), Some(&"}"), _) if subscript.kind() == "subscript" => subscript
                    .child_by_field_name("index")
                    .is_some_and(|index| matches!(&*self.text(index), "@" | "*")),
                // `${!prefix*}`, `${!prefix@}`: the names.
                (Some((_, name)), Some(&("*" | "@")), Some(&"}")) => name.kind() == "variable_name",
                _ => false,
            };
            if !listing {
                return self.opaque("indirect expansion `${!…}` evaluates a name taken from a value");
            }
        }
        for (_, part) in &parts {
            if part.kind() == "subscript" {
                self.subscript(*part);
            }
        }
        // `${s:offset:length}`: the operator is `:` alone (not `:-`, `:=`, …).
        if let Some(colon) = kinds.iter().position(|kind| *kind == ":") {
            let operands = parts.iter().skip(colon + 1).filter(|(_, part)| part.is_named());
            if operands.into_iter().any(|(_, operand)| !literal_arithmetic(&self.text(*operand))) {
                self.opaque("a substring offset or length naming a variable is evaluated as arithmetic, which can run commands");
            }
        }
    }

    /// An array subscript (`a[…]` in an expansion or an assignment).
    pub(super) fn subscript(&mut self, node: Node<'_>) {
        let Some(index) = node.child_by_field_name("index") else { return };
        let text = self.text(index).into_owned();
        if !matches!(text.as_str(), "@" | "*") && !literal_arithmetic(&text) {
            self.opaque(&format!(
                "an array subscript naming a variable (`{text}`) is evaluated as arithmetic, which can run commands"
            ));
        }
    }

    /// The elements of a compound array value: `([i]=v)` has a subscript.
    pub(super) fn array_elements(&mut self, node: Node<'_>) {
        for element in named_children(node) {
            let text = self.text(element).into_owned();
            let Some(inner) = text.strip_prefix('[') else { continue };
            let index = inner.split_once("]=").or_else(|| inner.split_once("]+=")).map(|(index, _)| index);
            if !index.is_some_and(|index| matches!(index, "@" | "*") || literal_arithmetic(index)) {
                self.opaque(&format!(
                    "an array subscript naming a variable (`{text}`) is evaluated as arithmetic, which can run commands"
                ));
            }
        }
    }

    /// `$((…))`, `$[…]`, `((…))`, `for ((…))`: the text between the
    /// delimiters must name no variable.
    pub(super) fn arithmetic(&mut self, node: Node<'_>) {
        let parts = fields(node);
        let open = parts.iter().position(|(_, part)| matches!(part.kind(), "$((" | "$[" | "(("));
        let close = parts.iter().rposition(|(_, part)| matches!(part.kind(), "))" | "]"));
        let (Some(open), Some(close)) = (open, close) else { return };
        let (Some((_, first)), Some((_, last))) = (parts.get(open), parts.get(close)) else { return };
        let inner = self.source.get(first.end_byte()..last.start_byte()).unwrap_or("").to_owned();
        let inner = inner.replace(';', " ");
        if !literal_arithmetic(&inner) {
            self.opaque(&format!(
                "arithmetic on a variable (`{}`) can run commands in its value",
                inner.trim()
            ));
        }
    }

    /// `[[ … ]]` and `[ … ]`: integer comparisons in `[[` and `-v`/`-R` in
    /// both. Substitutions inside are commands the walk reaches anyway.
    pub(super) fn test_command(&mut self, node: Node<'_>) {
        let double = node.child(0).is_some_and(|first| first.kind() == "[[");
        let mut stack = named_children(node);
        while let Some(expression) = stack.pop() {
            match expression.kind() {
                "command_substitution" | "process_substitution" => continue,
                "binary_expression" if double => {
                    let operator =
                        expression.child_by_field_name("operator").map(|op| self.text(op).into_owned());
                    if let Some(operator) = operator.filter(|op| ARITHMETIC_TESTS.contains(&op.as_str())) {
                        let operands = ["left", "right"].map(|side| expression.child_by_field_name(side));
                        let literal =
                            operands.iter().flatten().all(|operand| literal_arithmetic(&self.text(*operand)));
                        if !literal {
                            return self.opaque(&format!(
                                "`[[ … {operator} … ]]` evaluates its operands as arithmetic, which can run commands in a value"
                            ));
                        }
                    }
                }
                "unary_expression" => {
                    let operator =
                        expression.child_by_field_name("operator").map(|op| self.text(op).into_owned());
                    if operator.as_deref().is_some_and(|op| matches!(op, "-v" | "-R")) {
                        let operand = named_children(expression)
                            .into_iter()
                            .find(|child| child.kind() != "test_operator");
                        if !operand.is_some_and(|operand| self.fixed_name(operand)) {
                            return self.opaque("`-v` on a name that is not fixed evaluates its subscript, which can run commands");
                        }
                    }
                }
                _ => {}
            }
            stack.extend(named_children(expression));
        }
    }

    /// Whether a test operand is a literal, fixed name (`x`, `'a[2]'`).
    fn fixed_name(&self, operand: Node<'_>) -> bool {
        let raw = self.text(operand);
        let text = match operand.kind() {
            "word" => unquote(&raw).text,
            "raw_string" => raw.trim_matches('\'').to_owned(),
            "string" if named_children(operand).iter().all(|child| child.kind() == "string_content") => {
                raw.trim_matches('"').to_owned()
            }
            _ => return false,
        };
        is_fixed_name(&text)
    }
}
