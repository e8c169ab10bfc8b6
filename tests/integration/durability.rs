//! Crash safety: every acknowledged write survives SIGKILL.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{expect_status, memories_path, temp_data_dir, ServerProcess};

const KEY: &str = "mv_durability_admin_key_0123456789";

#[test]
fn acknowledged_writes_survive_sigkill_during_concurrent_writes() {
    let (_guard, data_dir) = temp_data_dir();
    let mut server =
        ServerProcess::start(&data_dir, &[("MEMVAULT_BOOTSTRAP_KEY", KEY)]).expect("server starts");
    let acknowledged: Arc<Mutex<Vec<(String, String, String)>>> = Arc::default();
    let stop_at = Instant::now() + Duration::from_secs(30);
    let writers: Vec<_> = (0..6)
        .map(|worker| {
            let client = server.client(KEY);
            let acknowledged = acknowledged.clone();
            std::thread::spawn(move || {
                let collection = format!("crash-{}", worker % 3);
                for index in 0.. {
                    if Instant::now() > stop_at {
                        break;
                    }
                    let text = format!("worker {worker} write {index}");
                    let outcome = if index % 4 == 0 {
                        let items: Vec<_> = (0..5)
                            .map(|item| json!({"text": format!("{text} item {item}")}))
                            .collect();
                        client
                            .request(
                                reqwest::Method::POST,
                                &format!("{}/bulk", memories_path(&collection)),
                            )
                            .json(&json!(items))
                            .send()
                    } else {
                        client
                            .request(reqwest::Method::POST, &memories_path(&collection))
                            .json(&json!({"text": text}))
                            .send()
                    };
                    // After the kill requests fail: the writer stops there.
                    let Ok(response) = outcome else { break };
                    if response.status().as_u16() != 201 {
                        break;
                    }
                    let Ok(body) = response.json::<serde_json::Value>() else {
                        break;
                    };
                    let created: Vec<serde_json::Value> = match body.get("memories") {
                        Some(memories) => memories.as_array().cloned().unwrap_or_default(),
                        None => vec![body],
                    };
                    let mut acknowledged = acknowledged.lock().unwrap();
                    for memory in created {
                        acknowledged.push((
                            collection.clone(),
                            memory["id"].as_str().unwrap().to_owned(),
                            memory["text"].as_str().unwrap().to_owned(),
                        ));
                    }
                }
            })
        })
        .collect();
    // Let the writers get going, then kill the server mid-stream.
    let deadline = Instant::now() + Duration::from_secs(20);
    while acknowledged.lock().unwrap().len() < 200 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    server.kill_hard();
    for writer in writers {
        writer.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() >= 50,
        "too few writes before the kill: {}",
        acknowledged.len()
    );

    let restarted =
        ServerProcess::start(&data_dir, &[]).expect("server restarts on the same data dir");
    assert!(
        !restarted
            .stdout_lines
            .iter()
            .any(|line| line.contains("mv_")),
        "a restart must not print a key"
    );
    let client = restarted.client(KEY);
    for (collection, id, text) in &acknowledged {
        let memory = expect_status(
            client.get(&format!("{}/{id}", memories_path(collection))),
            200,
        );
        assert_eq!(memory["text"].as_str().unwrap(), text);
    }
    println!(
        "{} acknowledged memories intact after SIGKILL",
        acknowledged.len()
    );
}
