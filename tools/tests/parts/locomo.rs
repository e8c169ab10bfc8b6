use memvault_tools::eval::locomo::*;

#[test]
fn malformed_evidence_is_normalised() {
    assert_eq!(evidence_turn_ids("D1:3"), ["D1:3"]);
    assert_eq!(evidence_turn_ids("D8:6; D9:17"), ["D8:6", "D9:17"]);
    assert_eq!(
        evidence_turn_ids("D9:1 D4:4 D4:6"),
        ["D9:1", "D4:4", "D4:6"]
    );
    assert_eq!(evidence_turn_ids("D:11:26"), ["D11:26"]);
    assert_eq!(evidence_turn_ids("D30:05"), ["D30:5"]);
    assert!(evidence_turn_ids("D").is_empty());
    assert!(evidence_turn_ids("").is_empty());
    assert!(evidence_turn_ids("D1:x").is_empty());
}

#[test]
fn a_conversation_becomes_turns_and_judged_questions() {
    let sample: Sample = serde_json::from_value(serde_json::json!({
        "sample_id": "conv 7",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_10": [{"speaker": "Bo", "dia_id": "D10:1", "text": "Late."}],
            "session_2_date_time": "1 May",
            "session_2": [
                {"speaker": "Ann", "dia_id": "D2:1", "text": "Hi."},
                {"speaker": "Bo", "dia_id": "D2:2", "text": "I adopted a cat.", "img_url": []}
            ]
        },
        "qa": [
            {"question": "What did Bo adopt?", "answer": "a cat", "evidence": ["D2:2"], "category": 1},
            {"question": "Both?", "evidence": ["D2:1; D10:1", "D99:1"], "category": 2},
            {"question": "Only missing turns?", "evidence": ["D99:1"], "category": 2},
            {"question": "What did Ann adopt?", "evidence": ["D2:2"], "category": 5}
        ]
    }))
    .unwrap();
    let collection = conversation(sample).unwrap();
    assert_eq!(collection.name, "locomo-conv-7");
    let texts: Vec<&str> = collection
        .documents
        .iter()
        .map(|d| d.text.as_str())
        .collect();
    assert_eq!(texts, ["Ann: Hi.", "Bo: I adopted a cat.", "Bo: Late."]);
    assert_eq!(
        collection.queries.len(),
        2,
        "category 5 and evidence-less are left out"
    );
    let both = &collection.queries[1].judged;
    assert_eq!(both.len(), 2);
    assert!(both.contains_key("D2:1") && both.contains_key("D10:1"));
}
