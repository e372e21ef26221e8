//! `mnemofs agent`: memory-cli's agent mode. Its input is one tool call,
//! `{"name": "memory_write", "params": {...}}`, or an array of them; each
//! runs in turn through [`tools`](super::tools), the table the socket and
//! MCP serve, and gives one result.
//!
//! memory-cli's seven tool names are the table's aliases, so their
//! schemas are written once, there; mnemofs's own tool names work too.
//! `arguments` is read where `params` is missing (MCP's spelling). A call
//! that fails is a result with an `error`, and the calls after it still
//! run, as a batch of independent calls should.

use serde_json::{Map, Value, json};

use super::tools;
use crate::ops::{self, Request, Response};

/// memory-cli's seven tools: name, description and parameters' schema.
pub fn list_tools() -> Vec<Value> {
    tools::ALIASES
        .iter()
        .map(|a| json!({"name": a.name, "description": a.description, "parameters": a.input_schema()}))
        .collect()
}

/// The calls `input` holds: one JSON object, or an array of them.
pub fn parse_calls(input: &str) -> Result<Vec<Value>, String> {
    if input.trim().is_empty() {
        return Err("no tool call on stdin: give one JSON object such as \
             {\"name\":\"memory_search\",\"params\":{\"query\":\"x\"}}, or an array of them"
            .into());
    }
    match serde_json::from_str(input) {
        Ok(Value::Array(calls)) => Ok(calls),
        Ok(call @ Value::Object(_)) => Ok(vec![call]),
        Ok(other) => Err(format!(
            "stdin holds a JSON {}; a tool call is an object, or an array of them",
            kind(&other)
        )),
        Err(e) => Err(format!("stdin is not JSON ({e})")),
    }
}

/// Runs one call: `{"name", "ok": true, "result", "text"}`, or `{"name",
/// "ok": false, "error": {"code", "message"}}`.
pub fn run(call: &dyn Fn(Request) -> ops::Result<Response>, input: &Value) -> Value {
    let name = input.get("name").and_then(Value::as_str);
    let failed = |code: i32, message: String| json!({"name": name, "ok": false, "error": {"code": code, "message": message}});
    let Some(name) = name else {
        return failed(
            ops::rpc::INVALID_PARAMS,
            "a tool call needs `name`, the tool's name".into(),
        );
    };
    let params = match input.get("params").or_else(|| input.get("arguments")) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params.clone(),
        Some(other) => {
            return failed(
                ops::rpc::INVALID_PARAMS,
                format!("`params` must be an object, not {}", kind(other)),
            );
        }
    };
    match tools::call(call, name, &params) {
        Ok(answer) if answer.is_error => failed(ops::rpc::INVALID_PARAMS, answer.text),
        Ok(answer) => {
            json!({"name": name, "ok": true, "result": answer.structured, "text": answer.text})
        }
        Err(fail) => failed(fail.code, fail.message),
    }
}

/// False for a call that only adds a memory, which needs nothing the
/// index has: a batch of writes need not wait for it between them.
pub fn reads_the_index(call: &Value) -> bool {
    !matches!(
        call.get("name").and_then(Value::as_str),
        Some("memory_write" | "write")
    )
}

/// The paths a result says its call changed (what a write, tag or delete
/// answers with), for the index to hear of before the next call.
pub fn changed_paths(result: &Value) -> Vec<String> {
    if result["ok"] != true {
        return Vec::new();
    }
    result["result"]["path"]
        .as_str()
        .map(str::to_string)
        .into_iter()
        .collect()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_call_or_an_array_of_them() {
        assert_eq!(parse_calls(r#"{"name":"x"}"#).expect("one").len(), 1);
        assert_eq!(
            parse_calls(r#"[{"name":"x"},{"name":"y"}]"#)
                .expect("two")
                .len(),
            2
        );
        assert!(parse_calls("").unwrap_err().starts_with("no tool call"));
        assert!(parse_calls("write x").unwrap_err().contains("not JSON"));
        assert!(parse_calls("3").unwrap_err().contains("number"));
    }

    #[test]
    fn the_seven_tools_of_memory_cli_are_listed_with_schemas() {
        let names: Vec<String> = list_tools()
            .iter()
            .map(|t| t["name"].as_str().expect("name").to_string())
            .collect();
        assert_eq!(
            names,
            [
                "memory_write",
                "memory_read",
                "memory_delete",
                "memory_list",
                "memory_search",
                "memory_smart_search",
                "memory_tag"
            ]
        );
        for tool in list_tools() {
            assert_eq!(tool["parameters"]["type"], "object", "{tool}");
        }
    }

    #[test]
    fn a_call_without_a_name_or_to_an_unknown_tool_is_a_failed_result() {
        let never = |_: Request| -> ops::Result<Response> { unreachable!("no request") };
        let out = run(&never, &json!({"params": {}}));
        assert_eq!(out["ok"], false);
        let out = run(&never, &json!({"name": "memory_fly"}));
        assert_eq!(out["ok"], false);
        assert!(
            out["error"]["message"]
                .as_str()
                .expect("message")
                .contains("memory_fly"),
            "{out}"
        );
    }
}
