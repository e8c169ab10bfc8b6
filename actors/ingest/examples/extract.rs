//! Sniffs and extracts the files named on the command line, printing kind, title,
//! sections, notes and text: `cargo run -p memvault-ingest --example extract -- FILE...`.

use memvault_ingest::{extract, sniff, Limits};

fn main() {
    for path in std::env::args().skip(1) {
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) => {
                eprintln!("{path}: {error}");
                continue;
            }
        };
        let kind = sniff(&bytes, Some(&path));
        println!("== {path}: {kind} ({})", kind.mime());
        match extract(kind, &bytes, &Limits::default()) {
            Ok(extracted) => {
                println!("title: {:?}", extracted.title);
                for section in &extracted.sections {
                    println!(
                        "section: {:?} {:?} {:?}",
                        section.location, section.title, section.range
                    );
                }
                for note in &extracted.notes {
                    println!("note: {note}");
                }
                println!("{}", extracted.text);
            }
            Err(error) => println!("error: {error}"),
        }
    }
}
