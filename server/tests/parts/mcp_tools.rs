use memvault_server::api::mcp::tools::*;

#[test]
fn every_tool_has_standalone_object_schemas_and_annotations() {
    let tools = definitions();
    assert_eq!(tools.len(), 10);
    for tool in &tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{tool}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
        assert!(tool["annotations"]["readOnlyHint"].is_boolean(), "{tool}");
        let text = tool.to_string();
        assert!(!text.contains("$ref"), "a reference left in {text}");
        assert!(!text.contains("allOf"), "an allOf left in {text}");
    }
}
