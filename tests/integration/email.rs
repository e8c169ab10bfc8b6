//! Mail-in: the drop address (random, hashed in the store, rotated at once), the sender
//! allowlist with the relay's authentication verdicts, and the handoff of real RFC 822
//! messages (plain, HTML-only, multipart/alternative, a text attachment, a forwarded
//! message) through the asynchronous ingest pipeline. Messages are hand-written as an MTA
//! delivers them (CRLF line ends, `Return-Path`, `Authentication-Results`).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::{
    expect_error, expect_status, memories_path, shared, start_in_process, tenant_on, unique,
    Client, TestServer,
};

const DOMAIN: &str = "in.memvault.test";
const SECRET: &str = "email-inbound-test-secret-4b1d";
const INBOUND: &str = "/v1/memory/email/inbound";
const ADDRESS: &str = "/v1/memory/email/address";
const SENDERS: &str = "/v1/memory/email/senders";
const BATCH_WAIT: Duration = Duration::from_secs(180);

fn server() -> &'static TestServer {
    static SERVER: OnceLock<TestServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        start_in_process(|config| {
            config.email.domain = DOMAIN.to_owned();
            config.email.inbound_secret = Some(SECRET.to_owned());
        })
    })
}

/// A fresh tenant on the mail-in server, its account email and its drop address.
struct Mailbox {
    client: Client,
    email: String,
    address: String,
    collection: String,
}

fn mailbox() -> Mailbox {
    let client = tenant_on(server());
    let me = expect_status(client.get("/v1/memory/admin/me"), 200);
    let email = me["email"].as_str().expect("email").to_owned();
    let drop = expect_status(client.get(ADDRESS), 200);
    Mailbox {
        address: drop["address"].as_str().expect("address").to_owned(),
        collection: drop["collection"].as_str().expect("collection").to_owned(),
        client,
        email,
    }
}

/// An MTA's passing verdict for `sender`'s domain.
fn passing(sender: &str) -> String {
    let domain = sender.rsplit_once('@').expect("address").1;
    format!("mx.{DOMAIN}; spf=pass smtp.mailfrom={sender}; dkim=pass header.d={domain}")
}

/// A message as the relay hands it over: trace headers (`auth`: the
/// Authentication-Results, none when `None`), the author's headers, then `rest` (more
/// headers, a blank line and the body).
fn message(sender: &str, to: &str, auth: Option<&str>, subject: &str, rest: &str) -> String {
    let mut raw = format!("Return-Path: <{sender}>\r\n");
    if let Some(auth) = auth {
        raw.push_str(&format!("Authentication-Results: {auth}\r\n"));
    }
    raw.push_str(&format!(
        "From: Sender <{sender}>\r\nTo: {to}\r\nSubject: {subject}\r\n\
         Date: Wed, 25 Nov 2026 09:30:00 +0000\r\nMessage-ID: <{}@mail.test>\r\n\
         MIME-Version: 1.0\r\n{rest}",
        unique("msg")
    ));
    raw
}

fn plain(sender: &str, to: &str, text: &str) -> String {
    message(
        sender,
        to,
        Some(&passing(sender)),
        "A note",
        &format!("Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"),
    )
}

fn hand_off(
    secret: Option<&str>,
    recipient: Option<&str>,
    raw: &[u8],
) -> reqwest::blocking::Response {
    hand_off_to(server(), secret, recipient, raw)
}

fn hand_off_to(
    target: &TestServer,
    secret: Option<&str>,
    recipient: Option<&str>,
    raw: &[u8],
) -> reqwest::blocking::Response {
    let client = Client::new(&target.base_url, None);
    let mut request = client
        .request(reqwest::Method::POST, INBOUND)
        .header("content-type", "message/rfc822")
        .body(raw.to_vec());
    if let Some(secret) = secret {
        request = request.header("X-Memvault-Inbound-Secret", secret);
    }
    if let Some(recipient) = recipient {
        request = request.header("X-Memvault-Recipient", recipient);
    }
    request.send().expect("hand off")
}

