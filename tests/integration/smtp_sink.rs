//! A real SMTP server for the tests: it speaks enough of RFC 5321 for lettre (EHLO/HELO,
//! MAIL, RCPT, DATA with dot-unstuffing, RSET, NOOP, QUIT) and keeps every message it
//! accepts. It can answer the first RCPTs with a temporary failure (451), to show that
//! mail is retried.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One accepted message.
#[derive(Debug, Clone)]
pub struct SunkMail {
    pub rcpt_to: Vec<String>,
    /// The raw message as received (after dot-unstuffing).
    pub raw: Vec<u8>,
}

impl SunkMail {
    /// The decoded plain-text body.
    pub fn text(&self) -> String {
        mail_parser::MessageParser::default()
            .parse(&self.raw[..])
            .and_then(|message| message.body_text(0).map(|text| text.into_owned()))
            .unwrap_or_default()
    }

    pub fn subject(&self) -> String {
        mail_parser::MessageParser::default()
            .parse(&self.raw[..])
            .and_then(|message| message.subject().map(str::to_owned))
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct Shared {
    mails: Mutex<Vec<SunkMail>>,
    /// RCPT commands still to refuse with 451.
    refuse_next: AtomicUsize,
    /// RCPT commands refused so far.
    refused: AtomicUsize,
}

pub struct SmtpSink {
    pub address: SocketAddr,
    shared: Arc<Shared>,
}

impl SmtpSink {
    /// A sink that accepts everything.
    pub fn start() -> Self {
        Self::refusing_first(0)
    }

    /// A sink that answers the first `count` RCPT commands with 451 (try again later).
    pub fn refusing_first(count: usize) -> Self {
        let shared = Arc::new(Shared {
            refuse_next: AtomicUsize::new(count),
            ..Shared::default()
        });
        let (sender, receiver) = mpsc::channel();
        let serving = shared.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the SMTP sink");
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
                sender
                    .send(listener.local_addr().expect("its address"))
                    .ok();
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    tokio::spawn(session(stream, serving.clone()));
                }
            });
        });
        let address = receiver
            .recv_timeout(Duration::from_secs(10))
            .expect("the SMTP sink did not start");
        Self { address, shared }
    }

    pub fn url(&self) -> String {
        format!("smtp://{}", self.address)
    }

    pub fn mails(&self) -> Vec<SunkMail> {
        self.shared.mails.lock().unwrap().clone()
    }

    pub fn refused(&self) -> usize {
        self.shared.refused.load(Ordering::SeqCst)
    }

    /// The mails to `to`.
    pub fn mails_to(&self, to: &str) -> Vec<SunkMail> {
        self.mails()
            .into_iter()
            .filter(|mail| {
                mail.rcpt_to
                    .iter()
                    .any(|rcpt| rcpt.eq_ignore_ascii_case(to))
            })
            .collect()
    }

    /// Waits until `count` mails to `to` have arrived; returns them.
    pub fn wait_for(&self, to: &str, count: usize) -> Vec<SunkMail> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mails = self.mails_to(to);
            if mails.len() >= count {
                return mails;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {count} mails to {to} arrived in 30 s",
                mails.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

async fn session(stream: TcpStream, shared: Arc<Shared>) {
    let (reader, mut writer) = stream.into_split();
    let mut lines = BufReader::new(reader);
    let mut rcpt_to = Vec::new();
    if writer.write_all(b"220 sink ESMTP\r\n").await.is_err() {
        return;
    }
    let mut line = String::new();
    loop {
        line.clear();
        match lines.read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let command = line.trim_end().to_owned();
        let verb = command
            .split([' ', ':'])
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        let answer: &[u8] = match verb.as_str() {
            "EHLO" => b"250-sink\r\n250 8BITMIME\r\n",
            "HELO" | "NOOP" => b"250 ok\r\n",
            "RSET" | "MAIL" => {
                rcpt_to.clear();
                b"250 ok\r\n"
            }
            "RCPT" => {
                let refuse = shared
                    .refuse_next
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                        left.checked_sub(1)
                    })
                    .is_ok();
                if refuse {
                    shared.refused.fetch_add(1, Ordering::SeqCst);
                    b"451 4.3.0 try again later\r\n"
                } else {
                    let address = command
                        .split_once(':')
                        .map(|(_, rest)| rest.trim().trim_start_matches('<'))
                        .and_then(|rest| rest.split('>').next())
                        .unwrap_or_default()
                        .to_owned();
                    rcpt_to.push(address);
                    b"250 ok\r\n"
                }
            }
            "DATA" => {
                if writer.write_all(b"354 go ahead\r\n").await.is_err() {
                    return;
                }
                let mut raw = Vec::new();
                loop {
                    line.clear();
                    match lines.read_line(&mut line).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    if line == ".\r\n" || line == ".\n" {
                        break;
                    }
                    let unstuffed = line.strip_prefix('.').unwrap_or(&line);
                    raw.extend_from_slice(unstuffed.as_bytes());
                }
                shared.mails.lock().unwrap().push(SunkMail {
                    rcpt_to: std::mem::take(&mut rcpt_to),
                    raw,
                });
                b"250 queued\r\n"
            }
            "QUIT" => {
                let _ = writer.write_all(b"221 bye\r\n").await;
                return;
            }
            _ => b"502 not implemented\r\n",
        };
        if writer.write_all(answer).await.is_err() {
            return;
        }
    }
}
