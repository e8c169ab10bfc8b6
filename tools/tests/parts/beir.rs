use memvault_tools::eval::beir::*;

#[test]
fn qrels_skip_the_header_and_keep_grades() {
    let qrels = parse_qrels("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td1\t1\n");
    assert_eq!(qrels.len(), 2);
    assert_eq!(qrels["q1"]["d1"], 2);
    assert_eq!(qrels["q1"]["d2"], 0);
    assert_eq!(qrels["q2"]["d1"], 1);
}
