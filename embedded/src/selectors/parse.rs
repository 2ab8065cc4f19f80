//! The label-selector lexer and parser (apimachinery `labels.Parse`), and
//! label key/value validation.

use super::SelectorError;
use super::label::{Operator, Requirement};

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Token {
    Ident(String),
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Open,
    Close,
    Comma,
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '<' | '>')
}

pub(super) fn lex(input: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if is_special(c) {
            chars.next();
            let next_is_eq = chars.peek() == Some(&'=');
            let token = match c {
                '=' if next_is_eq => Token::DoubleEq,
                '!' if next_is_eq => Token::NotEq,
                '=' => Token::Eq,
                '!' => Token::Not,
                '(' => Token::Open,
                ')' => Token::Close,
                ',' => Token::Comma,
                '<' => Token::Lt,
                _ => Token::Gt,
            };
            if matches!(token, Token::DoubleEq | Token::NotEq) {
                chars.next();
            }
            tokens.push(token);
        } else {
            let mut ident = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || is_special(c) {
                    break;
                }
                ident.push(c);
                chars.next();
            }
            tokens.push(Token::Ident(ident));
        }
    }
    tokens
}

pub(super) struct Parser {
    pub(super) tokens: Vec<Token>,
    pub(super) pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn error(&self, what: &str) -> SelectorError {
        let found = match self.tokens.get(self.pos.saturating_sub(1)) {
            Some(Token::Ident(s)) => format!("{s:?}"),
            Some(t) => format!("{t:?}"),
            None => "end of string".to_owned(),
        };
        SelectorError::Syntax(format!("{what}, found {found}"))
    }

    pub(super) fn parse(mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut out = Vec::new();
        if self.tokens.is_empty() {
            return Ok(out);
        }
        loop {
            out.push(self.requirement()?);
            match self.next() {
                None => return Ok(out),
                Some(Token::Comma) if self.peek().is_some() => {}
                Some(Token::Comma) => return Err(self.error("expected a requirement after ','")),
                Some(_) => return Err(self.error("expected ',' or end of string")),
            }
        }
    }

    fn ident(&mut self, what: &str) -> Result<String, SelectorError> {
        match self.next() {
            Some(Token::Ident(s)) => Ok(s),
            _ => Err(self.error(what)),
        }
    }

    fn at_end_of_requirement(&self) -> bool {
        matches!(self.peek(), None | Some(Token::Comma))
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        if self.peek() == Some(&Token::Not) {
            self.next();
            let key = self.ident("expected a label key after '!'")?;
            return Requirement::new(&key, Operator::DoesNotExist, Vec::new());
        }
        let key = self.ident("expected a label key")?;
        if self.at_end_of_requirement() {
            return Requirement::new(&key, Operator::Exists, Vec::new());
        }
        let operator = match self.next() {
            Some(Token::Eq) => Operator::Equals,
            Some(Token::DoubleEq) => Operator::DoubleEquals,
            Some(Token::NotEq) => Operator::NotEquals,
            Some(Token::Gt) => Operator::GreaterThan,
            Some(Token::Lt) => Operator::LessThan,
            Some(Token::Ident(op)) if op == "in" => Operator::In,
            Some(Token::Ident(op)) if op == "notin" => Operator::NotIn,
            _ => return Err(self.error("expected one of '=', '==', '!=', 'in', 'notin', '<', '>'")),
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_set()?,
            _ if self.at_end_of_requirement() => vec![String::new()],
            _ => vec![self.ident("expected a value")?],
        };
        Requirement::new(&key, operator, values)
    }

    /// `( v1, v2 )`; empty entries (`()`, `(a,)`) are the empty value, like upstream.
    fn value_set(&mut self) -> Result<Vec<String>, SelectorError> {
        if self.next() != Some(Token::Open) {
            return Err(self.error("expected '(' after 'in'/'notin'"));
        }
        let mut values = Vec::new();
        let mut expect_value = true;
        loop {
            match self.next() {
                Some(Token::Ident(v)) if expect_value => {
                    values.push(v);
                    expect_value = false;
                }
                Some(Token::Comma) => {
                    if expect_value {
                        values.push(String::new());
                    }
                    expect_value = true;
                }
                Some(Token::Close) => {
                    if expect_value {
                        values.push(String::new());
                    }
                    return Ok(values);
                }
                _ => return Err(self.error("expected a value, ',' or ')'")),
            }
        }
    }
}

fn is_alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

/// A label name or value body: `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_name_body(s: &str) -> bool {
    s.starts_with(is_alnum)
        && s.ends_with(is_alnum)
        && s.chars().all(|c| is_alnum(c) || matches!(c, '-' | '_' | '.'))
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && label.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        })
}

/// Validates a qualified label key (`[prefix/]name`).
pub(crate) fn validate_label_key(key: &str) -> Result<(), SelectorError> {
    let invalid =
        |reason: &str| SelectorError::InvalidKey { key: key.to_owned(), reason: reason.to_owned() };
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Err(invalid("prefix part must be non-empty"));
        }
        if !is_dns_subdomain(prefix) {
            return Err(invalid(
                "prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters",
            ));
        }
    }
    if name.is_empty() {
        return Err(invalid("name part must be non-empty"));
    }
    if name.len() > 63 {
        return Err(invalid("name part must be no more than 63 characters"));
    }
    if !is_name_body(name) {
        return Err(invalid(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        ));
    }
    Ok(())
}

/// Validates a label value (empty allowed).
pub(crate) fn validate_label_value(value: &str) -> Result<(), SelectorError> {
    let invalid = |reason: &str| SelectorError::InvalidValue {
        value: value.to_owned(),
        reason: reason.to_owned(),
    };
    if value.len() > 63 {
        return Err(invalid("must be no more than 63 characters"));
    }
    if !value.is_empty() && !is_name_body(value) {
        return Err(invalid(
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        ));
    }
    Ok(())
}