/// Hands the message off, expects 202, and waits for its batch to complete with nothing
/// failed; the batch.
#[track_caller]
fn deliver(mailbox: &Mailbox, raw: &str) -> Value {
    let answer = expect_status(hand_off(Some(SECRET), None, raw.as_bytes()), 202);
    assert_eq!(answer["accepted"], json!(true), "{answer}");
    assert_eq!(answer["collection"], json!(mailbox.collection), "{answer}");
    let batch_id = answer["batch_id"].as_str().expect("batch_id").to_owned();
    wait_for_batch(&mailbox.client, &batch_id)
}

#[track_caller]
fn wait_for_batch(client: &Client, batch_id: &str) -> Value {
    let deadline = Instant::now() + BATCH_WAIT;
    loop {
        let batch = expect_status(
            client.get(&format!("/v1/memory/ingest/batch/{batch_id}")),
            200,
        );
        if batch["complete"] == json!(true) {
            assert_eq!(batch["failed"], json!(0), "{batch:#}");
            return batch;
        }
        assert!(Instant::now() < deadline, "batch not complete: {batch:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Expects 200 `accepted: false` with this reason.
#[track_caller]
fn expect_dropped(response: reqwest::blocking::Response, reason: &str) {
    let answer = expect_status(response, 200);
    assert_eq!(answer, json!({"accepted": false, "reason": reason}));
}

/// Every memory of the collection (none when it does not exist).
fn memories(client: &Client, collection: &str) -> Vec<Value> {
    let response = client.get(&format!("{}?limit=200", memories_path(collection)));
    if response.status().as_u16() == 404 {
        return Vec::new();
    }
    expect_status(response, 200)
        .as_array()
        .expect("memories")
        .clone()
}

fn holding<'a>(memories: &'a [Value], phrase: &str) -> Vec<&'a Value> {
    memories
        .iter()
        .filter(|memory| memory["text"].as_str().unwrap_or_default().contains(phrase))
        .collect()
}

fn text_search(client: &Client, collection: &str, query: &str) -> Vec<String> {
    let body = expect_status(
        client.post(
            &format!("/v1/memory/collections/{collection}/search"),
            &json!({"query": query, "mode": "text", "limit": 20}),
        ),
        200,
    );
    body["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|result| result["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn word() -> String {
    unique("mvmail").replace('-', "")
}

#[test]
fn the_address_is_random_at_the_domain_stable_and_hashed_at_rest() {
    let mailbox = mailbox();
    let (local, domain) = mailbox.address.rsplit_once('@').expect("an address");
    assert_eq!(domain, DOMAIN);
    assert!(
        local.starts_with("mv-") && local.len() == 29 && local.len() <= 64,
        "{local}"
    );
    assert!(
        local[3..]
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()),
        "{local}"
    );
    assert_eq!(mailbox.collection, "email");
    let again = expect_status(mailbox.client.get(ADDRESS), 200);
    assert_eq!(again["address"], json!(mailbox.address));
    let other = mailbox_address(&tenant_on(server()));
    assert_ne!(other, mailbox.address);
    // The store holds only the local part's hash and a sealed copy: a dump of the
    // database does not list the live address.
    let dump = store_bytes(server());
    assert!(
        !contains(&dump, local.as_bytes()),
        "the local part is stored in clear"
    );
}

fn mailbox_address(client: &Client) -> String {
    expect_status(client.get(ADDRESS), 200)["address"]
        .as_str()
        .expect("address")
        .to_owned()
}

fn store_bytes(target: &TestServer) -> Vec<u8> {
    let mut bytes = Vec::new();
    for entry in walk(target.data_dir()) {
        if let Ok(content) = std::fs::read(&entry) {
            bytes.extend(content);
        }
    }
    bytes
}

fn walk(directory: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(directory).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

#[test]
fn rotation_kills_the_old_address_at_once_and_keeps_domain_and_collection() {
    let mailbox = mailbox();
    let before = word();
    deliver(
        &mailbox,
        &plain(
            &mailbox.email,
            &mailbox.address,
            &format!("{before} came first."),
        ),
    );
    let rotated = expect_status(
        mailbox
            .client
            .post("/v1/memory/email/address/rotate", &json!({})),
        200,
    );
    let new_address = rotated["address"].as_str().expect("address").to_owned();
    assert_ne!(new_address, mailbox.address);
    assert!(
        new_address.ends_with(&format!("@{DOMAIN}")),
        "{new_address}"
    );
    assert_eq!(rotated["collection"], json!(mailbox.collection));
    assert_eq!(mailbox_address(&mailbox.client), new_address);
    let late = word();
    expect_dropped(
        hand_off(
            Some(SECRET),
            None,
            plain(
                &mailbox.email,
                &mailbox.address,
                &format!("{late} is late."),
            )
            .as_bytes(),
        ),
        "unknown_recipient",
    );
    let after = word();
    deliver(
        &mailbox,
        &plain(
            &mailbox.email,
            &new_address,
            &format!("{after} came after."),
        ),
    );
    let stored = memories(&mailbox.client, &mailbox.collection);
    assert_eq!(holding(&stored, &before).len(), 1);
    assert_eq!(holding(&stored, &after).len(), 1);
    assert!(holding(&stored, &late).is_empty());
    // The tenant's audit log has the rotation (by its owner) and both accepted mails.
    let tenant_id = expect_status(mailbox.client.get("/v1/memory/admin/me"), 200)["id"]
        .as_str()
        .expect("tenant id")
        .to_owned();
    let admin = Client::new(&server().base_url, Some(&server().admin_key));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = expect_status(
            admin.get(&format!("/v1/memory/admin/audit?tenant_id={tenant_id}")),
            200,
        );
        let actions: Vec<(String, String)> = log["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|entry| {
                (
                    entry["action"].as_str().unwrap_or_default().to_owned(),
                    entry["agent_id"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let inbound = actions
            .iter()
            .filter(|(action, agent)| action == "email.inbound" && agent == "email-in")
            .count();
        let rotated = actions
            .iter()
            .any(|(action, agent)| action == "email.address.rotate" && agent.starts_with("key_"));
        if inbound == 2 && rotated {
            break;
        }
        assert!(Instant::now() < deadline, "audit log: {actions:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_plain_text_mail_becomes_a_searchable_memory_with_its_metadata() {
    let mailbox = mailbox();
    let marker = word();
    let raw = plain(
        &mailbox.email,
        &mailbox.address,
        &format!("Hello,\r\n\r\n{marker} the harbour master moved the regatta to Saturday.\r\n"),
    );
    let started = Instant::now();
    deliver(&mailbox, &raw);
    let searchable = loop {
        if text_search(&mailbox.client, &mailbox.collection, &marker)
            .iter()
            .any(|text| text.contains(&marker))
        {
            break started.elapsed();
        }
        assert!(started.elapsed() < BATCH_WAIT, "never searchable");
        std::thread::sleep(Duration::from_millis(20));
    };
    println!(
        "mail-in: handoff to searchable in {} ms",
        searchable.as_millis()
    );
    let stored = memories(&mailbox.client, &mailbox.collection);
    let found = holding(&stored, &marker);
    assert_eq!(found.len(), 1, "{stored:#?}");
    let memory = found[0];
    assert_eq!(memory["source"], json!("email"));
    assert_eq!(memory["metadata"]["subject"], json!("A note"));
    assert_eq!(
        memory["metadata"]["from"],
        json!(format!("Sender <{}>", mailbox.email))
    );
    assert!(memory["metadata"]["message_id"]
        .as_str()
        .is_some_and(|id| id.ends_with("@mail.test") && !id.starts_with('<')));
    assert!(memory["metadata"]["date"]
        .as_str()
        .is_some_and(|date| date.starts_with("2026-11-25")));
    assert_eq!(memory["metadata"]["filename"], json!("message.txt"));
    let text = memory["text"].as_str().unwrap_or_default();
    assert!(text.contains("Subject: A note"), "{text}");
}

#[test]
fn html_only_alternative_attachments_and_forwards_each_become_memories() {
    let mailbox = mailbox();
    let sender = mailbox.email.clone();
    let auth = passing(&sender);
    let (html_word, alt_word, body_word, attached_word, outer_word, inner_word) =
        (word(), word(), word(), word(), word(), word());
    let html_only = message(
        &sender,
        &mailbox.address,
        Some(&auth),
        "Kayaks",
        &format!(
            "Content-Type: text/html; charset=utf-8\r\n\r\n<html><head><style>p {{}}</style></head>\
             <body><p>Quartermaster <b>{html_word}</b> counted seventeen kayaks.</p></body></html>\r\n"
        ),
    );
    let alternative = message(
        &sender,
        &mailbox.address,
        Some(&auth),
        "Greenhouse",
        &format!(
            "Content-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n--alt\r\n\
             Content-Type: text/plain; charset=utf-8\r\n\r\n{alt_word} the thermostat is at nineteen.\r\n\
             --alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n\
             <p>{alt_word} the thermostat is at nineteen.</p>\r\n--alt--\r\n"
        ),
    );
    let attachment = message(
        &sender,
        &mailbox.address,
        Some(&auth),
        "Minutes attached",
        &format!(
            "Content-Type: multipart/mixed; boundary=\"mix\"\r\n\r\n--mix\r\n\
             Content-Type: text/plain; charset=utf-8\r\n\r\n{body_word} the minutes are attached.\r\n\
             --mix\r\nContent-Type: text/plain; charset=utf-8\r\n\
             Content-Disposition: attachment; filename=\"minutes.txt\"\r\n\
             Content-Transfer-Encoding: base64\r\n\r\n{}\r\n--mix--\r\n",
            base64_lines(&format!("Minutes\n\n{attached_word} the committee approved the bicycle racks.\n"))
        ),
    );
    let forward = message(
        &sender,
        &mailbox.address,
        Some(&auth),
        "Fwd: Orchard lease",
        &format!(
            "Content-Type: multipart/mixed; boundary=\"fwd\"\r\n\r\n--fwd\r\n\
             Content-Type: text/plain; charset=utf-8\r\n\r\n{outer_word} forwarding this.\r\n\
             --fwd\r\nContent-Type: message/rfc822\r\nContent-Disposition: attachment\r\n\r\n\
             From: Original Author <original@elsewhere.test>\r\nTo: someone@example.org\r\n\
             Subject: Orchard lease\r\nMessage-ID: <inner@elsewhere.test>\r\n\r\n\
             {inner_word} the orchard lease runs until the end of March.\r\n--fwd--\r\n"
        ),
    );
    for raw in [&html_only, &alternative, &attachment, &forward] {
        deliver(&mailbox, raw);
    }
    let stored = memories(&mailbox.client, &mailbox.collection);
    let html = holding(&stored, &html_word);
    assert_eq!(html.len(), 1, "{stored:#?}");
    let html_text = html[0]["text"]
        .as_str()
        .unwrap_or_default()
        .replace(['*', '_'], "");
    assert!(
        html_text.contains(&format!(
            "Quartermaster {html_word} counted seventeen kayaks"
        )),
        "{html_text}"
    );
    assert!(
        !html_text.contains("<p>") && !html_text.contains("color"),
        "{html_text}"
    );
    assert_eq!(
        holding(&stored, &alt_word).len(),
        1,
        "the plain alternative alone, not both: {stored:#?}"
    );
    assert_eq!(holding(&stored, &body_word).len(), 1);
    let attached = holding(&stored, &attached_word);
    assert_eq!(attached.len(), 1, "{stored:#?}");
    assert_eq!(attached[0]["metadata"]["filename"], json!("minutes.txt"));
    assert_eq!(attached[0]["source"], json!("email"));
    assert_eq!(
        attached[0]["metadata"]["subject"],
        json!("Minutes attached")
    );
    assert_eq!(
        attached[0]["images"].as_array().map(Vec::len),
        Some(1),
        "the file stays downloadable"
    );
    assert!(
        !attached[0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains(&body_word),
        "the attachment is its own memory"
    );
    assert_eq!(holding(&stored, &outer_word).len(), 1);
    let inner = holding(&stored, &inner_word);
    assert_eq!(inner.len(), 1, "{stored:#?}");
    assert_eq!(inner[0]["metadata"]["filename"], json!("Orchard lease.eml"));
    for phrase in [&html_word, &attached_word, &inner_word] {
        assert!(
            text_search(&mailbox.client, &mailbox.collection, phrase)
                .iter()
                .any(|text| text.contains(phrase.as_str())),
            "{phrase} is not found by a search"
        );
    }
}

fn base64_lines(text: &str) -> String {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    encoded
        .as_bytes()
        .chunks(76)
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect::<Vec<_>>()
        .join("\r\n")
}

#[test]
fn the_allowlist_defaults_to_the_account_email_and_needs_an_authenticated_sender() {
    let mailbox = mailbox();
    let senders = expect_status(mailbox.client.get(SENDERS), 200);
    assert_eq!(senders, json!({"senders": [mailbox.email.to_lowercase()]}));
    let friend = format!("{}@partner.example", unique("friend"));
    let stranger = format!("{}@elsewhere.example", unique("stranger"));
    let refused = word();
    expect_dropped(
        hand_off(
            Some(SECRET),
            None,
            plain(&friend, &mailbox.address, &refused).as_bytes(),
        ),
        "sender_not_allowed",
    );
    let answer = expect_status(
        mailbox.client.put(
            SENDERS,
            &json!({"senders": [mailbox.email.to_uppercase(), "@Partner.example"]}),
        ),
        200,
    );
    assert_eq!(
        answer,
        json!({"senders": [mailbox.email.to_lowercase(), "@partner.example"]})
    );
    assert_eq!(expect_status(mailbox.client.get(SENDERS), 200), answer);
    // On the list, but From is all there is: no verdict of the relay vouches for it.
    let unauthenticated = word();
    let forged = message(
        &friend,
        &mailbox.address,
        None,
        "Forged",
        &format!("Content-Type: text/plain\r\n\r\n{unauthenticated}\r\n"),
    );
    expect_dropped(
        hand_off(Some(SECRET), None, forged.as_bytes()),
        "sender_not_authenticated",
    );
    // A verdict for another domain vouches for nothing.
    let misaligned = message(
        &friend,
        &mailbox.address,
        Some(
            "mx.test; dkim=pass header.d=evil.example; spf=pass smtp.mailfrom=bounce@evil.example",
        ),
        "Misaligned",
        &format!("Content-Type: text/plain\r\n\r\n{unauthenticated}\r\n"),
    );
    expect_dropped(
        hand_off(Some(SECRET), None, misaligned.as_bytes()),
        "sender_not_authenticated",
    );
    let accepted = word();
    deliver(
        &mailbox,
        &plain(
            &friend,
            &mailbox.address,
            &format!("{accepted} from a partner."),
        ),
    );
    expect_dropped(
        hand_off(
            Some(SECRET),
            None,
            plain(&stranger, &mailbox.address, &refused).as_bytes(),
        ),
        "sender_not_allowed",
    );
    let stored = memories(&mailbox.client, &mailbox.collection);
    assert_eq!(holding(&stored, &accepted).len(), 1);
    assert!(holding(&stored, &refused).is_empty());
    assert!(holding(&stored, &unauthenticated).is_empty());
    for body in [
        json!({"senders": "friend@example.org"}),
        json!({"senders": [5]}),
        json!({"senders": ["not an address"]}),
        json!({"senders": ["a@localhost"]}),
        json!({"senders": vec!["a@example.org"; 101]}),
        json!({"other": []}),
    ] {
        expect_error(mailbox.client.put(SENDERS, &body), 422);
    }
    assert_eq!(expect_status(mailbox.client.get(SENDERS), 200), answer);
}

#[test]
fn the_same_message_id_is_stored_once() {
    let mailbox = self::mailbox();
    let marker = word();
    let raw = plain(
        &mailbox.email,
        &mailbox.address,
        &format!("{marker} arrives twice."),
    );
    deliver(&mailbox, &raw);
    expect_dropped(hand_off(Some(SECRET), None, raw.as_bytes()), "duplicate");
    // Another tenant may receive a message with the same id (a copy to both).
    let other = self::mailbox();
    let for_other = raw
        .replace(&mailbox.address, &other.address)
        .replace(&mailbox.email, &other.email);
    deliver(&other, &for_other);
    assert_eq!(
        holding(&memories(&mailbox.client, &mailbox.collection), &marker).len(),
        1
    );
    assert_eq!(
        holding(&memories(&other.client, &other.collection), &marker).len(),
        1
    );
}

#[test]
fn the_relay_needs_the_secret_and_a_server_without_one_refuses_with_503() {
    let mailbox = mailbox();
    let marker = word();
    let raw = plain(
        &mailbox.email,
        &mailbox.address,
        &format!("{marker} without the secret."),
    );
    for secret in [
        None,
        Some(""),
        Some("wrong"),
        Some(&SECRET[..SECRET.len() - 1]),
    ] {
        let detail = expect_error(hand_off(secret, None, raw.as_bytes()), 401);
        assert!(detail.contains("X-Memvault-Inbound-Secret"), "{detail}");
    }
    // A tenant key is no substitute.
    let response = mailbox
        .client
        .request(reqwest::Method::POST, INBOUND)
        .header("content-type", "message/rfc822")
        .body(raw.clone())
        .send()
        .expect("send");
    expect_error(response, 401);
    // The shared server has no inbound secret: mail-in is off there.
    let off = hand_off_to(shared(), Some(SECRET), None, raw.as_bytes());
    assert!(expect_error(off, 503).contains("email.inbound_secret"));
    std::thread::sleep(Duration::from_millis(500));
    assert!(holding(&memories(&mailbox.client, &mailbox.collection), &marker).is_empty());
    // With the secret the same message is taken: the 401s were the secret's.
    deliver(&mailbox, &raw);
}

#[test]
fn bodies_that_are_no_message_or_too_large_are_refused_with_4xx() {
    expect_error(
        hand_off(
            Some(SECRET),
            None,
            b"\x00\xff this is not an RFC 822 message \x00",
        ),
        422,
    );
    expect_error(hand_off(Some(SECRET), None, b""), 422);
    let huge = vec![b'a'; 25 * 1024 * 1024 + 1];
    expect_error(hand_off(Some(SECRET), None, &huge), 413);
    // A message for nobody, and one for a drop address with nothing to store.
    let mailbox = mailbox();
    expect_dropped(
        hand_off(
            Some(SECRET),
            None,
            plain(&mailbox.email, "nobody@example.org", "for nobody").as_bytes(),
        ),
        "unknown_recipient",
    );
    let empty = message(
        &mailbox.email,
        &mailbox.address,
        Some(&passing(&mailbox.email)),
        "Empty",
        "Content-Type: text/plain\r\n\r\n   \r\n",
    );
    expect_dropped(
        hand_off(Some(SECRET), None, empty.as_bytes()),
        "empty_message",
    );
}

#[test]
fn the_envelope_recipient_wins_and_delivered_to_and_cc_are_read() {
    let first = mailbox();
    let second = mailbox();
    // To names the first tenant, the relay's envelope the second: the envelope wins.
    let marker = word();
    let raw = plain(
        &second.email,
        &first.address,
        &format!("{marker} follows the envelope."),
    );
    let answer = expect_status(
        hand_off(Some(SECRET), Some(&second.address), raw.as_bytes()),
        202,
    );
    wait_for_batch(&second.client, answer["batch_id"].as_str().expect("batch"));
    assert_eq!(
        holding(&memories(&second.client, &second.collection), &marker).len(),
        1
    );
    assert!(holding(&memories(&first.client, &first.collection), &marker).is_empty());
    // Cc, and Delivered-To in capitals with a +tag.
    let cc_word = word();
    let cc = message(
        &first.email,
        "team@lists.example",
        Some(&passing(&first.email)),
        "Via Cc",
        &format!(
            "Cc: Drop <{}>\r\nContent-Type: text/plain\r\n\r\n{cc_word}\r\n",
            first.address
        ),
    );
    deliver(&first, &cc);
    let tagged_word = word();
    let (local, domain) = first.address.rsplit_once('@').expect("address");
    let tagged = format!(
        "Delivered-To: {}+receipts@{}\r\n{}",
        local.to_uppercase(),
        domain.to_uppercase(),
        plain(&first.email, "team@lists.example", &tagged_word)
    );
    deliver(&first, &tagged);
    let stored = memories(&first.client, &first.collection);
    assert_eq!(holding(&stored, &cc_word).len(), 1);
    assert_eq!(holding(&stored, &tagged_word).len(), 1);
}

#[test]
fn the_owner_sets_the_target_collection_and_other_keys_may_not_change_anything() {
    let mailbox = mailbox();
    let reader = key(&mailbox.client, true);
    let agent = key(&mailbox.client, false);
    for client in [&reader, &agent] {
        expect_error(
            client.post("/v1/memory/email/address/rotate", &json!({})),
            403,
        );
        expect_error(
            client.put(SENDERS, &json!({"senders": ["intruder@evil.example"]})),
            403,
        );
        expect_error(client.put(ADDRESS, &json!({"collection": "hijacked"})), 403);
        // Reading is allowed.
        assert_eq!(mailbox_address(client), mailbox.address);
        expect_status(client.get(SENDERS), 200);
    }
    assert_eq!(mailbox_address(&mailbox.client), mailbox.address);
    assert_eq!(
        expect_status(mailbox.client.get(SENDERS), 200),
        json!({"senders": [mailbox.email.to_lowercase()]})
    );
    for bad in [
        json!({"collection": "bad name!"}),
        json!({"collection": ""}),
        json!({}),
    ] {
        expect_error(mailbox.client.put(ADDRESS, &bad), 422);
    }
    let moved = expect_status(
        mailbox.client.put(ADDRESS, &json!({"collection": "inbox"})),
        200,
    );
    assert_eq!(
        moved,
        json!({"address": mailbox.address, "collection": "inbox"})
    );
    let marker = word();
    let answer = expect_status(
        hand_off(
            Some(SECRET),
            None,
            plain(
                &mailbox.email,
                &mailbox.address,
                &format!("{marker} goes to the inbox."),
            )
            .as_bytes(),
        ),
        202,
    );
    assert_eq!(answer["collection"], json!("inbox"));
    wait_for_batch(&mailbox.client, answer["batch_id"].as_str().expect("batch"));
    assert_eq!(
        holding(&memories(&mailbox.client, "inbox"), &marker).len(),
        1
    );
    assert!(holding(&memories(&mailbox.client, "email"), &marker).is_empty());
}

fn key(owner: &Client, read_only: bool) -> Client {
    let created = expect_status(
        owner.post(
            "/v1/memory/keys",
            &json!({"label": unique("mail-key"), "read_only": read_only}),
        ),
        201,
    );
    Client::new(&server().base_url, created["key"].as_str())
}

#[test]
fn tenants_never_see_each_others_mail_or_batches() {
    let first = mailbox();
    let second = mailbox();
    let marker = word();
    let batch = deliver(
        &second,
        &plain(
            &second.email,
            &second.address,
            &format!("{marker} is private."),
        ),
    );
    let batch_id = batch["batch_id"].as_str().expect("batch id");
    let response = first
        .client
        .get(&format!("/v1/memory/ingest/batch/{batch_id}"));
    assert_eq!(response.status().as_u16(), 404);
    assert!(holding(&memories(&first.client, &first.collection), &marker).is_empty());
    let everywhere = expect_status(
        first.client.post(
            "/v1/memory/search",
            &json!({"query": marker, "mode": "text", "limit": 20}),
        ),
        200,
    );
    assert!(
        !everywhere["results"].to_string().contains(&marker),
        "a tenant-wide search of the first tenant finds the second's mail: {everywhere}"
    );
    // Mail from the second tenant's account email to the first's address is not allowed.
    expect_dropped(
        hand_off(
            Some(SECRET),
            None,
            plain(&second.email, &first.address, &marker).as_bytes(),
        ),
        "sender_not_allowed",
    );
}
